// Package sshtest starts a throwaway OpenSSH server on loopback for tests
// of toolsrv over ssh, and describes "remote hosts" behind it: a
// directory tree of their own (tools, $PATH, runtime, cache, home) that a
// wrapper script gives the remote toolsrv, so that the remote's
// environment differs from the test's.
//
// The server is the system's sshd on a free port, with a host key and a
// user key made for it, logging in as the user running the test (as root
// or not: an sshd that is not root can only log in as its own user). A
// missing sshd, ssh or ssh-keygen skips the test, or fails it where
// TOOLSRV_TEST_REQUIRE names sshd (as in CI; see package testdeps).
package sshtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// Server is a running sshd.
type Server struct {
	// Dir holds its keys, configuration and log.
	Dir  string
	Port int
	// SSHCommand is the value of TOOLSRV_SSH_COMMAND that reaches it
	// (ssh with a configuration of its own: the user key, no host key
	// checks, no prompts).
	SSHCommand string
	// Addr is the toolsrv address of the logged-in user there:
	// ssh:127.0.0.1:PORT.
	Addr string
}

// Tool finds a program of OpenSSH; where it is missing, the test skips
// (or fails: testdeps.SSHD).
func Tool(t testing.TB, name string) string {
	t.Helper()
	return testdeps.Program(t, testdeps.SSHD, name)
}

// Start starts an sshd for the test; it is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	sshd, ssh, keygen := Tool(t, "sshd"), Tool(t, "ssh"), Tool(t, "ssh-keygen")
	dir, err := os.MkdirTemp("", "sshtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, k := range []string{"host_key", "user_key"} {
		if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "sshtest", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "authorized_keys"), string(pub), 0o600)
	if os.Geteuid() == 0 {
		// sshd as root separates privileges into this directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd needs /run/sshd: %v", err)
		}
	}
	s := &Server{Dir: dir}
	var lastErr error
	for try := 0; try < 5; try++ {
		s.Port = freePort(t)
		if lastErr = s.start(t, sshd); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("starting sshd: %v", lastErr)
	}
	cfg := filepath.Join(dir, "ssh_config")
	write(t, cfg, fmt.Sprintf(`Host *
  IdentityFile %s
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 20
  ControlMaster no
`, filepath.Join(dir, "user_key")), 0o600)
	s.SSHCommand = ssh + " -F " + cfg
	s.Addr = fmt.Sprintf("ssh:127.0.0.1:%d", s.Port)
	// Logged in once, so a test's first connection is like the others.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, ssh, "-F", cfg, "-p", strconv.Itoa(s.Port), "127.0.0.1", "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("ssh to the test sshd: %v\n%s\nsshd's log:\n%s", err, out, s.Log())
	}
	return s
}

// start runs sshd on s.Port and waits until it accepts connections.
func (s *Server) start(t testing.TB, sshd string) error {
	conf := filepath.Join(s.Dir, "sshd_config")
	write(t, conf, fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
UseDNS no
MaxStartups 200
MaxSessions 200
LogLevel VERBOSE
`, s.Port, filepath.Join(s.Dir, "host_key"), filepath.Join(s.Dir, "sshd.pid"), filepath.Join(s.Dir, "authorized_keys")), 0o600)
	logf, err := os.OpenFile(filepath.Join(s.Dir, "sshd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(sshd, "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	logf.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited (%v):\n%s", err, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("sshd did not listen on port %d within 30s:\n%s", s.Port, s.Log())
		}
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	return nil
}

// Log is what sshd logged.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// Host is a remote host's own world behind the sshd: the directories its
// toolsrv uses, and the wrapper script that runs it there.
type Host struct {
	// Root holds everything: tools/, bin/ (first on its $PATH), run/
	// ($XDG_RUNTIME_DIR: the socket), cache/, state/ (the server's log),
	// home/, config/, tmp/ ($TMPDIR: the server's working directory).
	Root string
	// Cmd is the TOOLSRV_REMOTE_CMD that runs toolsrv there.
	Cmd string
	// Down, when it exists, makes Cmd fail (exit 1) as a host whose
	// toolsrv cannot be reached would.
	Down string
}

// NewHost makes a remote host's world in a directory of its own, running
// toolsrv from bin, with env added to its environment. Its server (started
// there by toolsrv serve --stdio) is stopped when the test ends.
func NewHost(t testing.TB, bin string, env map[string]string) *Host {
	t.Helper()
	root, err := os.MkdirTemp("", "remote-")
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{Root: root, Down: filepath.Join(root, "down")}
	for _, d := range []string{"tools", "bin", "run", "cache", "state", "home", "config", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{
		"PATH":             filepath.Join(root, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME":             filepath.Join(root, "home"),
		"XDG_RUNTIME_DIR":  filepath.Join(root, "run"),
		"XDG_CACHE_HOME":   filepath.Join(root, "cache"),
		"XDG_STATE_HOME":   filepath.Join(root, "state"),
		"XDG_CONFIG_HOME":  filepath.Join(root, "config"),
		"OLLIE_TOOLS_PATH": filepath.Join(root, "tools"),
		"TMPDIR":           filepath.Join(root, "tmp"),
	}
	for k, v := range env {
		vars[k] = v
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "if [ -e %s ]; then echo 'this host is down (test)' >&2; exit 1; fi\n", shellQuote(h.Down))
	for _, k := range sortedKeys(vars) {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(vars[k]))
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(bin))
	h.Cmd = filepath.Join(root, "toolsrv-remote")
	write(t, h.Cmd, b.String(), 0o755)
	t.Cleanup(func() {
		h.StopServer(t)
		os.RemoveAll(root)
	})
	return h
}

// ServerPID is the pid of the server toolsrv serve --stdio started there,
// 0 if none is known.
func (h *Host) ServerPID() int {
	b, err := os.ReadFile(filepath.Join(h.Root, "run", "toolsrv", "serve.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// StopServer kills the server running there, if any, and waits until it
// is gone.
func (h *Host) StopServer(t testing.TB) {
	pid := h.ServerPID()
	if pid <= 0 {
		return
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			t.Errorf("the remote server %d did not end", pid)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(filepath.Join(h.Root, "run", "toolsrv", "serve.pid"))
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// ServerLog is the log of the server started there.
func (h *Host) ServerLog() string {
	b, _ := os.ReadFile(filepath.Join(h.Root, "state", "toolsrv", "serve.log"))
	return string(b)
}

// WriteTool writes tools/NAME.meta there.
func (h *Host) WriteTool(t testing.TB, name, meta string) {
	t.Helper()
	p := filepath.Join(h.Root, "tools", name+".meta")
	tmp := p + ".tmp"
	write(t, tmp, meta, 0o644)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// WriteBin writes an executable bin/NAME there (on that host's $PATH
// only).
func (h *Host) WriteBin(t testing.TB, name, script string) string {
	t.Helper()
	p := filepath.Join(h.Root, "bin", name)
	write(t, p, script, 0o755)
	return p
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func write(t testing.TB, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
