package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveTools is a small catalog for the serve and 9p tests.
func serveTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("weather.meta", `{"description":"Current weather forecast for a city","keywords":["rain","temperature"],"args":{"type":"object","properties":{"city":{"type":"string"}}},"cmd":"/bin/cat"}`)
	write("git_push.meta", `{"description":"Push the current git branch to its remote","tier":"cold","cmd":"/bin/true"}`)
	write("whoami.meta", `{"description":"Say which server, session and agent called","tier":"hot","readOnly":true,`+
		`"cmd":"printf '%s %s %s' \"$TOOLSRV_ADDR\" \"$OLLIE_SESSION_ID\" \"$OLLIE_UNAME\""}`)
	return dir
}

// startServe runs "toolsrv serve" until the test ends and returns the
// address clients use.
func startServe(t *testing.T, extra ...string) (addr string, stderr *syncBuffer) {
	addr, stderr, _ = startServeIn(t, serveTools(t), extra...)
	return addr, stderr
}

func startServeIn(t *testing.T, tools string, extra ...string) (addr string, stderr *syncBuffer, toolsDir string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "run", "9p.sock")
	agents := filepath.Join(dir, "agents")
	os.MkdirAll(agents, 0o755)
	os.WriteFile(filepath.Join(agents, "coder.json"), []byte(`{"autoLoad":["whoami"],"allowTools":["whoami","git_push"]}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &syncBuffer{}, stderr: stderr,
		getenv: func(k string) string {
			if k == "HOME" {
				return dir
			}
			return ""
		}}
	// Sessions work in a project directory inside the (fake) home: the home
	// directory itself is refused as a working directory.
	work := filepath.Join(dir, "project")
	os.MkdirAll(work, 0o755)
	args := append([]string{"--tools", tools, "--listen", "unix:" + sock, "--no-cache", "--agents", agents,
		"--workdir", work, "--allow-unsandboxed"}, extra...)
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, env, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d:\n%s", code, stderr)
			}
		case <-time.After(safetyNet):
			t.Errorf("serve did not stop within %s of its context ending", safetyNet)
		}
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket left behind after shutdown: %v", err)
		}
	})
	deadline := time.Now().Add(safetyNet)
	for !strings.Contains(stderr.String(), "clients:") {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %s: %v %v; want mode 0600", sock, fi.Mode(), err)
	}
	return "unix:" + sock, stderr, tools
}

// run9PCmd runs "toolsrv 9p" with $TOOLSRV_ADDR set to addr.
func run9PCmd(t *testing.T, addr, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "TOOLSRV_ADDR" {
			return addr
		}
		return ""
	}}
	code := run9P(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func TestServeAnd9PClient(t *testing.T) {
	addr, _ := startServe(t)
	steps := []struct {
		stdin    string
		args     []string
		code     int
		out, err string // substrings ("" = anything)
	}{
		{"", []string{"ls", "/"}, 0, "ctl\nerr\nerrors\nrank\nrank.json\nrevision\nsession/\ntools\ntools.json\n", ""},
		{"", []string{"cat", "tools"}, 0, "git_push\tcold\tPush the current git branch to its remote\n", ""},
		{"", []string{"cat", "revision"}, 0, "1\n", ""},
		{"", []string{"mkdir", "session/s1"}, 0, "", ""},
		{"", []string{"mkdir", "session/s1/agent/coder"}, 0, "", ""},
		{"", []string{"cat", "session/s1/agent/coder/tools"}, 0, "whoami\thot\t", ""},
		// Loading through tools (standard input) and ctl (argument).
		{"git_push\n", []string{"write", "session/s1/agent/coder/tools"}, 0, "", ""},
		{"", []string{"cat", "session/s1/agent/coder/tools"}, 0, "git_push\tcold\t", ""},
		// Refusals print err's reason and exit 1.
		{"", []string{"write", "session/s1/agent/coder/ctl", "tool_load weather"}, 1, "", "tool weather is not allowed for agent coder"},
		{"", []string{"write", "session/s1/agent/coder/ctl", "tool_load nope"}, 1, "", "unknown tool: nope"},
		{"", []string{"write", "tools", "x"}, 1, "", "/tools is read-only"},
		{"", []string{"mkdir", "session/s1"}, 1, "", "session s1 already exists"},
		{"", []string{"cat", "session/zz/agent"}, 1, "", "no such file or directory"},
		// Transactions print the answer.
		{"", []string{"write", "rank", "will it rain tomorrow?"}, 0, "weather\t", ""},
		{"", []string{"write", "session/s1/agent/coder/call/whoami", "{}"}, 0, `"output":"` + addr + ` s1 coder"`, ""},
		{"", []string{"write", "session/s1/agent/coder/ctl", "turn"}, 0, "", ""},
		{"", []string{"rm", "session/s1"}, 0, "", ""},
		{"", []string{"ls", "session"}, 0, "", ""},
	}
	for _, s := range steps {
		code, out, errs := run9PCmd(t, addr, s.stdin, s.args...)
		if code != s.code || !strings.Contains(out, s.out) || !strings.Contains(errs, s.err) {
			t.Fatalf("toolsrv 9p %s: exit %d, stdout %q, stderr %q; want exit %d, stdout ∋ %q, stderr ∋ %q",
				strings.Join(s.args, " "), code, out, errs, s.code, s.out, s.err)
		}
	}
	// The call answer is one JSON object.
	run9PCmd(t, addr, "", "mkdir", "session/s2")
	run9PCmd(t, addr, "", "mkdir", "session/s2/agent/coder")
	_, out, _ := run9PCmd(t, addr, "", "write", "session/s2/agent/coder/call/whoami", "")
	var ans struct {
		Tool     string `json:"tool"`
		ExitCode int    `json:"exitCode"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil || ans.Tool != "whoami" || ans.Output != addr+" s2 coder" {
		t.Fatalf("call answer %q: %+v %v", out, ans, err)
	}
}

func TestServeFlags(t *testing.T) {
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--listen", "tcp:0.0.0.0:0"}, 2, "not a loopback address"},
		{[]string{"--listen", "udp:1.2.3.4:5"}, 2, "unix:PATH or tcp:HOST:PORT"},
		{[]string{"--warm-turns", "0"}, 2, "--warm-turns"},
		{[]string{"extra"}, 2, "Usage: toolsrv serve"},
	}
	for _, c := range cases {
		var errb bytes.Buffer
		env := &cliEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(string) string { return "" }}
		code := runServe(context.Background(), env, append([]string{"--tools", t.TempDir()}, c.args...))
		if code != c.code || !strings.Contains(errb.String(), c.err) {
			t.Errorf("serve %v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.err)
		}
	}
}

