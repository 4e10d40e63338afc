package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
)

func init() {
	// runCall re-executes os.Executable() (this test binary) as the sandbox
	// helper, exactly as the real binary's main does.
	if len(os.Args) > 1 && os.Args[1] == sandboxHelperArg {
		os.Exit(runSandboxHelper(os.Args[2:]))
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// callTools writes a small tools directory for the call and broker tests.
func callTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("greet.meta", `{"description":"greets","args":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}`, 0o644)
	write("greet", "#!/bin/sh\nname=$(sed 's/.*\"name\":\"\\([^\"]*\\)\".*/\\1/')\necho \"{\\\"content\\\":[{\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"hello $name\\\"}]}\"\necho hello > greeted.txt\n", 0o755)
	write("fails.meta", `{"description":"fails","cmd":"echo 'no such widget' >&2; exit 4"}`, 0o644)
	write("sleeper.meta", `{"description":"sleeps","cmd":"sleep 30"}`, 0o644)
	write("escalate.meta", `{"description":"needs the machine","bypass":true,"cmd":"touch bypassed; echo ran"}`, 0o644)
	write("chatty.meta", `{"description":"talks too much","cmd":"head -c 5000 /dev/zero | tr '\\0' o; head -c 3000 /dev/zero | tr '\\0' e >&2"}`, 0o644)
	return dir
}

func runCallCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := runCall(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func TestCallCommand(t *testing.T) {
	tools := callTools(t)
	work := t.TempDir()
	base := []string{"--tools", tools, "--cwd", work}
	cases := []struct {
		name     string
		stdin    string
		args     []string
		code     int
		out, err string // substrings
	}{
		{"success prints stdout", "", []string{"greet", `{"name":"ada"}`}, 0, `"text":"hello ada"`, ""},
		{"arguments from stdin", `{"name":"bob"}`, []string{"greet", "-"}, 0, "hello bob", ""},
		{"invalid arguments list every violation", "", []string{"greet", `{"name":1,"x":[}`}, 1, "", "not valid JSON"},
		{"missing required", "", []string{"greet", `{}`}, 1, "", "name"},
		{"tool failure carries stderr", "", []string{"fails"}, 1, "", "no such widget\ntoolsrv call: tool fails failed (exit status 4)"},
		{"timeout", "", []string{"--timeout", "200ms", "sleeper"}, 1, "", "timed out"},
		{"unknown tool", "", []string{"nope"}, 1, "", "unknown tool: nope"},
		{"bypass without broker names the flag", "", []string{"escalate"}, 1, "", "toolsrv call --bypass-socket PATH"},
		{"flags after the tool name", "", []string{"greet", "--timeout", "2m", `{"name":"eve"}`}, 0, "hello eve", ""},
		{"flags after the arguments", "", []string{"greet", `{"name":"eve"}`, "--json"}, 0, `"ok": true`, ""},
		{"usage", "", []string{}, 2, "", "Usage: toolsrv call"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 0 {
				args = append(append([]string(nil), base...), args...)
			}
			code, out, errOut := runCallCmd(t, tc.stdin, args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(work, "greeted.txt")); string(b) != "hello\n" {
		t.Errorf("greet did not write in --cwd: %q", b)
	}
	if _, err := os.Stat(filepath.Join(work, "bypassed")); err == nil {
		t.Error("the bypass tool ran without approval")
	}
}

// A truncated call says so in one line on stderr (the runner's own log
// record used to repeat it).
func TestCallTruncatedOneLine(t *testing.T) {
	tools := callTools(t)
	code, out, errOut := runCallCmd(t, "", "--tools", tools, "--cwd", t.TempDir(), "--max-output", "100", "chatty")
	if code != 0 || out != strings.Repeat("o", 100) {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	rest, found := strings.CutPrefix(errOut, strings.Repeat("e", 100))
	if !found {
		t.Fatalf("stderr does not start with the tool's first 100 bytes of standard error: %q", errOut)
	}
	want := "toolsrv call: output truncated: the tool wrote 5000 bytes of standard output and 3000 of standard error; the first 100 of each are kept (--max-output)\n"
	if rest != want {
		t.Errorf("after the tool's stderr:\n%q\nwant exactly one line:\n%q", rest, want)
	}
}

func TestCallCommandJSON(t *testing.T) {
	tools := callTools(t)
	work := t.TempDir()
	code, out, _ := runCallCmd(t, "", "--tools", tools, "--cwd", work, "--json", "greet", `{"name":"ada"}`)
	var got engine.CallResult
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	var content bytes.Buffer
	json.Compact(&content, got.Content)
	if !got.OK || got.Tool != "greet" || content.String() != `[{"type":"text","text":"hello ada"}]` || got.Unsandboxed || got.ExitCode != 0 {
		t.Errorf("%+v", got)
	}
	code, out, _ = runCallCmd(t, "", "--tools", tools, "--cwd", work, "--json", "fails")
	var failed engine.CallResult
	if err := json.Unmarshal([]byte(out), &failed); err != nil || code != 1 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if failed.OK || failed.Kind != "tool failed" || failed.ExitCode != 4 || failed.Stderr != "no such widget\n" {
		t.Errorf("%+v", failed)
	}
}

// TestBrokerCommand runs "toolsrv broker" with a pipe as its terminal and
// "toolsrv call" of a bypass tool against it: allow once, deny, end of input.
func TestBrokerCommand(t *testing.T) {
	tools := callTools(t)
	work := t.TempDir()
	sockDir, err := os.MkdirTemp("", "brk")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "bypass.sock")

	typed, typing := io.Pipe()
	var screen syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	brokerDone := make(chan int)
	go func() {
		env := &cliEnv{stdin: typed, stdout: &screen, stderr: &screen, getenv: func(string) string { return "" }}
		brokerDone <- runBroker(ctx, env, []string{"--socket", socket})
	}()
	waitUntil(t, func() bool { return strings.Contains(screen.String(), "listening on") })
	if fi, err := os.Stat(socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v mode %v", err, fi)
	}

	call := func() (int, string, string) {
		return runCallCmd(t, "", "--tools", tools, "--cwd", work, "--bypass-socket", socket, "--session", "s9", "--agent", "coder", "escalate")
	}
	answer := func(line string, prompts int) {
		// Runs in its own goroutine: no t.Fatal here; a missing prompt
		// shows up as the call's failure.
		deadline := time.Now().Add(safetyNet)
		for strings.Count(screen.String(), "allow once?") < prompts && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		io.WriteString(typing, line)
	}

	go answer("a\n", 1)
	code, out, errOut := call()
	if code != 0 || out != "ran\n" || !strings.Contains(errOut, "UNSANDBOXED") {
		t.Fatalf("approved call: exit %d stdout %q stderr %q", code, out, errOut)
	}
	if s := screen.String(); !strings.Contains(s, `tool "escalate"`) || !strings.Contains(s, "session:   s9  agent: coder") || !strings.Contains(s, "workdir:   "+work) {
		t.Errorf("the broker did not show the request:\n%s", s)
	}
	os.Remove(filepath.Join(work, "bypassed"))

	go answer("d\n", 2)
	code, _, errOut = call()
	if code != 1 || !strings.Contains(errOut, "denied by the approval broker") {
		t.Fatalf("denied call: exit %d stderr %q", code, errOut)
	}
	typing.Close() // the person leaves: no more input
	code, _, errOut = call()
	if code != 1 || !strings.Contains(errOut, "no more input") {
		t.Fatalf("call after end of input: exit %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "bypassed")); err == nil {
		t.Error("a denied bypass tool ran")
	}
	cancel()
	if code := <-brokerDone; code != 0 {
		t.Errorf("broker exit %d: %s", code, screen.String())
	}
	if _, err := os.Stat(socket); err == nil {
		t.Error("the broker left its socket behind")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(safetyNet)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", safetyNet)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// "toolsrv call" starts its sandbox helper while it initialises (package
// early) and runs the call on it: the same outcome as with a helper
// started for the call (TOOLSRV_PRESTART=0), for a call that succeeds and
// one that fails; and a call that never reaches a tool (an unknown name)
// leaves no helper behind.
func TestCallPrestartsItsHelper(t *testing.T) {
	bin := buildToolsrv(t)
	tools := t.TempDir()
	writeFile(t, filepath.Join(tools, "hello.meta"), `{"description":"greets","cmd":"echo hello from $PWD; env | grep -c ."}`)
	writeFile(t, filepath.Join(tools, "fails.meta"), `{"description":"fails","cmd":"echo broken >&2; exit 3"}`)
	work := t.TempDir()
	cases := []struct {
		tool     string
		wantCode int
		want     string // in stdout or stderr
	}{
		{"hello", 0, "hello from " + work},
		{"fails", 1, "exit status 3"},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			var outs [2]toolRun
			for i, prestart := range []string{"1", "0"} {
				r := runToolsrvEnv(t, bin, []string{"TOOLSRV_PRESTART=" + prestart}, "", "call", "-v", "-v", "--tools", tools, "--cwd", work, c.tool)
				if r.code != c.wantCode || !strings.Contains(r.stdout+r.stderr, c.want) {
					t.Fatalf("TOOLSRV_PRESTART=%s: exit %d, want %d with %q:\n%s\n%s", prestart, r.code, c.wantCode, c.want, r.stdout, r.stderr)
				}
				wantLog := "prestarted=" + map[string]string{"1": "true", "0": "false"}[prestart]
				if !strings.Contains(r.stderr, wantLog) {
					t.Errorf("TOOLSRV_PRESTART=%s: the log does not say %s:\n%s", prestart, wantLog, r.stderr)
				}
				outs[i] = r
			}
			if outs[0].stdout != outs[1].stdout || outs[0].code != outs[1].code {
				t.Errorf("on the prestarted helper: %q (exit %d); on a fresh one: %q (exit %d)", outs[0].stdout, outs[0].code, outs[1].stdout, outs[1].code)
			}
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		r := runToolsrvEnv(t, bin, nil, "", "call", "--tools", tools, "--cwd", work, "nosuch")
		if r.code != 1 || !strings.Contains(r.stderr, "nosuch") {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		// Its helper was a child of the call's process: with that gone,
		// nothing of it may be left (Discard kills and reaps it; its
		// parent-death signal is the fallback).
		if left := orphanedHelpers(t, bin); len(left) > 0 {
			t.Errorf("prestarted helpers of %s left after the call: %v", bin, left)
		}
	})
}

// orphanedHelpers lists the prestarted sandbox helpers of the executable
// bin ("bin __sandbox -") whose toolsrv process is gone (those of calls
// other tests run at the same time have theirs). Only the command lines
// of processes with the name of bin are read: reading a process's command line
// waits while it forks, and another test's processes (a fork bomb) may be
// forking hard.
func orphanedHelpers(t *testing.T, bin string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(bin)
	if len(name) > 15 { // the kernel keeps 15 bytes of a command's name
		name = name[:15]
	}
	var out []string
	for _, e := range ents {
		dir := filepath.Join("/proc", e.Name())
		if comm, _ := os.ReadFile(filepath.Join(dir, "comm")); strings.TrimSpace(string(comm)) != name {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), bin+"\x00"+sandboxHelperArg+"\x00-\x00") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		if parent, err := os.Readlink(filepath.Join("/proc", fields[1], "exe")); err != nil || parent != bin {
			out = append(out, e.Name())
		}
	}
	return out
}

// A tool that prints and fails: call shows what it printed (its standard
// output, then its standard error) before why it failed, all on standard
// error; a long output shows its end, bounded, and says so.
func TestCallFailureShowsItsOutput(t *testing.T) {
	tools := t.TempDir()
	writeFile(t, filepath.Join(tools, "check_links.meta"), `{"description":"checks links","cmd":"echo 'checked 3 files'; printf 'a.md: broken link'; echo 'giving up' >&2; exit 1"}`)
	writeFile(t, filepath.Join(tools, "verbose_fail.meta"), `{"description":"prints a lot, then fails","cmd":"seq 1 20000; exit 3"}`)
	code, out, errOut := runCallCmd(t, "", "--tools", tools, "--cwd", t.TempDir(), "check_links")
	want := "checked 3 files\na.md: broken link\ngiving up\ntoolsrv call: tool check_links failed (exit status 1)\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit 1, no stdout, stderr\n%q", code, out, errOut, want)
	}
	code, out, errOut = runCallCmd(t, "", "--tools", tools, "--cwd", t.TempDir(), "verbose_fail")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 1 || out != "" || len(lines) < 3 || len(errOut) > failedOutputTail+200 {
		t.Fatalf("exit %d, stdout %q, %d bytes of stderr:\n%s", code, out, len(errOut), errOut)
	}
	if !strings.HasPrefix(lines[0], "toolsrv call: the tool's standard output, its last ") || !strings.HasSuffix(lines[0], " of 108894 bytes (--json has all of it):") {
		t.Errorf("first line %q, want what is shown of how much", lines[0])
	}
	if lines[len(lines)-2] != "20000" || lines[len(lines)-1] != "toolsrv call: tool verbose_fail failed (exit status 3)" {
		t.Errorf("last lines %q, want the output's end, then why it failed", lines[len(lines)-2:])
	}
	if _, err := strconv.Atoi(lines[1]); err != nil {
		t.Errorf("the output shown starts mid-line: %q", lines[1])
	}
}
