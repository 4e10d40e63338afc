package postgres

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// syncRun is three instances on one server, each recording n events of
// its own at once into namespace ns (one Record each, as the capture paths do) while
// following the others as the engine does (woken by Notify, else every
// 2 s, a Snapshot each time). It returns the instances and, for each
// event and each other instance, the time from its Record's return to
// the other seeing it (0 when seen before the return).
func syncRun(t testing.TB, dsn, ns string, n int, dirs func() string) ([]usage.Store, []time.Duration) {
	ctx := context.Background()
	const k = 3
	opts := usage.Options{PerTool: -1, PerAgentTool: -1, Total: -1, Namespace: ns}
	stores := make([]usage.Store, k)
	for i := range stores {
		o := opts
		o.LocalDir = dirs()
		s, _, err := usage.Open(ctx, dsn, o)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	key := func(i, j int) string { return fmt.Sprintf("instance %d event %d", i, j) }
	var mu sync.Mutex
	recorded := map[string]time.Time{}
	seen := make([]map[string]time.Time, k)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i, s := range stores {
		seen[i] = map[string]time.Time{}
		wg.Add(1)
		go func() { // the follower
			defer wg.Done()
			poll := time.NewTicker(2 * time.Second)
			defer poll.Stop()
			wake := s.(usage.Notifier).Notify()
			for {
				es, _, err := s.Snapshot(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				now := time.Now()
				for _, e := range es {
					if _, ok := seen[i][e.Text]; !ok {
						seen[i][e.Text] = now
					}
				}
				if len(seen[i]) >= k*n {
					return
				}
				select {
				case <-done:
					return
				case <-wake:
				case <-poll.C:
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for i, s := range stores {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for j := 0; j < n; j++ {
				ev := usage.Event{Request: key(i, j), Tool: fmt.Sprintf("tool%d", j%7), Agent: fmt.Sprintf("agent%d", i), OK: true,
					ID: fmt.Sprintf("%d-%d", i, j)}
				if err := s.Record(ctx, ev); err != nil {
					t.Error(err)
					return
				}
				now := time.Now()
				mu.Lock()
				recorded[ev.Request] = now
				mu.Unlock()
			}
		}()
	}
	writers.Wait()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		close(done)
		<-finished
		t.Fatalf("the instances saw %d, %d and %d of %d events within 2 minutes", len(seen[0]), len(seen[1]), len(seen[2]), k*n)
	}
	var lags []time.Duration
	for i := range stores {
		for req, at := range recorded {
			var w int
			fmt.Sscanf(req, "instance %d", &w)
			if w == i {
				continue
			}
			lags = append(lags, max(seen[i][req].Sub(at), 0))
		}
	}
	sort.Slice(lags, func(a, b int) bool { return lags[a] < lags[b] })
	return stores, lags
}

// quantile is the q-quantile of sorted ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// Three instances on one server record 2,000 events each at once: every
// event is there exactly once, and each reaches the other instances
// within 2 s (p99; LISTEN/NOTIFY wakes them).
func TestThreeInstances(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	n := 2000
	if testing.Short() {
		n = 300
	}
	stores, lags := syncRun(t, dsn, "", n, t.TempDir)
	for _, s := range stores {
		defer s.Close()
	}
	p50, p99 := quantile(lags, 0.5), quantile(lags, 0.99)
	t.Logf("%d events seen by the other instances: lag p50 %v, p99 %v, max %v", len(lags), p50, p99, quantile(lags, 1))
	if p99 > 2*time.Second {
		t.Errorf("lag p99 %v: more than 2 s", p99)
	}
	// Retried events change nothing.
	retry := []usage.Event{{Request: "instance 0 event 0", Tool: "tool0", Agent: "agent0", OK: true, ID: "0-0"},
		{Request: "instance 2 event 5", Tool: "tool5", Agent: "agent2", OK: true, ID: "2-5"}}
	if err := stores[1].Record(ctx, retry...); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != 3*n || st.Events != int64(3*n) || st.Sources[usage.SourceAPI] != int64(3*n) {
			t.Errorf("instance %d: %d entries, %d events (%v), want %d each once", i, st.Entries, st.Events, st.Sources, 3*n)
		}
		es, _, err := s.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[int64]int{}
		for _, e := range es {
			counts[e.Count]++
		}
		if len(es) != 3*n || counts[1] != 3*n {
			t.Errorf("instance %d's view: %d entries, counts %v", i, len(es), counts)
		}
	}
}