func TestServeRemoteNeedsFlagAndWarns(t *testing.T) {
	_, stderr := startServe(t, "--listen", "tcp:0.0.0.0:0", "--allow-remote")
	if !strings.Contains(stderr.String(), "WARNING: serving on tcp:0.0.0.0:0, which other machines may reach: the token crosses the network in clear text") ||
		!strings.Contains(stderr.String(), "TCP clients must send the token as their attach name") {
		t.Fatalf("no warning, or no word of the token:\n%s", stderr)
	}
}

func Test9PClientUsage(t *testing.T) {
	none := "unix:" + filepath.Join(t.TempDir(), "none.sock")
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"frob", "x"}, 2, `unknown operation "frob"`},
		{[]string{"cat"}, 2, "Usage: toolsrv 9p"},
		{[]string{"cat", "a", "b"}, 2, "wrong number of arguments"},
		{[]string{"cat", "tools"}, 1, "is toolsrv serve running?"},
		{[]string{"--addr", "bogus", "cat", "tools"}, 1, "unix:PATH or tcp:HOST:PORT"},
	}
	for _, c := range cases {
		code, _, errs := run9PCmd(t, none, "", c.args...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("9p %v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.err)
		}
	}
}

// TestServeFollowsToolChanges: serve watches the tool directories; a new
// .meta shows up in tools and bumps revision, a removed loaded tool is
// unloaded with a note in the agent's ctl.
func TestServeFollowsToolChanges(t *testing.T) {
	addr, _, tools := startServeIn(t, serveTools(t))
	run9PCmd(t, addr, "", "mkdir", "session/s")
	run9PCmd(t, addr, "", "mkdir", "session/s/agent/a")
	if code, _, errs := run9PCmd(t, addr, "", "write", "session/s/agent/a/tools", "git_push"); code != 0 {
		t.Fatal(errs)
	}
	_, rev, _ := run9PCmd(t, addr, "", "cat", "revision")
	if err := os.WriteFile(filepath.Join(tools, "translate.meta"), []byte(`{"description":"Translate text","cmd":"/bin/cat"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(tools, "git_push.meta")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(safetyNet)
	await9P(t, addr, deadline, "tools did not follow the directory", func(out string) bool {
		return strings.Contains(out, "translate\twarm\tTranslate text") && !strings.Contains(out, "git_push")
	}, "cat", "tools")
	if _, now, _ := run9PCmd(t, addr, "", "cat", "revision"); now == rev {
		t.Fatalf("revision still %q", now)
	}
	_, ctl, _ := run9PCmd(t, addr, "", "cat", "session/s/agent/a/ctl")
	if !strings.Contains(ctl, "unloaded git_push: removed from the catalog") {
		t.Fatalf("ctl = %q", ctl)
	}
	// The index follows too: the new tool ranks. (The index is updated
	// after the registry has published the catalog that tools lists, and
	// its calibration's probes are ranked again after a change of this
	// size: a rank right after the listing may still see the old index.)
	await9P(t, addr, deadline, "rank after the change", func(out string) bool {
		return strings.Contains(out, "translate\t")
	}, "write", "rank", "translate this text")
}

// await9P runs "toolsrv 9p ARGS" against addr until ok accepts its output,
// failing with what and the last output once deadline has passed.
func await9P(t *testing.T, addr string, deadline time.Time, what string, ok func(string) bool, args ...string) {
	t.Helper()
	for {
		_, out, _ := run9PCmd(t, addr, "", args...)
		if ok(out) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q", what, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serve -v logs connections, rank requests, agent profiles, calls and
// catalog changes; without -v it logs none of them.
func TestServeVerbose(t *testing.T) {
	records := []string{
		`msg="9P client connected"`,
		`msg="9P client disconnected"`,
		// (What is offered is the ranking's business; the record names it.)
		`msg=rank agent="" offered=`,
		`msg="agent profile" agent=coder autoLoad=[whoami] allowTools="[whoami git_push]"`,
		`msg=call tool=whoami session=s1 agent=coder exit=0`,
		`msg="catalog changed"`,
		`updated=[translate]`,
		`msg="tools loaded"`,
	}
	for _, verbose := range []bool{true, false} {
		t.Run(fmt.Sprintf("verbose=%v", verbose), func(t *testing.T) {
			var extra []string
			if verbose {
				extra = []string{"-v"}
			}
			addr, stderr, tools := startServeIn(t, serveTools(t), extra...)
			for _, step := range [][]string{
				{"write", "rank", "will it rain tomorrow?"},
				{"mkdir", "session/s1"},
				{"mkdir", "session/s1/agent/coder"},
				{"write", "session/s1/agent/coder/call/whoami", "{}"},
			} {
				if code, _, errs := run9PCmd(t, addr, "", step...); code != 0 {
					t.Fatalf("9p %v: %s", step, errs)
				}
			}
			if err := os.WriteFile(filepath.Join(tools, "translate.meta"), []byte(`{"description":"Translate text","cmd":"/bin/cat"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			// The change shows in the tree once the registry has it; the
			// log record is written before the index follows.
			deadline := time.Now().Add(safetyNet)
			for {
				_, out, _ := run9PCmd(t, addr, "", "cat", "tools")
				if strings.Contains(out, "translate") && (!verbose || strings.Contains(stderr.String(), `msg="catalog changed"`)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the new tool never showed:\n%s", stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			log := stderr.String()
			for _, r := range records {
				if got := strings.Contains(log, r); got != verbose {
					t.Errorf("record %s logged: %v, want %v:\n%s", r, got, verbose, log)
				}
			}
		})
	}
}

// "toolsrv 9p" returns when its context ends (SIGINT, SIGTERM) even if the
// server accepted the connection and never answers.
func Test9PClientInterrupted(t *testing.T) {
	dir, err := os.MkdirTemp("", "9p")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "silent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept() // and never read it
		if err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- run9P(ctx, env, []string{"--addr", "unix:" + sock, "cat", "tools"}) }()
	c := <-accepted
	defer c.Close()
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "interrupted while waiting for the server at unix:"+sock) {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(safetyNet):
		t.Fatalf("toolsrv 9p still blocked %s after its context ended", safetyNet)
	}
}
