package main

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// serve9P is a "toolsrv serve" of a test, on a Unix socket and a loopback
// TCP port.
type serve9P struct {
	unix, tcp string // addresses, unix:PATH and tcp:HOST:PORT
	home      string
	stderr    *syncBuffer
	pid       int
}

// startServe9P runs toolsrv serve --listen unix:… --listen tcp:127.0.0.1:0
// with HOME home (made when "") and env added, until the test ends; it
// returns once the server serves.
func startServe9P(t *testing.T, bin, home string, env []string, args ...string) *serve9P {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	sock := filepath.Join(t.TempDir(), "run", "9p.sock")
	bg := startBackgroundServer(t, bin, home, env, regexp.MustCompile(`listening on (tcp:127\.0\.0\.1:[0-9]+)`), "clients:",
		append([]string{"serve", "--listen", "unix:" + sock, "--listen", "tcp:127.0.0.1:0", "--no-cache"}, args...)...)
	return &serve9P{unix: "unix:" + sock, tcp: bg.ready[1], home: home, stderr: bg.stderr, pid: bg.pid}
}

// client runs "toolsrv 9p ARGS" with HOME home and env added.
func (s *serve9P) client(t *testing.T, bin, home string, env []string, args ...string) toolRun {
	t.Helper()
	return runToolsrvEnv(t, bin, append([]string{"HOME=" + home}, env...), "", append([]string{"9p"}, args...)...)
}

// call calls tool with args (JSON) through the Unix socket, in session s,
// agent a (made, and the tool loaded, as needed).
func (s *serve9P) call(t *testing.T, bin, tool, args string) toolRun {
	t.Helper()
	s.client(t, bin, s.home, nil, "--addr", s.unix, "mkdir", "session/s")
	s.client(t, bin, s.home, nil, "--addr", s.unix, "mkdir", "session/s/agent/a")
	if r := s.client(t, bin, s.home, nil, "--addr", s.unix, "write", "session/s/agent/a/ctl", "tool_load "+tool); r.code != 0 {
		t.Fatalf("tool_load %s: %s", tool, r.stderr)
	}
	return s.client(t, bin, s.home, nil, "--addr", s.unix, "write", "session/s/agent/a/call/"+tool, args)
}

