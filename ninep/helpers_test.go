package ninep

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// safetyNet bounds a test's wait for an event (an answer, an exit, a
// connection): the test waits for the event itself, and this only ends a
// wait that would never end. Generous, because a loaded machine (load ~170
// on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

// wordRanker is a deterministic stand-in for the index: a tool scores the
// share of the message's words found in its name, description and keywords.
type wordRanker struct{ src Source }

func (w wordRanker) Rank(ctx context.Context, q engine.Request) (engine.Answer, error) {
	words := strings.Fields(strings.ToLower(q.Query))
	var hits []engine.Offer
	for _, t := range w.src.Catalog().Tools {
		if q.Allow != nil && !q.Allow(t.Name) {
			continue
		}
		text := strings.ToLower(t.Name + " " + t.Description + " " + strings.Join(t.Keywords, " "))
		n := 0
		for _, wd := range words {
			if strings.Contains(text, wd) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, engine.Offer{Hit: index.Hit{Name: t.Name, Score: float64(n) / float64(len(words))}})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Name < hits[j].Name
	})
	if q.Limit > 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return engine.Answer{Tools: hits}, nil
}

// rankerFunc adapts a function to Ranker.
type rankerFunc func(ctx context.Context, q engine.Request) (engine.Answer, error)

func (f rankerFunc) Rank(ctx context.Context, q engine.Request) (engine.Answer, error) {
	return f(ctx, q)
}

// echoCaller answers a call with its own arguments as output and remembers
// what it was asked.
type echoCaller struct {
	mu    sync.Mutex
	calls []engine.CallRequest
}

func (e *echoCaller) Call(ctx context.Context, c engine.CallRequest) (*exec.Result, error) {
	args := c.Arguments
	c.Arguments = nil // what a call was given is not kept (a test measures the server's memory)
	e.mu.Lock()
	e.calls = append(e.calls, c)
	e.mu.Unlock()
	if strings.Contains(string(args), "fail-please") {
		return &exec.Result{Stdout: []byte("partial"), Stderr: []byte("it failed"), ExitCode: 3}, nil
	}
	if strings.Contains(string(args), "refuse-please") {
		return nil, Refuse(linux.EACCES, "bypass denied by the broker")
	}
	return &exec.Result{Stdout: args, ExitCode: 0}, nil
}

// testEnv is a server on a real Unix socket over a copy of testdata/tools.
type testEnv struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	tools  string
	reg    *registry.Registry
	srv    *Server
	addr   string
	caller *echoCaller
	done   chan struct{}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv starts a server; tweak may change the options before it starts.
func newEnv(t *testing.T, tweak func(*Options)) *testEnv {
	t.Helper()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	copyDir(t, "testdata/tools", tools)
	reg := registry.New(registry.Options{Dirs: []string{tools}, Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, ctx: ctx, cancel: cancel, tools: tools, reg: reg, caller: &echoCaller{}, done: make(chan struct{})}
	opts := Options{
		Source: reg, Ranker: wordRanker{reg}, Caller: e.caller, WorkDir: dir, Logger: quietLogger(),
		Profiles: func(name string) (*registry.Profile, error) { return registry.LoadProfile("testdata/agents", name) },
	}
	if tweak != nil {
		tweak(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	a := Addr{"unix", filepath.Join(dir, "run", "9p.sock")}
	l, err := Listen(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	e.addr = a.String()
	go func() {
		defer close(e.done)
		if err := srv.Serve(ctx, l); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-e.done
	})
	return e
}

// listenTCP also serves on a loopback TCP port and returns HOST:PORT.
func (e *testEnv) listenTCP() string {
	e.t.Helper()
	l, err := Listen(e.ctx, Addr{"tcp", "127.0.0.1:0"})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.srv.Serve(e.ctx, l)
	}()
	e.t.Cleanup(func() {
		e.cancel()
		<-done
	})
	return l.Addr().String()
}

func (e *testEnv) client() *Client {
	e.t.Helper()
	cl, err := Connect(context.Background(), e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cl.Close() })
	return cl
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join(from, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mustRead reads a file or fails the test.
func mustRead(t *testing.T, cl *Client, p string) string {
	t.Helper()
	b, err := cl.Read(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func mustWrite(t *testing.T, cl *Client, p, data string) {
	t.Helper()
	if err := cl.Write(p, []byte(data)); err != nil {
		t.Fatalf("write %s %q: %v", p, data, err)
	}
}

func mustMkdir(t *testing.T, cl *Client, p string) {
	t.Helper()
	if err := cl.Mkdir(p); err != nil {
		t.Fatalf("mkdir %s: %v", p, err)
	}
}

// wantRefused checks that err is a refusal with errno and a reason that
// contains every fragment.
func wantRefused(t *testing.T, err error, errno linux.Errno, fragments ...string) {
	t.Helper()
	var r *RefusedError
	if !errors.As(err, &r) {
		t.Fatalf("want a refusal with %v, got %v", errno, err)
	}
	if r.Errno != errno {
		t.Fatalf("errno = %v (%d), want %v (%d); reason %q", r.Errno, int(r.Errno), errno, int(errno), r.Reason)
	}
	for _, f := range fragments {
		if !strings.Contains(r.Reason, f) {
			t.Fatalf("reason %q does not contain %q", r.Reason, f)
		}
	}
}

// names returns the first field of each line.
func names(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out
}

// settle waits until srv serves no connection and no goroutine of a 9P
// connection is left, on either side, and returns how many goroutines and
// open files there are then. A goroutine of a connection is one with a frame
// in the 9P library or in this package, other than the caller's and the
// accept loops (Serve itself). Goroutines end without telling anyone, so
// that part is polled; it fails the test only when the test's own deadline
// is near.
func settle(t *testing.T, srv *Server) (goroutines, files int) {
	t.Helper()
	if err := srv.conns.waitAtMost(t.Context(), 0); err != nil {
		t.Fatalf("waiting for the server to finish its connections: %v", err)
	}
	for {
		left := connGoroutines()
		if len(left) == 0 {
			return runtime.NumGoroutine(), openFDs(t)
		}
		if d, ok := t.Deadline(); ok && time.Until(d) < 10*time.Second {
			t.Fatalf("%d goroutines of connections are still there near the test's deadline:\n%s",
				len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(time.Millisecond) // the poll's pace, not what it waits for
	}
}

// connGoroutines returns the stacks of the goroutines that serve or use a
// 9P connection (see settle).
func connGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller's
		}
		ours := strings.Contains(g, "github.com/hugelgupf/p9/") || strings.Contains(g, "github.com/toolsrv/toolsrv/ninep.")
		accepting := strings.Contains(g, "github.com/toolsrv/toolsrv/ninep.(*Server).Serve(") && !strings.Contains(g, "github.com/toolsrv/toolsrv/ninep.(*Server).Serve.func")
		if ours && !accepting {
			out = append(out, g)
		}
	}
	return out
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open files: %v", err)
	}
	return len(ents)
}
