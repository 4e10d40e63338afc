package ninep

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseAddr(t *testing.T) {
	cases := []struct {
		in       string
		want     Addr
		loopback bool
		bad      string
	}{
		{in: "unix:/run/x.sock", want: Addr{"unix", "/run/x.sock"}, loopback: true},
		{in: "/tmp/s.sock", want: Addr{"unix", "/tmp/s.sock"}, loopback: true},
		{in: "tcp:127.0.0.1:5640", want: Addr{"tcp", "127.0.0.1:5640"}, loopback: true},
		{in: "tcp:[::1]:5640", want: Addr{"tcp", "[::1]:5640"}, loopback: true},
		{in: "tcp:localhost:5640", want: Addr{"tcp", "localhost:5640"}, loopback: true},
		{in: "tcp:0.0.0.0:5640", want: Addr{"tcp", "0.0.0.0:5640"}},
		{in: "tcp:192.168.1.4:564", want: Addr{"tcp", "192.168.1.4:564"}},
		{in: "tcp:example.org:564", want: Addr{"tcp", "example.org:564"}},
		{in: "tcp:5640", bad: "tcp:HOST:PORT"},
		{in: "udp:1.2.3.4:5", bad: "unix:PATH or tcp:HOST:PORT"},
		{in: "unix:", bad: "unix:PATH"},
		{in: "", bad: "unix:PATH"},
	}
	for _, c := range cases {
		got, err := ParseAddr(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParseAddr(%q) = %v, %v; want error mentioning %q", c.in, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want || got.Loopback() != c.loopback {
			t.Errorf("ParseAddr(%q) = %v (loopback %v), %v; want %v (loopback %v)", c.in, got, got.Loopback(), err, c.want, c.loopback)
		}
	}
}

func TestDefaultAddr(t *testing.T) {
	env := map[string]string{"HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if got := DefaultSocket(get); got != "/home/u/.cache/toolsrv/9p.sock" {
		t.Fatalf("DefaultSocket = %s", got)
	}
	env["XDG_RUNTIME_DIR"] = "/run/user/1000"
	if got := DefaultAddr(get); got != "unix:/run/user/1000/toolsrv/9p.sock" {
		t.Fatalf("DefaultAddr = %s", got)
	}
	env[AddrEnv] = "tcp:127.0.0.1:5640"
	if got := DefaultAddr(get); got != "tcp:127.0.0.1:5640" {
		t.Fatalf("DefaultAddr with %s = %s", AddrEnv, got)
	}
}

func TestListenUnix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub", "dir")
	a := Addr{"unix", filepath.Join(dir, "9p.sock")}
	l, err := Listen(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(a.Addr)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode = %v, %v; want a 0600 socket", fi.Mode(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("socket dir mode = %v, %v; want 0700", di.Mode(), err)
	}
	// A live socket is not taken over.
	if _, err := Listen(t.Context(), a); err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("second Listen = %v", err)
	}
	// Closing removes it.
	l.Close()
	if _, err := os.Stat(a.Addr); !os.IsNotExist(err) {
		t.Fatalf("socket left after Close: %v", err)
	}
	// A stale socket (no one listening) is replaced.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: a.Addr, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	l, err = Listen(t.Context(), a)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l.Close()
	// A regular file is never removed.
	if err := os.WriteFile(a.Addr, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(t.Context(), a); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a file = %v", err)
	}
}

func TestDialHints(t *testing.T) {
	_, err := Dial(t.Context(), "unix:"+filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || !strings.Contains(err.Error(), "is toolsrv serve running?") {
		t.Fatalf("Dial to nothing = %v", err)
	}
}

// The socket directory ends up 0700 even when it existed with another mode;
// a directory whose mode toolsrv must not change is refused and left as it
// was.
func TestListenSocketDirPrivate(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, root string) string // returns the socket directory
		err   string                                 // "" = made 0700 and listened
		mode  os.FileMode                            // the directory's mode afterwards
	}{
		{"missing: created 0700", func(t *testing.T, root string) string { return filepath.Join(root, "a", "b") }, "", 0o700},
		{"ours, 0755, with our files: made 0700", func(t *testing.T, root string) string {
			d := mkdir(t, root, "run", 0o755)
			writeFile(t, filepath.Join(d, "notes"))
			return d
		}, "", 0o700},
		{"ours, 0750, empty: made 0700", func(t *testing.T, root string) string { return mkdir(t, root, "run", 0o750) }, "", 0o700},
		{"already 0700", func(t *testing.T, root string) string { return mkdir(t, root, "run", 0o700) }, "", 0o700},
		{"shared (sticky): refused", func(t *testing.T, root string) string { return mkdir(t, root, "shared", 0o777|os.ModeSticky) },
			"is shared (sticky or world-writable), so toolsrv will not change its mode", 0o777 | os.ModeSticky},
		{"named toolsrv, sticky: ours to fix", func(t *testing.T, root string) string {
			return mkdir(t, root, "toolsrv", 0o777|os.ModeSticky)
		}, "", 0o700},
		{"the home directory: refused", func(t *testing.T, root string) string {
			d := mkdir(t, root, "home", 0o755)
			t.Setenv("HOME", d)
			return d
		}, "is your home directory", 0o755},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.setup(t, t.TempDir())
			l, err := Listen(t.Context(), Addr{"unix", filepath.Join(dir, "9p.sock")})
			if err == nil {
				l.Close()
			}
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("Listen = %v; want error containing %q", err, c.err)
			}
			fi, serr := os.Stat(dir)
			if serr != nil {
				t.Fatal(serr)
			}
			if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != c.mode {
				t.Errorf("mode afterwards %v, want %v", got, c.mode)
			}
		})
	}
}

// A socket directory of another user is refused (privateDir is told this
// user is someone else, so the test needs no second account).
func TestPrivateDirOtherUser(t *testing.T) {
	me := os.Geteuid()
	dir := mkdir(t, t.TempDir(), "theirs", 0o755)
	err := privateDir(dir, me+1)
	want := "belongs to uid " + strconv.Itoa(me) + ", not to this user (uid " + strconv.Itoa(me+1) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("privateDir = %v; want %q", err, want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("another user's directory was changed: %v %v", fi.Mode(), err)
	}
}

func mkdir(t *testing.T, root, name string, mode os.FileMode) string {
	t.Helper()
	d := filepath.Join(root, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