// diodls runs diod's diodls against addr (tcp:HOST:PORT) with args;
// cred, when set, runs it as another user.
func diodls(t *testing.T, addr string, cred *syscall.Credential, args ...string) (string, error) {
	t.Helper()
	bin := testdeps.Program(t, testdeps.Diod, "diodls")
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, append([]string{"-s", strings.TrimPrefix(addr, "tcp:"), "-t", strconv.Itoa(int(safetyNet.Seconds()))}, args...)...)
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// serve --listen tcp: requires the token: toolsrv makes it (0600, in its
// private state directory), says the file's path, never the token; its
// own client sends it from there (or from --token-file, or
// $TOOLSRV_9P_TOKEN) and gets the tree; without it, or with a wrong one,
// toolsrv 9p and diodls are refused, from another uid too (as root).
func TestServeTCPToken(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	srv := startServe9P(t, bin, "", nil, "--tools", tools, "--workdir", mcpProject(t))
	file := filepath.Join(srv.home, ".local", "state", "toolsrv", "9p-token")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no token file made: %v", err)
	}
	token := strings.TrimSpace(string(data))
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(srv.stderr.String(), file) || strings.Contains(srv.stderr.String(), token) {
		t.Errorf("start-up: want the token file named, never the token:\n%s", srv.stderr)
	}
	mine := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(mine, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stranger := t.TempDir() // a HOME without the token file
	for _, c := range []struct {
		name  string
		home  string
		env   []string
		flags []string
		ok    bool
		want  string
	}{
		{"the default file", srv.home, nil, nil, true, "tools.json"},
		{"--token-file", stranger, nil, []string{"--token-file", mine}, true, "tools.json"},
		{"$TOOLSRV_9P_TOKEN", stranger, []string{"TOOLSRV_9P_TOKEN=" + token}, nil, true, "tools.json"},
		{"no token", stranger, nil, nil, false, "none was sent"},
		{"a wrong $TOOLSRV_9P_TOKEN", stranger, []string{"TOOLSRV_9P_TOKEN=wrong-token-0123456789"}, nil, false, "is not the server's"},
		{"the Unix socket needs none", stranger, nil, []string{"--addr", srv.unix}, true, "tools.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--addr", srv.tcp}, c.flags...)
			r := srv.client(t, bin, c.home, c.env, append(args, "ls", "/")...)
			if (r.code == 0) != c.ok || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want ok %v and %q", r.code, r.stdout, r.stderr, c.ok, c.want)
			}
			if !c.ok && (strings.Contains(r.stdout, "tools.json") || !strings.Contains(r.stderr, "--token-file")) {
				t.Errorf("a refusal lists the tree, or does not say where a token comes from: %q %q", r.stdout, r.stderr)
			}
		})
	}

	// diod's clients: the token as the attach name, from this user and
	// (as root) another.
	creds := []*syscall.Credential{nil}
	if os.Geteuid() == 0 {
		creds = append(creds, nobody(t))
	}
	for _, cred := range creds {
		for _, args := range [][]string{{}, {"-a", "/"}, {"-a", "wrong-token-0123456789abcdef"}} {
			if out, err := diodls(t, srv.tcp, cred, args...); err == nil || !strings.Contains(out, "Permission denied") || strings.Contains(out, "tools.json") {
				t.Errorf("diodls %v (as %v): %v, want a refusal:\n%s", args, cred, err, out)
			}
		}
	}
	if out, err := diodls(t, srv.tcp, nil, "-a", token); err != nil || !strings.Contains(out, "tools.json") || !strings.Contains(out, "session") {
		t.Errorf("diodls -a TOKEN: %v\n%s", err, out)
	}
	if strings.Contains(srv.stderr.String(), token) || !strings.Contains(srv.stderr.String(), "refusing a 9P attach over TCP") {
		t.Errorf("refusals: want them logged, without the token:\n%s", srv.stderr)
	}

	// The next start takes the same token.
	again := startServe9P(t, bin, srv.home, nil, "--tools", tools, "--workdir", mcpProject(t))
	if strings.Contains(again.stderr.String(), "made now") {
		t.Errorf("the second start made a new token:\n%s", again.stderr)
	}
	if out, err := diodls(t, again.tcp, nil, "-a", token); err != nil || !strings.Contains(out, "tools.json") {
		t.Errorf("the second start with the first start's token: %v\n%s", err, out)
	}
}

