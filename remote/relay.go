package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RelayOptions configure Relay.
type RelayOptions struct {
	// Socket is the Unix socket of the user's server (ninep.DefaultSocket).
	Socket string
	// Start starts a server that will listen on Socket (toolsrv serve, on
	// its own: it outlives the relay); exited yields when that server
	// stops, so that one that fails at once is reported without waiting
	// for Wait. Nil: no server is started, and none running is an error.
	Start func(ctx context.Context) (exited <-chan error, err error)
	// Wait bounds how long a server that was started may take to listen
	// (60 s: the first start of a large catalog embeds it).
	Wait time.Duration
	// Logger gets what the relay does (slog.Default()).
	Logger *slog.Logger
}

// Relay is toolsrv serve --stdio: it carries one 9P connection between in
// and out (standard input and output, under ssh) and the user's server on
// its Unix socket, starting that server first if none answers, so that
// sessions, agents and sent definitions outlive the connection exactly as
// on the socket. The server sees a connection on its socket from a process
// of its own user: one the operating system authenticated (which may send
// definitions), unless the relay was started by one of its tools (which
// is then confined as the tool is). Relay returns when either side ends
// the connection.
func Relay(ctx context.Context, in io.Reader, out io.Writer, o RelayOptions) error {
	if o.Wait <= 0 {
		o.Wait = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	conn, err := reachServer(ctx, o)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// in → server; at the end of in, the server is told (half close) and
	// answers what it was sent before it closes its side.
	go func() {
		io.Copy(conn, in)
		conn.CloseWrite()
	}()
	_, err = io.Copy(out, conn)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("relaying to the server at %s: %w", o.Socket, err)
	}
	return nil
}

// reachServer connects to the server's socket, starting the server when
// nobody listens there. Concurrent relays start at most one server: the
// start is serialised by a lock file beside the socket.
func reachServer(ctx context.Context, o RelayOptions) (*net.UnixConn, error) {
	if c, err := dialUnix(ctx, o.Socket); err == nil || !noServer(err) {
		return c, err
	}
	if o.Start == nil {
		return nil, fmt.Errorf("no toolsrv server is running on %s; start one (toolsrv serve)", o.Socket)
	}
	dir := filepath.Dir(o.Socket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("no toolsrv server is running on %s, and its directory cannot be made: %w", o.Socket, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "start.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another relay may have started it meanwhile.
	if c, err := dialUnix(ctx, o.Socket); err == nil || !noServer(err) {
		return c, err
	}
	o.Logger.Info("no server on the socket: starting one", "socket", o.Socket)
	exited, err := o.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("no toolsrv server was running on %s, and starting one failed: %w", o.Socket, err)
	}
	deadline := time.NewTimer(o.Wait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := dialUnix(ctx, o.Socket)
		if err == nil || !noServer(err) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-exited:
			return nil, fmt.Errorf("the toolsrv server started for %s stopped before it listened (%v); see its log", o.Socket, err)
		case <-deadline.C:
			return nil, fmt.Errorf("the toolsrv server started for %s did not listen within %s; see its log", o.Socket, o.Wait)
		case <-tick.C:
		}
	}
}

func dialUnix(ctx context.Context, path string) (*net.UnixConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// noServer reports whether a dial failed because nobody listens.
func noServer(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}

// lockFile takes an exclusive lock on path (made if need be), waiting for
// it until ctx ends.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the server start lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("the server start lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
