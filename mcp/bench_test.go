package mcp

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// npmServers is the config of the three npm reference servers, plus, when
// stuck, a server that never answers initialize.
func npmServers(b *testing.B, stuck bool) string {
	b.Helper()
	bin := filepath.Join(npmDir(b), "node_modules", ".bin")
	files, mem := b.TempDir(), b.TempDir()
	servers := map[string]any{
		"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything")},
		"fs":         map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{files}, "sandbox": map[string]any{"write": []string{files}}},
		"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(mem, "m.jsonl")},
			"sandbox": map[string]any{"write": []string{mem}}},
	}
	if stuck {
		servers["stuck"] = merge(fakeEntry(b, "hang", nil), map[string]any{"startTimeout": "5s"})
	}
	return writeConfig(b, servers)
}

// timedProvider records when its provider first published tools.
type timedProvider struct {
	engine.Provider
	once  sync.Once
	start time.Time
	took  time.Duration
}

func (p *timedProvider) Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error {
	return p.Provider.Run(ctx, func(ctx context.Context, pv registry.Provision) error {
		if len(pv.Tools) > 0 {
			p.once.Do(func() { p.took = time.Since(p.start) })
		}
		return publish(ctx, pv)
	})
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// startOnce starts an engine over the servers of cfgPath and returns when
// the three npm servers were listed, when engine.New returned, and the
// latencies of 50 everything:echo calls.
func startOnce(b *testing.B, cfgPath string, runner *exec.Runner) (listed, ready time.Duration, calls []time.Duration) {
	c, err := LoadConfig(cfgPath, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	var timed []*timedProvider
	var provs []engine.Provider
	for _, p := range Providers(c, ProviderOptions{Runner: runner, Logger: quiet()}) {
		tp := &timedProvider{Provider: p, start: start}
		provs = append(provs, tp)
		if p.Name() != "stuck" {
			timed = append(timed, tp)
		}
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{b.TempDir()}, NoIndex: true, Logger: quiet(), Providers: provs})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	ready = time.Since(start)
	for _, tp := range timed {
		if tp.took == 0 {
			b.Fatalf("server %s was not listed", tp.Name())
		}
		listed = max(listed, tp.took)
	}
	for j := 0; j < 50; j++ {
		t0 := time.Now()
		if _, err := eng.Call(ctx, engine.CallRequest{Tool: "everything:echo", Arguments: []byte(`{"message":"x"}`), Context: exec.CallContext{WorkDir: b.TempDir()}}); err != nil {
			b.Fatal(err)
		}
		calls = append(calls, time.Since(t0))
	}
	return listed, ready, calls
}

// BenchmarkStartup measures three imported servers at start-up (each
// started sandboxed, initialize, tools/list: the time until the last of
// them is listed, and until engine.New returns), and, interleaved in the
// same run, what a fourth server that never answers initialize (its
// startTimeout 5 s) costs the others: when their tools are listed, and
// the latency of calls to them while it hangs (median of 50
// everything:echo calls per start).
//
//	go test -run '^$' -bench Startup -benchtime 5x ./mcp/
func BenchmarkStartup(b *testing.B) {
	plain, stuck := npmServers(b, false), npmServers(b, true)
	runner := testRunner(b)
	var lp, ls, rp, rs []time.Duration
	var cp, cs []time.Duration
	for i := 0; i < b.N; i++ {
		l, r, c := startOnce(b, plain, runner)
		lp, rp, cp = append(lp, l), append(rp, r), append(cp, c...)
		l, r, c = startOnce(b, stuck, runner)
		ls, rs, cs = append(ls, l), append(rs, r), append(cs, c...)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(median(lp)), "listed-ms")
	b.ReportMetric(ms(median(rp)), "new-ms")
	b.ReportMetric(ms(median(cp)), "echo-p50-ms")
	b.ReportMetric(ms(median(ls)), "stuck:listed-ms")
	b.ReportMetric(ms(median(rs)), "stuck:new-ms")
	b.ReportMetric(ms(median(cs)), "stuck:echo-p50-ms")
}