// What a tool can do about the token: nothing. $TOOLSRV_9P_TOKEN never
// reaches a tool's environment, nor can a tool that sees the host's
// processes read it from toolsrv's; a tool with network access that
// connects to the port gets nothing (it has no token, and cannot read the
// file toolsrv made); and a --token-file inside the calls' working
// directory makes that directory refused.
func TestServeTCPTokenSecrecy(t *testing.T) {
	bin := buildToolsrv(t)
	tools := t.TempDir()
	for name, meta := range map[string]string{
		"show_env":     `{"description": "print the environment", "cmd": "env"}`,
		"read_path":    `{"description": "print a file", "cmd": "cat \"$(jq -r .path)\"", "args": {"type": "object", "properties": {"path": {"type": "string"}}}}`,
		"proc_environ": `{"description": "print a process's environment", "hostProcesses": true, "cmd": "tr '\\0' '\\n' < /proc/$(jq -r .pid)/environ", "args": {"type": "object", "properties": {"pid": {"type": "integer"}}}}`,
		"list_9p": `{"description": "list the 9P tree over TCP", "network": true, "args": {"type": "object", "properties": {"addr": {"type": "string"}, "token_file": {"type": "string"}}},
			"cmd": "a=$(cat); f=$(printf %s \"$a\" | jq -r '.token_file // empty'); \"$TOOLSRV_BIN\" 9p --addr \"$(printf %s \"$a\" | jq -r .addr)\" ${f:+--token-file \"$f\"} ls / 2>&1"}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const envToken = "env-token-that-tools-must-never-see"
	srv := startServe9P(t, bin, "", []string{"TOOLSRV_9P_TOKEN=" + envToken}, "--tools", tools, "--workdir", mcpProject(t))
	if !strings.Contains(srv.stderr.String(), "TOKEN is $TOOLSRV_9P_TOKEN") {
		t.Errorf("start-up does not say the token is the variable's:\n%s", srv.stderr)
	}
	if r := srv.client(t, bin, t.TempDir(), []string{"TOOLSRV_9P_TOKEN=" + envToken}, "--addr", srv.tcp, "cat", "tools"); r.code != 0 || !strings.Contains(r.stdout, "list_9p") {
		t.Fatalf("with $TOOLSRV_9P_TOKEN's token: %d %s", r.code, r.stderr)
	}
	if r := srv.call(t, bin, "show_env", "{}"); r.code != 0 || !strings.Contains(r.stdout, "OLLIE_TOOLS_PATH=") || strings.Contains(r.stdout, envToken) || strings.Contains(r.stdout, "TOOLSRV_9P_TOKEN") {
		t.Errorf("a tool's environment (exit %d): want no token:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := srv.call(t, bin, "proc_environ", `{"pid": `+strconv.Itoa(srv.pid)+`}`); strings.Contains(r.stdout, envToken) || !strings.Contains(r.stdout, `"ok":false`) {
		t.Errorf("a tool read toolsrv's environment (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := srv.call(t, bin, "list_9p", `{"addr": "`+srv.tcp+`"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "refused the attach") || !strings.Contains(r.stdout, "none was sent") || strings.Contains(r.stdout, "tools.json") {
		t.Errorf("a network tool connecting over TCP (exit %d): want the attach refused:\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The token file toolsrv made, in its private state directory.
	made := startServe9P(t, bin, "", nil, "--tools", tools, "--workdir", mcpProject(t))
	file := filepath.Join(made.home, ".local", "state", "toolsrv", "9p-token")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(data))
	if r := made.call(t, bin, "read_path", `{"path": "`+file+`"}`); strings.Contains(r.stdout, token) || !strings.Contains(r.stdout, `"ok":false`) {
		t.Errorf("a sandboxed tool read the token file (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = made.call(t, bin, "list_9p", `{"addr": "`+made.tcp+`", "token_file": "`+file+`"}`)
	if strings.Contains(r.stdout, "tools.json") || strings.Contains(r.stdout, token) || !strings.Contains(r.stdout, "token file") {
		t.Errorf("a network tool sending the token file toolsrv made (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A --token-file inside the working directory: calls there are
	// refused, as with the usage history there.
	work := mcpProject(t)
	secret := filepath.Join(work, "secrets", "token")
	os.MkdirAll(filepath.Dir(secret), 0o700)
	if err := os.WriteFile(secret, []byte("file-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := startServe9P(t, bin, "", nil, "--tools", tools, "--workdir", work, "--token-file", secret)
	if !strings.Contains(inside.stderr.String(), "every call will be refused") {
		t.Errorf("start-up does not warn that calls will be refused:\n%s", inside.stderr)
	}
	if r := inside.call(t, bin, "read_path", `{"path": "`+secret+`"}`); strings.Contains(r.stdout, "file-token") || !strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("a call whose working directory holds the token file (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The flags: --token-file without a TCP address is a usage error, and a
// token that is too short, or a file others may read, is refused with
// what to do.
func TestServeTokenFlags(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	loose := filepath.Join(t.TempDir(), "token")
	os.WriteFile(loose, []byte("file-token-0123456789abcdef\n"), 0o644)
	os.Chmod(loose, 0o644)
	sock := "unix:" + filepath.Join(t.TempDir(), "9p.sock")
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{nil, []string{"--listen", sock, "--token-file", loose}, 2, "--token-file is for --listen tcp: only"},
		{[]string{"TOOLSRV_9P_TOKEN=short"}, []string{"--listen", "tcp:127.0.0.1:0"}, 1, "at least 16 characters"},
		{nil, []string{"--listen", "tcp:127.0.0.1:0", "--token-file", loose}, 1, "chmod 600"},
		{nil, []string{"--listen", "tcp:127.0.0.1:0", "--token-file", loose + ".none"}, 1, "does not exist"},
	} {
		r := runToolsrvEnv(t, bin, c.env, "", append([]string{"serve", "--tools", tools}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %v: exit %d, want %d with %q:\n%s", c.args, r.code, c.code, c.want, r.stderr)
		}
	}
	r := runToolsrvEnv(t, bin, nil, "", "9p", "--addr", sock, "--token-file", loose, "ls", "/")
	if r.code != 2 || !strings.Contains(r.stderr, "--token-file is for a tcp: address only") {
		t.Errorf("9p --token-file with a unix: address: exit %d:\n%s", r.code, r.stderr)
	}
}
