package ninep

import (
	"net"
	"os"
	"path/filepath"
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
