package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/bench"
	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/ninep"
)

const benchAbout = `Measures the call path: a tool that reads its input and says ok, called
--calls times after --call-warmup each way in turn: a warm toolsrv mcp's
call_tool over stdio, toolsrv call (and toolsrv show of the tool beside it),
bubblewrap (when installed) and the bare command. Then, on synthetic catalogs
made from the corpora's tool texts: cold and warm index build, rank latency
(p50/p99) pruned and scoring every tool (checking that the top 10 are the
same for every query), next to chromem-go's QueryEmbedding on the same
vectors and BM25 alone, 9P rank transactions, the live update (a .meta
written → rankable through the registry watcher and index.Follow), and the
usage history (rank latency with and without 100k events, start-up).
Prints a table; --out also writes it (Markdown) with the machine and command.
Indexes and caches live in --workdir (--cache and --no-cache do not apply).
Small run for CI: --sizes 1000 --queries 50 --live-updates 10 --usage-events 2000 --calls 5.`

// runBench implements `toolsrv bench`.
func runBench(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "bench", "bench --corpus DIR [--corpus DIR ...] [DIR...] [flags]", benchAbout)
	var corpora dirList
	fs.Var(&corpora, "corpus", "labelled corpus directory, or a directory of corpora (repeatable)")
	sizes := fs.String("sizes", "1000,10000,100000", "synthetic catalog sizes, comma separated")
	queries := fs.Int("queries", 200, "rank queries timed per size and method")
	liveSize := fs.Int("live-size", 1000, "catalog size of the live-update test (0 skips it)")
	liveUpdates := fs.Int("live-updates", 50, ".meta files written in the live-update test")
	usageSize := fs.Int("usage-size", 10000, "catalog size the usage history is measured at")
	usageEvents := fs.Int("usage-events", 100000, "usage events recorded for the usage measurement (0 skips it)")
	calls := fs.Int("calls", 50, "calls of a tool timed each way (warm mcp, call, show, bubblewrap, the bare command; 0 skips them)")
	callWarmup := fs.Int("call-warmup", 10, "calls each way before the timed ones")
	ef := addEngineFlags(fs)
	work := fs.String("workdir", "", "scratch directory for synthetic tools and caches (default: a new temp dir, removed after)")
	out := fs.String("out", "", "also write the results (Markdown) to this file")
	jsonOut := fs.Bool("json", false, "print the results as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	corpora = append(corpora, fs.Args()...)
	if len(corpora) == 0 {
		return usageError(fs, "give at least one --corpus DIR (its tool texts make the synthetic catalogs)")
	}
	if err := ef.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *queries <= 0 || *liveSize < 0 || *liveUpdates < 0 || *usageSize < 0 || *usageEvents < 0 || *calls < 0 || *callWarmup < 0 {
		return usageError(fs, "--queries must be positive; --live-size, --live-updates, --usage-size, --usage-events, --calls and --call-warmup not negative")
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n := parseCount(s)
		if n <= 0 {
			return usageError(fs, "--sizes: %q is not a positive count (1000, 1k, 100k)", s)
		}
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return usageError(fs, "--sizes: give at least one catalog size (1000, 1k, 100k)")
	}
	dirs, err := eval.FindCorpora(corpora)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv bench: %v\n", err)
		return 1
	}
	wd := *work
	if wd == "" {
		if wd, err = os.MkdirTemp("", "toolsrv-bench-"); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv bench: %v\n", err)
			return 1
		}
		defer os.RemoveAll(wd)
	}
	self, err := os.Executable()
	if err != nil && *calls > 0 {
		fmt.Fprintf(env.stderr, "toolsrv bench: cannot find my own binary for the calls: %v; pass --calls 0\n", err)
		return 1
	}
	cfg := bench.Config{
		Sizes: ns, Corpora: dirs, Queries: *queries, LiveSize: *liveSize, LiveUpdates: *liveUpdates, WorkDir: wd,
		UsageSize: *usageSize, UsageEvents: *usageEvents, Binary: self, Calls: *calls, CallWarmup: *callWarmup,
		NewEmbedder: func() (embed.Embedder, error) { return ef.open(env) },
		NineP:       benchNineP,
		Logger:      logger(env),
	}
	tty := env.stderrTerminal() // its own escapes: not through termSafe
	before := bench.ThisMachine()
	start := time.Now()
	if tty != nil {
		cfg.Progress = func(stage string) {
			fmt.Fprintf(tty, "\r\033[K[%s] %s", time.Since(start).Round(time.Second), stage)
		}
	}
	rep, err := bench.Run(ctx, cfg)
	if tty != nil {
		fmt.Fprint(tty, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv bench: %v\n", err)
		return 1
	}
	m := bench.ThisMachine()
	m.Date = before.Date
	m.Load = before.Load + " at the start, " + m.Load + " at the end"
	cmdline := "toolsrv bench " + strings.Join(args, " ")
	if *jsonOut {
		if err := writeJSON(env.stdout, map[string]any{"machine": m, "command": cmdline, "report": rep}); err != nil {
			return 1
		}
	} else {
		fmt.Fprint(env.stdout, rep.Markdown(m, cmdline))
	}
	if *out != "" {
		md := "# toolsrv bench\n\n" + rep.Markdown(m, cmdline)
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv bench: %v\n", err)
			return 1
		}
	}
	return 0
}

// parseCount reads 1000, 1k or 100K.
func parseCount(s string) int {
	s = strings.ToLower(strings.TrimSpace(s))
	mul := 1
	if strings.HasSuffix(s, "k") {
		s, mul = strings.TrimSuffix(s, "k"), 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n * mul
}

// benchNineP times rank transactions (walk, open, write the message, read
// the answer, clunk) against a real 9P server on a Unix socket, wired to
// the index and the thresholds policy the way `toolsrv serve` wires them.
func benchNineP(ctx context.Context, eng *engine.Engine, queries []string) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := eng.Registry()
	dir, err := os.MkdirTemp("", "toolsrv-bench-9p-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := ninep.New(ninep.Options{Source: reg, Ranker: eng, WorkDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "9p.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	cl, err := ninep.NewClient(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	defer cl.Close()
	var out []time.Duration
	w := min(5, len(queries)) // the first few warm up
	for i, q := range append(queries[:w:w], queries...) {
		s := time.Now()
		if _, err := cl.Transact("rank", []byte(q)); err != nil {
			return nil, fmt.Errorf("9P rank transaction: %w", err)
		}
		if i >= w {
			out = append(out, time.Since(s))
		}
	}
	return out, nil
}
