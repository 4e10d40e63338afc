package ninep

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

var (
	loadConns = flag.Int("ninep.conns", 50, "TestLoad: concurrent connections")
	loadOps   = flag.Int("ninep.ops", 100, "TestLoad: rank transactions (and loads) per connection; the recorded run uses 1000")
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// TestLoad: many connections, each with its own session and agent, rank and
// load at once. Every answer must be the connection's own (each asks for
// its own tool by keyword), every load must land in its own agent only, and
// nothing may be left running or open afterwards.
func TestLoad(t *testing.T) {
	conns, ops := *loadConns, *loadOps
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	os.MkdirAll(tools, 0o755)
	tiers := []string{"hot", "warm", "cold"}
	for i := 0; i < conns; i++ {
		meta := fmt.Sprintf(`{"description": "Tool number %02d handles its own tasks", "keywords": ["kw%02d"], "tier": %q, "cmd": "/bin/true"}`,
			i, i, tiers[i%3])
		if err := os.WriteFile(filepath.Join(tools, fmt.Sprintf("t%02d.meta", i)), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(registry.Options{Dirs: []string{tools}, Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Source: reg, Ranker: wordRanker{reg}, WorkDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	a := Addr{"unix", filepath.Join(dir, "9p.sock")}
	l, err := Listen(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ctx, l)
	}()
	defer func() { cancel(); <-served }()

	// Warm up (first connection), then take the baseline.
	warm, err := Connect(ctx, a.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Transact("rank", []byte("kw00")); err != nil {
		t.Fatal(err)
	}
	warm.Close()
	baseG, baseFD := settle(t, srv)

	type result struct {
		rank, load []time.Duration
		err        error
	}
	results := make([]result, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &results[i]
			fail := func(format string, args ...any) { r.err = fmt.Errorf("conn %d: "+format, append([]any{i}, args...)...) }
			cl, err := Connect(ctx, a.String())
			if err != nil {
				fail("%v", err)
				return
			}
			defer cl.Close()
			sess := fmt.Sprintf("session/c%02d", i)
			ag := sess + "/agent/a"
			if err := cl.Mkdir(sess); err != nil {
				fail("%v", err)
				return
			}
			if err := cl.Mkdir(ag); err != nil {
				fail("%v", err)
				return
			}
			want := fmt.Sprintf("t%02d", i)
			loaded := map[string]bool{}
			for j := 0; j < ops; j++ {
				s := time.Now()
				ans, err := cl.Transact(ag+"/rank", []byte(fmt.Sprintf("kw%02d", i)))
				r.rank = append(r.rank, time.Since(s))
				if err != nil {
					fail("rank %d: %v", j, err)
					return
				}
				if got := names(string(ans)); len(got) != 1 || got[0] != want {
					fail("rank %d: answer %q, want only %s (cross-talk?)", j, ans, want)
					return
				}
				tool := fmt.Sprintf("t%02d", (i+j)%conns)
				s = time.Now()
				err = cl.Write(ag+"/ctl", []byte("tool_load "+tool+"\n"))
				r.load = append(r.load, time.Since(s))
				if err != nil {
					fail("load %d: %v", j, err)
					return
				}
				loaded[tool] = true
			}
			var wantLoaded []string
			for n := range loaded {
				wantLoaded = append(wantLoaded, n)
			}
			sort.Strings(wantLoaded)
			b, err := cl.Read(ag + "/tools")
			if err != nil {
				fail("%v", err)
				return
			}
			if got := names(string(b)); !reflect.DeepEqual(got, wantLoaded) {
				fail("loaded %v, want %v", got, wantLoaded)
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var rank, load []time.Duration
	for _, r := range results {
		if r.err != nil {
			t.Error(r.err)
		}
		rank = append(rank, r.rank...)
		load = append(load, r.load...)
	}
	if t.Failed() {
		return
	}
	sort.Slice(rank, func(i, j int) bool { return rank[i] < rank[j] })
	sort.Slice(load, func(i, j int) bool { return load[i] < load[j] })
	t.Logf("%d connections × %d rank transactions + %d loads in %v: %.0f rank tx/s, %.0f requests/s (rank+load)",
		conns, ops, ops, elapsed.Round(time.Millisecond), float64(len(rank))/elapsed.Seconds(),
		float64(len(rank)+len(load))/elapsed.Seconds())
	t.Logf("rank transaction latency p50 %v p99 %v max %v; load p50 %v p99 %v",
		percentile(rank, .50), percentile(rank, .99), rank[len(rank)-1], percentile(load, .50), percentile(load, .99))

	// Nothing left behind once the clients are gone.
	g, fd := settle(t, srv)
	t.Logf("after: %d goroutines (baseline %d), %d open files (baseline %d)", g, baseG, fd, baseFD)
	if g > baseG || fd > baseFD {
		buf := make([]byte, 1<<20)
		t.Fatalf("after the clients left: %d goroutines (baseline %d), %d open files (baseline %d)\n%s",
			g, baseG, fd, baseFD, buf[:runtime.Stack(buf, true)])
	}
}
