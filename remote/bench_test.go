package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/internal/sshtest"
	"github.com/toolsrv/toolsrv/registry"
)

// benchCorpus returns 2×n tool definitions (name → .meta) and queries:
// from the corpus in $TOOLSRV_BENCH_CORPUS (DIR/tools/*.meta and
// DIR/queries.jsonl; the first n tools stay local, the next n go to the
// remote), else made from examples/tools, each tool repeated under new
// names with another tool's prompt.
func benchCorpus(b *testing.B, n int) (local, remote map[string][]byte, queries []string) {
	b.Helper()
	dir := os.Getenv("TOOLSRV_BENCH_CORPUS")
	tools := filepath.Join(dir, "tools")
	if dir == "" {
		tools = "../examples/tools"
	}
	files, err := filepath.Glob(filepath.Join(tools, "*.meta"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no tools in %s: %v", tools, err)
	}
	sort.Strings(files)
	type def struct {
		name string
		data []byte
	}
	var defs []def
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		delete(m, "variants") // resolve the same everywhere
		m["cmd"] = "/bin/cat"
		data, _ = json.Marshal(m)
		defs = append(defs, def{strings.TrimSuffix(filepath.Base(f), ".meta"), data})
	}
	local, remote = map[string][]byte{}, map[string][]byte{}
	for i := 0; i < 2*n; i++ {
		d := defs[i%len(defs)]
		name := d.name
		if i >= len(defs) {
			var m map[string]any
			json.Unmarshal(d.data, &m)
			m["prompt"] = fmt.Sprint(m["prompt"], " ", defs[(i*7919)%len(defs)].name)
			d.data, _ = json.Marshal(m)
			name = fmt.Sprintf("%s-%d", d.name, i)
		}
		if i < n {
			local[name] = d.data
		} else {
			remote[name] = d.data
		}
	}
	qf := filepath.Join(dir, "queries.jsonl")
	if dir == "" {
		for _, d := range defs {
			var m struct{ Description string }
			json.Unmarshal(d.data, &m)
			queries = append(queries, m.Description)
		}
		return local, remote, queries
	}
	f, err := os.Open(qf)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			queries = append(queries, q.Query)
		}
	}
	return local, remote, queries
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

// BenchmarkFederation measures, in one run: ranking a local catalog of 1k
// tools, and the same local catalog federated with a remote of 1k more
// over ssh (both in the local index: p50 and the ratio); a call of a
// tool here, on the remote through its own socket, and on the remote
// through the federation over ssh (the added latency); and how long the
// remote's tools take to come back after its server is killed (the
// federation's defaults: revision read every second, first retry after
// 0.5 s; the relay starts a new server there).
//
//	TOOLSRV_BENCH_CORPUS=DIR go test -run '^$' -bench Federation -benchtime 2000x ./remote/
//
// DIR: a labelled corpus of at least 2,000 tools (the figures in
// bench/RESULTS.md: the sealtools corpus of the evaluation corpora).
func BenchmarkFederation(b *testing.B) {
	const n = 1000
	localDefs, remoteDefs, queries := benchCorpus(b, n)
	bin := toolsrvBin(b)
	s := sshtest.Start(b)
	host := sshtest.NewHost(b, bin, nil)
	for name, data := range remoteDefs {
		if err := os.WriteFile(filepath.Join(host.Root, "tools", name+".meta"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	echo := []byte(`{"description": "Echo the arguments back", "cmd": "/bin/cat"}`)
	host.WriteTool(b, "echo_args", string(echo))
	localDir := b.TempDir()
	localDefs["echo_args"] = echo
	for name, data := range localDefs {
		if err := os.WriteFile(filepath.Join(localDir, name+".meta"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	runner := &exec.Options{SelfExe: exec.DefaultHelper(bin), Logger: quiet}
	cache := b.TempDir()
	newEngine := func(ps ...engine.Provider) *engine.Engine {
		eng, err := engine.New(ctx, engine.Options{Dirs: []string{localDir}, CacheDir: cache, NoThresholds: true,
			Runner: runner, Providers: ps, ProviderWait: 5 * time.Minute, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		return eng
	}
	localEng := newEngine()
	defer localEng.Close()
	p, err := New(Options{Name: "srv", Addr: s.Addr, Session: "bench", Logger: quiet, Dial: dialOpts(s, host.Cmd)})
	if err != nil {
		b.Fatal(err)
	}
	fed := newEngine(p)
	defer fed.Close()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); fed.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	remoteCount := func(c *registry.Catalog) int {
		k := 0
		for _, t := range c.Tools {
			if strings.HasPrefix(t.Name, "srv:") {
				k++
			}
		}
		return k
	}
	waitIndexed := func() {
		for fed.Index().Stats().Tools < 2*n+2 || remoteCount(fed.Catalog()) < n+1 {
			select {
			case <-ctx.Done():
				b.Fatalf("the federated index has %d tools", fed.Index().Stats().Tools)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitIndexed()

	rank := func(eng *engine.Engine) func(b *testing.B) {
		return func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := queries[i%len(queries)]
				t0 := time.Now()
				if _, err := eng.Rank(ctx, engine.Request{Query: q, Limit: 10, All: true}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.ReportMetric(float64(p50(ds).Microseconds()), "p50-µs")
		}
	}
	b.Run("rank/local-1k", rank(localEng))
	b.Run("rank/federated-1k+1k", rank(fed))

	call := func(f func() error) func(b *testing.B) {
		return func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.ReportMetric(float64(p50(ds).Microseconds()), "p50-µs")
		}
	}
	work := b.TempDir()
	args := []byte(`{"x": 1}`)
	b.Run("call/local", call(func() error {
		_, err := localEng.Call(ctx, engine.CallRequest{Tool: "echo_args", Arguments: args, Context: exec.CallContext{WorkDir: work}})
		return err
	}))
	direct, err := Dial(ctx, "unix:"+filepath.Join(host.Root, "run", "toolsrv", "9p.sock"), DialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	for _, d := range []string{"session/direct", "session/direct/agent/a"} {
		if err := direct.Mkdir(d); err != nil {
			b.Fatal(err)
		}
	}
	if err := direct.Write("session/direct/agent/a/ctl", []byte("tool_load echo_args")); err != nil {
		b.Fatal(err)
	}
	// As the federation calls: on a call file kept open.
	tx, err := direct.OpenTx("session/direct/agent/a/call/echo_args")
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	b.Run("call/remote-socket", call(func() error {
		_, err := tx.Do(args)
		return err
	}))
	b.Run("call/remote-ssh", call(func() error {
		_, err := fed.Call(ctx, engine.CallRequest{Tool: "srv:echo_args", Arguments: args})
		return err
	}))

	b.Run("reconnect", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			// A connection that lived less than this is taken for a
			// flapping remote (backoff keeps growing); a restart is not.
			time.Sleep(healthy)
			sctx, cancel := context.WithCancel(ctx)
			changes := fed.Registry().Subscribe(sctx)
			host.StopServer(b)
			t0 := time.Now()
			for down := false; ; {
				ch, ok := <-changes
				if !ok {
					b.Fatal("the remote's tools did not come back")
				}
				k := remoteCount(ch.Catalog)
				down = down || k == 0
				if down && k == n+1 {
					break
				}
			}
			ds = append(ds, time.Since(t0))
			cancel()
		}
		b.ReportMetric(float64(p50(ds).Milliseconds()), "p50-ms")
	})
}
