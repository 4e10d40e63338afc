package postgres

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/usage"
)

// benchStores are a shared store on a server of b's own and an embedded
// store.
func benchStores(b *testing.B) (shared, embedded usage.Store) {
	pg := testdeps.StartPostgres(b)
	ctx := context.Background()
	shared, _, err := usage.Open(ctx, pg.URL("postgres", testdeps.PostgresPassword, "postgres"), usage.Options{LocalDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	embedded, _, err = usage.Open(ctx, b.TempDir()+"/usage.db", usage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return shared, embedded
}

// timeEach runs fn on the shared and the embedded store in turn b.N times
// and reports each one's time per call and their ratio (measured in one
// run, so that the machine's load weighs on both alike).
func timeEach(b *testing.B, shared, embedded usage.Store, fn func(s usage.Store, i int)) {
	var ts, te time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Each goes first every other time: what warms the caches for
		// the second is not counted to either.
		first, second, tf, tsec := shared, embedded, &ts, &te
		if i%2 == 1 {
			first, second, tf, tsec = embedded, shared, &te, &ts
		}
		t0 := time.Now()
		fn(first, i)
		t1 := time.Now()
		fn(second, i)
		*tf, *tsec = *tf+t1.Sub(t0), *tsec+time.Since(t1)
	}
	b.ReportMetric(float64(ts.Microseconds())/float64(b.N), "µs-shared/op")
	b.ReportMetric(float64(te.Microseconds())/float64(b.N), "µs-embedded/op")
	b.ReportMetric(float64(ts)/float64(te), "shared/embedded")
}

// Recording one event (one Record: a transaction each).
func BenchmarkRecord(b *testing.B) {
	shared, embedded := benchStores(b)
	defer shared.Close()
	defer embedded.Close()
	ctx := context.Background()
	timeEach(b, shared, embedded, func(s usage.Store, i int) {
		ev := usage.Event{Request: fmt.Sprintf("request number %d", i%5000), Tool: fmt.Sprintf("tool%d", i%40), Agent: "a", OK: true}
		if err := s.Record(ctx, ev); err != nil {
			b.Fatal(err)
		}
	})
}

// Ranking with the history of each store (the engine's view in memory:
// the store is not read per ranking), and a reload of the view after a
// change (Snapshot and SetUsage, what a change another instance records
// costs each instance).
func BenchmarkRank(b *testing.B) {
	shared, embedded := benchStores(b)
	ctx := context.Background()
	evs := rankEvents()
	for _, s := range []usage.Store{shared, embedded} {
		if err := s.Record(ctx, evs...); err != nil {
			b.Fatal(err)
		}
		if err := s.Record(ctx, events(3000, time.Now().Add(-48*time.Hour), "filler")...); err != nil {
			b.Fatal(err)
		}
	}
	engines := map[usage.Store]*engine.Engine{}
	for _, s := range []usage.Store{shared, embedded} {
		eng, err := engine.New(ctx, engine.Options{Dirs: []string{"../../examples/tools"}, NoCache: true, NoThresholds: true, Usage: s})
		if err != nil {
			b.Fatal(err)
		}
		defer eng.Close()
		engines[s] = eng
	}
	qs := []string{"what is nine times eight", "recent commits on the branch", "find every FIXME", "show me the changelog"}
	b.Run("rank", func(b *testing.B) {
		timeEach(b, shared, embedded, func(s usage.Store, i int) {
			if _, err := engines[s].Rank(ctx, rankReq(qs[i%len(qs)])); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("snapshot", func(b *testing.B) {
		timeEach(b, shared, embedded, func(s usage.Store, i int) {
			if err := s.Record(ctx, usage.Event{Request: fmt.Sprint("new request ", i), Tool: "calc", OK: true}); err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// The time from one instance's Record returning to the others seeing the
// event (woken by LISTEN/NOTIFY, a Snapshot each): three instances
// recording 500 events each at once, per run.
func BenchmarkSyncLag(b *testing.B) {
	pg := testdeps.StartPostgres(b)
	dsn := pg.URL("postgres", testdeps.PostgresPassword, "postgres")
	var all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stores, lags := syncRun(b, dsn, fmt.Sprint("bench", i), 500, b.TempDir)
		for _, s := range stores {
			s.Close()
		}
		all = append(all, lags...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(quantile(all, 0.5).Microseconds())/1000, "ms-p50-lag")
	b.ReportMetric(float64(quantile(all, 0.99).Microseconds())/1000, "ms-p99-lag")
}
