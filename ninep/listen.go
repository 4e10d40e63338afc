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

	"github.com/toolsrv/toolsrv/internal/fileio"
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

// Listen listens on a. A Unix socket lives in a private directory (see
// privateDir: created mode 0700 if missing, made 0700 if it is ours, refused
// if it is another user's), a stale socket left by a crashed server is
// replaced (a live one is an error), and the socket is made mode 0600.
func Listen(ctx context.Context, a Addr) (net.Listener, error) {
	var lc net.ListenConfig
	if a.Net != "unix" {
		l, err := lc.Listen(ctx, a.Net, a.Addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s: %w", a, err)
		}
		return l, nil
	}
	if err := privateDir(filepath.Dir(a.Addr), os.Geteuid()); err != nil {
		return nil, fmt.Errorf("listening on %s: %w", a, err)
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

// privateDir makes dir, the directory of a Unix socket, private: owned by
// this user and mode 0700, so that nobody else can reach the socket before
// it is made 0600, or list or replace it.
//   - A missing directory is created 0700.
//   - An existing directory of another user is refused.
//   - An existing directory of ours that is not 0700 is made 0700 — unless
//     changing its mode would cut others off from what it holds: a shared
//     directory (sticky or world-writable, such as /tmp), a system directory
//     ("/", its direct children such as /run or /home, anything under /etc,
//     /usr, /var, /run ...), the home directory itself, or a directory
//     holding files of other users (fileio.SharedDir). Those are refused
//     with what to do. A directory named "toolsrv" (where DefaultSocket
//     puts the socket) is always toolsrv's own.
//
// me is this user's uid (os.Geteuid(); tests pretend to be someone else).
func privateDir(dir string, me int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the socket directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("the socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory; choose another socket path", dir)
	}
	if uid, ok := fileio.Owner(fi); !ok || uid != me {
		return fmt.Errorf("the socket directory %s belongs to uid %d, not to this user (uid %d), who could reach or replace the socket; "+
			"put it in a directory of your own, such as the default $XDG_RUNTIME_DIR/toolsrv/9p.sock", dir, uid, me)
	}
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
	if mode == 0o700 {
		return nil
	}
	if filepath.Base(dir) != "toolsrv" {
		if why := fileio.SharedDir(dir, fi, me); why != "" {
			return fmt.Errorf("the socket directory %s is mode %04o, not 0700, and %s, so toolsrv will not change its mode; "+
				"put the socket in a directory of its own (e.g. --listen unix:%s, created 0700)",
				dir, mode.Perm(), why, filepath.Join(dir, "toolsrv", "9p.sock"))
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("making the socket directory %s private (0700): %w", dir, err)
	}
	return nil
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
