package ninep

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// benchEnv is a server on a Unix socket with one client, for sequential
// per-request costs (the 9P walk, open, write, read and clunk around a
// trivial ranker).
func benchEnv(b *testing.B) *Client {
	b.Helper()
	reg := registry.New(registry.Options{Dirs: []string{"testdata/tools"}, Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	if err := reg.Load(ctx); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	srv, err := New(Options{Source: reg, Ranker: wordRanker{reg}, Caller: &echoCaller{}, WorkDir: dir, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	a := Addr{"unix", filepath.Join(dir, "9p.sock")}
	l, err := Listen(ctx, a)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, l) }()
	cl, err := Connect(ctx, a.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close(); cancel(); <-done })
	if err := cl.Mkdir("session/s"); err != nil {
		b.Fatal(err)
	}
	if err := cl.Mkdir("session/s/agent/a"); err != nil {
		b.Fatal(err)
	}
	return cl
}

func BenchmarkRankTransaction(b *testing.B) {
	cl := benchEnv(b)
	for b.Loop() {
		if _, err := cl.Transact("session/s/agent/a/rank", []byte("rain forecast")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToolLoad(b *testing.B) {
	cl := benchEnv(b)
	for b.Loop() {
		if err := cl.Write("session/s/agent/a/ctl", []byte("tool_load weather\n")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadTools(b *testing.B) {
	cl := benchEnv(b)
	for b.Loop() {
		if _, err := cl.Read("tools"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallTransaction(b *testing.B) {
	cl := benchEnv(b)
	if err := cl.Write("session/s/agent/a/ctl", []byte("tool_load echo_text\n")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := cl.Transact("session/s/agent/a/call/echo_text", []byte(`{"text": "hi"}`)); err != nil {
			b.Fatal(err)
		}
	}
}
