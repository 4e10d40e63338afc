package ninep

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// recorder is the client side of a connection that keeps what the client
// sends: replayed later, it is a realistic fuzz seed.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out.Write(p)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// recordSession runs script against a fresh server and returns the bytes the
// client sent.
func recordSession(tb testing.TB, src Source, script func(cl *Client)) []byte {
	srv := fuzzServer(tb, src)
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConn(context.Background(), b)
	}()
	rec := &recorder{Conn: a}
	cl, err := NewClient(rec)
	if err != nil {
		tb.Fatal(err)
	}
	script(cl)
	cl.Close()
	<-done
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return bytes.Clone(rec.out.Bytes())
}

func fuzzServer(tb testing.TB, src Source) *Server {
	srv, err := New(Options{Source: src, Ranker: wordRanker{src}, Caller: &echoCaller{}, WorkDir: tb.TempDir(), Logger: quietLogger(), Token: testToken,
		Profiles: func(name string) (*registry.Profile, error) { return registry.LoadProfile("testdata/agents", name) }})
	if err != nil {
		tb.Fatal(err)
	}
	return srv
}

// feed is a connection whose peer sends data and then hangs up; whatever
// the server answers is discarded.
type feed struct{ r io.Reader }

func (f *feed) Read(p []byte) (int, error)  { return f.r.Read(p) }
func (f *feed) Write(p []byte) (int, error) { return len(p), nil }
func (f *feed) Close() error                { return nil }

// FuzzConn feeds arbitrary bytes to the connection handler (shim + 9P
// library + tree). It fails on a panic in a handler, and on a connection
// that is not done shortly after its input ends.
func FuzzConn(f *testing.F) {
	reg := registry.New(registry.Options{Dirs: []string{"testdata/tools"}, Logger: quietLogger()})
	if err := reg.Load(context.Background()); err != nil {
		f.Fatal(err)
	}
	scripts := []func(cl *Client){
		func(cl *Client) {
			cl.List("/")
			cl.Read("tools")
			cl.Read("tools.json")
			cl.Read("revision")
			cl.Read("errors")
			cl.Transact("rank", []byte("rain forecast"))
		},
		func(cl *Client) {
			cl.Mkdir("session/s")
			cl.Mkdir("session/s/agent/coder")
			cl.Write("session/s/agent/coder/ctl", []byte("tool_load echo_text\nturn\n"))
			cl.Write("session/s/agent/coder/tools", []byte("weather\n"))
			cl.Read("session/s/agent/coder/schemas")
			cl.Transact("session/s/agent/coder/call/echo_text", []byte(`{"text": "hi"}`))
			cl.Transact("session/s/agent/coder/rank", []byte(`{"query": "push", "k": 2}`))
			cl.Read("session/s/agent/coder/err")
			cl.Read("session/s/agent/coder/ctl")
			cl.Write("session/s/ctl", []byte("cwd /"))
			cl.Remove("session/s/agent/coder")
			cl.Remove("session/s")
		},
		func(cl *Client) {
			cl.Write("tools", []byte("x"))
			cl.Write("ctl", []byte("bogus\n"))
			cl.Read("err")
			cl.Read("nope/deeper")
			cl.Stat("session")
		},
	}
	for _, s := range scripts {
		f.Add(recordSession(f, reg, s))
	}
	// Tversion, Tauth, Tattach by hand (what diod sends first).
	f.Add(cat(frame(100, 0xFFFF, cat(u32(8192), str9("9P2000.L"))),
		frame(msgTauth, 1, cat(u32(7), str9("me"), str9(""), u32(0))),
		frame(104, 2, cat(u32(1), u32(^uint32(0)), str9("me"), str9(""), u32(0)))))
	// The attach names a TCP connection is checked on: the token, the
	// Unix socket's habit, a wrong one, and a Tattach cut short.
	for _, aname := range []string{testToken, "/", "wrong-token-0123456789abcdef"} {
		f.Add(cat(frame(100, 0xFFFF, cat(u32(8192), str9("9P2000.L"))),
			frame(msgTauth, 1, cat(u32(7), str9("me"), str9(aname), u32(0))),
			frame(104, 2, cat(u32(1), u32(^uint32(0)), str9("me"), str9(aname), u32(0))),
			frame(110, 3, cat(u32(1), u32(2), []byte{1, 0}, str9("tools")))))
	}
	f.Add(cat(frame(100, 0xFFFF, cat(u32(8192), str9("9P2000.L"))),
		frame(104, 2, cat(u32(1), u32(^uint32(0)), str9("me"), []byte{40, 0}, []byte("short")))))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 100, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		srv := fuzzServer(t, reg)
		var mu sync.Mutex
		var panics []string
		srv.onPanic = func(msg string) {
			if !ourPanic(msg) {
				return
			}
			mu.Lock()
			panics = append(panics, msg)
			mu.Unlock()
		}
		// As a TCP connection (the attach name checked against the token)
		// when the input holds the token, so that an attach can pass, and
		// when its length is odd, so that refusals are fuzzed too; else as
		// a Unix socket's (the attach name ignored). One of them, not
		// both: a connection may take seconds to drain.
		remote := ""
		if bytes.Contains(data, []byte(testToken)) || len(data)%2 == 1 {
			remote = "fuzz peer"
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.serveConn(context.Background(), &feed{r: bytes.NewReader(data)}, Access{}, nil, remote)
		}()
		select {
		case <-done:
		case <-time.After(safetyNet):
			t.Fatalf("the connection handler (remote %q) did not finish after its input ended", remote)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(panics) > 0 {
			t.Fatalf("handler panicked: %s", panics[0])
		}
	})
}

// ourPanic reports whether a panic the 9P library recovered in a handler
// was raised in this module's code (the frame right after "panic(").
// Panics inside the library's own handlers are recovered and answered with
// EFAULT; they are the library's to fix (a Tread with a count above msize
// sliced past its buffer until the shim cut the count).
func ourPanic(msg string) bool {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "panic(") && i+1 < len(lines) {
			return strings.HasPrefix(strings.TrimSpace(lines[i+1]), "github.com/toolsrv/toolsrv/")
		}
	}
	return true // no stack: count it
}
