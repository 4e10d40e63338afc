package ninep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// AddrEnv is the environment variable that tells clients (the toolsrv 9p
// command, tools such as tool_load) where the server listens, in the
// --listen syntax: unix:PATH or tcp:HOST:PORT.
const AddrEnv = "TOOLSRV_ADDR"

// DefaultSocket is where toolsrv serve listens by default:
// $XDG_RUNTIME_DIR/toolsrv/9p.sock, or ~/.cache/toolsrv/9p.sock when
// XDG_RUNTIME_DIR is unset.
func DefaultSocket(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "toolsrv", "9p.sock")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".cache", "toolsrv", "9p.sock")
}

// DefaultAddr is the address a client uses when none is given: $TOOLSRV_ADDR,
// else the default socket.
func DefaultAddr(getenv func(string) string) string {
	if a := getenv(AddrEnv); a != "" {
		return a
	}
	return "unix:" + DefaultSocket(getenv)
}

// Addr is a parsed listen or dial address.
type Addr struct {
	Net  string // "unix" or "tcp"
	Addr string // socket path, or host:port
}

func (a Addr) String() string { return a.Net + ":" + a.Addr }

// ParseAddr parses unix:PATH or tcp:HOST:PORT. A bare path (containing a
// slash) is taken as a Unix socket.
func ParseAddr(s string) (Addr, error) {
	kind, rest, ok := strings.Cut(s, ":")
	switch {
	case ok && kind == "unix" && rest != "":
		return Addr{"unix", rest}, nil
	case ok && kind == "tcp" && rest != "":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			return Addr{}, fmt.Errorf("address %q: %w; write tcp:HOST:PORT, e.g. tcp:127.0.0.1:5640", s, err)
		}
		return Addr{"tcp", rest}, nil
	case strings.Contains(s, "/"):
		return Addr{"unix", s}, nil
	}
	return Addr{}, fmt.Errorf("address %q: write unix:PATH or tcp:HOST:PORT", s)
}

// Loopback reports whether a TCP address only accepts local connections.
// A host name other than localhost counts as not loopback.
func (a Addr) Loopback() bool {
	if a.Net != "tcp" {
		return true
	}
	host, _, err := net.SplitHostPort(a.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen listens on a. A Unix socket's directory is created (mode 0700) if
// missing, a stale socket left by a crashed server is replaced (a live one
// is an error), and the socket is made mode 0600.
func Listen(ctx context.Context, a Addr) (net.Listener, error) {
	var lc net.ListenConfig
	if a.Net != "unix" {
		l, err := lc.Listen(ctx, a.Net, a.Addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", a, err)
		}
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(a.Addr), 0o700); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	if fi, err := os.Lstat(a.Addr); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("listening on %s: the path exists and is not a socket; remove it or choose another --listen", a)
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "unix", a.Addr); err == nil {
			c.Close()
			return nil, fmt.Errorf("listening on %s: another server is already serving there", a)
		}
		if err := os.Remove(a.Addr); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", a.Addr, err)
		}
	}
	l, err := lc.Listen(ctx, "unix", a.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", a, err)
	}
	if err := os.Chmod(a.Addr, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("making %s private: %w", a.Addr, err)
	}
	if ul, ok := l.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(true)
	}
	return l, nil
}

// Dial connects to a server address (see ParseAddr).
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, a.Net, a.Addr)
	if err != nil {
		var hint string
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			hint = "; is toolsrv serve running? (set " + AddrEnv + " or --addr to its address)"
		}
		return nil, fmt.Errorf("connecting to %s: %w%s", a, err, hint)
	}
	return c, nil
}
