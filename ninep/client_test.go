package ninep

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
)

// silentServer accepts connections and never reads or answers them.
func silentServer(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "9p") // a short path: Unix socket names are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "silent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	return "unix:" + sock, conns
}

// waitErr waits for a result that must come once ctx has ended; the guard
// only turns a hang into a clear failure.
func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(safetyNet):
		t.Fatalf("still blocked %s after the context ended", safetyNet)
		return nil
	}
}

// Connect returns when its context ends, even while the server it reached
// never answers the version handshake.
func TestConnectHonoursContext(t *testing.T) {
	cases := []struct {
		name string
		// early: the context ends before Connect is called; otherwise it
		// ends once the server has accepted the connection, while the
		// handshake waits on it.
		early bool
	}{
		{"cancelled before dialling", true},
		{"cancelled while the server is silent", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, accepted := silentServer(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.early {
				cancel()
			}
			done := make(chan error, 1)
			go func() {
				cl, err := Connect(ctx, addr)
				if err == nil {
					cl.Close()
				}
				done <- err
			}()
			if !c.early {
				<-accepted
				cancel()
			}
			if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
				t.Fatalf("Connect = %v; want an error wrapping context.Canceled", err)
			}
		})
	}
}

// A call blocked on the server returns when the client's context ends.
func TestClientCallReturnsWhenContextEnds(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	e := newEnv(t, func(o *Options) {
		o.Ranker = rankerFunc(func(ctx context.Context, q engine.Request) (engine.Answer, error) {
			close(entered)
			<-release // a ranking that never finishes
			return engine.Answer{}, nil
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := Connect(ctx, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := make(chan error, 1)
	go func() {
		_, err := cl.Transact("rank", []byte("will it rain"))
		done <- err
	}()
	<-entered
	cancel()
	if err := waitErr(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Transact = %v; want an error wrapping context.Canceled", err)
	}
	// The client is done: later calls fail at once, with the same reason.
	if _, err := cl.Read("tools"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after the context ended = %v", err)
	}
}
