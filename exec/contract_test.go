package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

func TestArgumentsOnStdinEnvironmentAllowlist(t *testing.T) {
	f := newFixture(t)
	f.add("show", `{"description":"shows its input","args":{"type":"object","properties":{"q":{"type":"string"}}}}`,
		"#!/bin/sh\necho \"argc=$#\"\necho \"stdin=$(cat)\"\nenv | sort\n")
	getenv := func(k string) string {
		return map[string]string{"API_TOKEN": "leaked", "HOME": "/root", "LANG": "de_DE.UTF-8", "OLLAMA_HOST": "h:1"}[k]
	}
	r := f.runner(func(o *Options) {
		o.Getenv = getenv
		o.BypassSocket = "/run/broker.sock"
		o.PassEnv = []string{"OLLAMA_HOST"}
	})
	res := f.mustOK(f.call(r, "show", `{ "q" : "it's \"quoted\"; rm -rf /" }`))
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if lines[0] != "argc=0" {
		t.Errorf("arguments reached argv: %q", lines[0])
	}
	if lines[1] != `stdin={"q":"it's \"quoted\"; rm -rf /"}` {
		t.Errorf("stdin: %q", lines[1])
	}
	env := map[string]string{}
	for _, l := range lines[2:] {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	want := map[string]string{
		"PWD": f.work, "OLLIE_TOOLS_PATH": f.tools, "OLLIE_BYPASS_SOCKET": "/run/broker.sock",
		"OLLIE_SESSION_ID": "s1", "OLLIE_UNAME": "a1", "OLLIE_TOOL": "show", "LANG": "de_DE.UTF-8",
		"PATH": toolPATH, "OLLAMA_HOST": "h:1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if env["HOME"] == "/root" || env["HOME"] != env["TMPDIR"] || !strings.HasPrefix(env["HOME"], os.TempDir()) {
		t.Errorf("HOME %q TMPDIR %q: want the call's private temp dir", env["HOME"], env["TMPDIR"])
	}
	if _, ok := env["API_TOKEN"]; ok {
		t.Error("API_TOKEN leaked into the tool's environment")
	}
	// sh itself adds a few (SHLVL, OLDPWD...); anything else came from us.
	allowed := map[string]bool{"HOME": true, "TMPDIR": true, "SHLVL": true, "OLDPWD": true, "_": true}
	for k := range env {
		if _, ok := want[k]; !ok && !allowed[k] {
			t.Errorf("unexpected variable %s=%q", k, env[k])
		}
	}
	if exists(env["TMPDIR"]) {
		t.Error("the call's temp dir was not removed")
	}
}

func TestInvalidArgumentsNeverStart(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.work, "started")
	f.add("strict", `{"description":"strict","args":{"type":"object","required":["path","n"],"additionalProperties":false,
		"properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}}}}`,
		fmt.Sprintf("#!/bin/sh\ntouch %s\n", marker))
	r := f.runner(nil)
	for _, tc := range []struct {
		args string
		want []string // all must appear in the message
	}{
		{`{"path":3,"n":0,"extra":true}`, []string{"path", "n", "extra"}},
		{`{}`, []string{"path", "n"}},
		{`[1,2]`, []string{"object"}},
		{`{"path":`, []string{"not valid JSON"}},
	} {
		_, err := f.call(r, "strict", tc.args)
		ce := wantKind(t, err, ErrInvalidArgs)
		for _, w := range tc.want {
			if !strings.Contains(ce.Error(), w) {
				t.Errorf("%s: message %q lacks %q", tc.args, ce.Error(), w)
			}
		}
		if ce.Result != nil {
			t.Errorf("%s: a result although nothing may run", tc.args)
		}
	}
	if exists(marker) {
		t.Fatal("the tool started with invalid arguments")
	}
	f.mustOK(f.call(r, "strict", `{"path":"a","n":2}`))
	if !exists(marker) {
		t.Fatal("valid call did not run the tool")
	}
}

func TestResultContentAndFailures(t *testing.T) {
	f := newFixture(t)
	f.add("structured", `{"description":"structured","cmd":"echo '{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}'"}`, "")
	f.add("plain", `{"description":"plain","cmd":"echo '{\"contents\":1}'"}`, "")
	f.add("failing", `{"description":"fails","cmd":"echo partial; echo 'disk on fire' >&2; exit 3"}`, "")
	r := f.runner(nil)
	res := f.mustOK(f.call(r, "structured", `{}`))
	if string(res.Content) != `[{"type":"text","text":"hi"}]` {
		t.Errorf("content %s", res.Content)
	}
	res = f.mustOK(f.call(r, "plain", `{}`))
	if res.Content != nil || string(res.Stdout) != "{\"contents\":1}\n" {
		t.Errorf("plain: content %s stdout %q", res.Content, res.Stdout)
	}
	res, err := f.call(r, "failing", `{}`)
	ce := wantKind(t, err, ErrExit)
	if res == nil || res.ExitCode != 3 || ce.Result != res || !strings.Contains(ce.Error(), "exit status 3: disk on fire") {
		t.Errorf("failing: res %+v err %v", res, err)
	}
}

// A helper that ends without reporting how the tool ended failed itself
// (a fatal error of its Go runtime: a fork bomb took the threads it
// needed): its exit status is not the tool's, and the call, or the
// started process, says so. A helper that reports passes the tool's
// status on.
func TestHelperThatDiesWithoutReport(t *testing.T) {
	for _, tc := range []struct {
		name, helper string
		kind         error
		want         string
	}{
		{"unreported", "#!/bin/sh\nexit 2\n", ErrSandbox, "sandbox helper ended with exit status 2 without reporting"},
		{"reported", "#!/bin/sh\necho '{\"exit\":2}' >&3\nexit 2\n", ErrExit, "exit status 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			helper := filepath.Join(t.TempDir(), "helper")
			if err := os.WriteFile(helper, []byte(tc.helper), 0o755); err != nil {
				t.Fatal(err)
			}
			f.add("tool", `{"description":"a tool","cmd":"true"}`, "")
			r := f.runner(func(o *Options) { o.SelfExe = helper })
			_, err := f.call(r, "tool", `{}`)
			if ce := wantKind(t, err, tc.kind); !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("call: error %q, want it to say %q", ce.Error(), tc.want)
			}
			p, err := r.Start(context.Background(), ProcessSpec{Name: "server", Argv: []string{"/bin/true"}})
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			var ce *CallError
			if err := p.Err(); err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ce) != (tc.kind == ErrSandbox) {
				t.Errorf("started process: error %v, want it to say %q (a sandbox error: %v)", err, tc.want, tc.kind == ErrSandbox)
			}
			p.Stop(0)
		})
	}
}

func TestOutputCap(t *testing.T) {
	f := newFixture(t)
	f.add("chatty", `{"description":"a lot of output","cmd":"head -c 3000000 /dev/zero; head -c 5000 /dev/zero >&2"}`, "")
	f.add("quiet", `{"description":"little output","cmd":"printf 1234567890"}`, "")
	r := f.runner(func(o *Options) { o.OutputCap = 10000 })
	res := f.mustOK(f.call(r, "chatty", `{}`))
	if !res.Truncated || len(res.Stdout) != 10000 || res.StdoutBytes != 3000000 {
		t.Errorf("stdout kept %d of %d, truncated %v", len(res.Stdout), res.StdoutBytes, res.Truncated)
	}
	if len(res.Stderr) != 5000 || res.StderrBytes != 5000 {
		t.Errorf("stderr kept %d of %d", len(res.Stderr), res.StderrBytes)
	}
	res = f.mustOK(f.call(f.runner(func(o *Options) { o.OutputCap = 10 }), "quiet", `{}`))
	if res.Truncated || string(res.Stdout) != "1234567890" {
		t.Errorf("exactly at the cap: %q truncated %v", res.Stdout, res.Truncated)
	}
	res = f.mustOK(f.call(f.runner(func(o *Options) { o.OutputCap = 9 }), "quiet", `{}`))
	if !res.Truncated || string(res.Stdout) != "123456789" {
		t.Errorf("one over the cap: %q truncated %v", res.Stdout, res.Truncated)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// token is a "sleep" duration no other process on the machine uses, so that
// a tool's processes can be found in the server's /proc whatever PIDs they
// have inside their namespace.
func token(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("%d.%06d", 3000+len(t.Name()), time.Now().UnixNano()%1000000)
}

// withArg lists the live (not zombie) sleep processes whose command line
// holds arg (the tests' tools start "sleep TOKEN"). Only sleep's command
// lines are read: reading a process's command line waits while it forks,
// and another test's processes (a fork bomb) may be forking hard.
func withArg(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(comm)) != "sleep" {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg && alive(pid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// goneOrKill waits for processes with arg to be reaped (up to safetyNet),
// then kills and reports any left.
func goneOrKill(t *testing.T, arg, what string) {
	t.Helper()
	deadline := time.Now().Add(safetyNet)
	for len(withArg(arg)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := withArg(arg); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("%s: processes %v outlived the call", what, left)
	}
}

// isolations are the two ways calls run: in namespaces (where the kernel
// allows them) and without (the fallback: a subreaper helper).
var isolations = []struct {
	name string
	iso  Isolation
}{{"namespaces", IsolationNamespaces}, {"no namespaces", IsolationNone}}

func TestTimeoutKillsEverything(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			// The tool and its grandchild ignore SIGTERM; the grandchild
			// runs in the background; a third process leaves the process
			// group with setsid (the red team's "sleep 301" with PPID 1).
			tok := token(t)
			f.add("stubborn", `{"description":"ignores SIGTERM","timeout":30}`,
				fmt.Sprintf("#!/bin/sh\ntrap '' TERM\nsh -c 'trap \"\" TERM; exec sleep %[1]s' &\nsetsid sleep %[1]s &\n(setsid sh -c 'sleep %[1]s & exit 0' &)\nsleep %[1]s\n", tok))
			cc := f.cc()
			cc.Timeout = 500 * time.Millisecond
			res, err := r.Call(context.Background(), f.tool("stubborn"), []byte(`{}`), cc)
			ce := wantKind(t, err, ErrTimeout)
			if res == nil || res.ExitCode != -1 || !strings.Contains(ce.Error(), "500ms") {
				t.Errorf("result %+v, error %v", res, err)
			}
			goneOrKill(t, tok, "timeout")

			// The tool's own timeout applies when the call sets none.
			f.add("slow", `{"description":"slow","timeout":0.3}`, "#!/bin/sh\nsleep 5\n")
			_, err = f.call(r, "slow", `{}`)
			if ce := wantKind(t, err, ErrTimeout); !strings.Contains(ce.Error(), "300ms") {
				t.Errorf("per-tool timeout: %v", ce)
			}

			// Background children of a tool that succeeds die with it too,
			// including one that left the group and the session.
			tok = token(t) + "1"
			f.add("leaver", `{"description":"leaves children"}`,
				fmt.Sprintf("#!/bin/sh\nsleep %[1]s &\nsetsid sleep %[1]s &\n(setsid sh -c 'sleep %[1]s &' &)\nsleep 0.2\necho started\n", tok))
			res = f.mustOK(f.call(r, "leaver", `{}`))
			if strings.TrimSpace(string(res.Stdout)) != "started" {
				t.Errorf("leaver: %q", res.Stdout)
			}
			goneOrKill(t, tok, "successful call")
		})
	}
}

func TestCanceledContextKills(t *testing.T) {
	f := newFixture(t)
	tok := token(t)
	// The tool's process that left its session says it runs, through a
	// FIFO in the working directory: the test cancels then, not after a
	// guessed delay (nor after polling /proc for it).
	ready := filepath.Join(f.work, "ready")
	if err := syscall.Mkfifo(ready, 0o666); err != nil {
		t.Fatal(err)
	}
	f.add("sleeper", `{"description":"sleeps"}`, fmt.Sprintf("#!/bin/sh\nsetsid sh -c 'echo started > ready && exec sleep %[1]s' &\nsleep %[1]s\n", tok))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.runner(nil).Call(ctx, f.tool("sleeper"), []byte(`{}`), f.cc())
		done <- err
	}()
	started := make(chan error, 1)
	go func() {
		// Returns once the tool has written and closed the FIFO.
		b, err := os.ReadFile(ready)
		if err == nil && string(b) != "started\n" {
			err = fmt.Errorf("the tool wrote %q to the FIFO", b)
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-done:
		// (Opening the FIFO for writing releases the reader.)
		if w, werr := os.OpenFile(ready, os.O_WRONLY|syscall.O_NONBLOCK, 0); werr == nil {
			w.Close()
		}
		t.Fatalf("the call ended before the tool started its processes: %v", err)
	}
	cancel()
	wantKind(t, <-done, ErrCanceled)
	goneOrKill(t, tok, "cancelled call")
}

func TestResultJSON(t *testing.T) {
	r := &Result{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 2, Duration: 1500 * time.Microsecond}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"stdout":"out","stderr":"err","exitCode":2,"truncated":false,"stdoutBytes":0,"stderrBytes":0,"unsandboxed":false,"durationMs":1.5}` {
		t.Errorf("%s", b)
	}
}

func TestLargeInputNotRead(t *testing.T) {
	f := newFixture(t)
	// The tool ignores its input; a 1 MiB argument must neither block the
	// call nor leak the writer.
	f.add("deaf", `{"description":"ignores stdin","cmd":"echo done"}`, "")
	big := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	res := f.mustOK(f.call(f.runner(nil), "deaf", big))
	if string(res.Stdout) != "done\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	// And a tool that reads it all gets every byte.
	f.add("counter", `{"description":"counts stdin","cmd":"wc -c"}`, "")
	res = f.mustOK(f.call(f.runner(nil), "counter", big))
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(big)+1) {
		t.Errorf("tool read %s bytes, want %d (the JSON and a newline)", got, len(big)+1)
	}
}

// TestTimeoutDuringStart ends calls whose timeout falls while the helper is
// still starting: SIGTERM (and then KillSignal) may reach it before it has
// started the tool or begun to supervise it. Whatever the moment, the call
// reports a timeout with the tool killed (exit -1), and nothing it started
// survives. (Go's runtime turns an unhandled SIGTERM in a PID namespace's
// init into exit status 2, and outside a namespace it killed the helper and
// left the tool to run on.)
func TestTimeoutDuringStart(t *testing.T) {
	testdeps.Long(t, "80 calls timed out while their helper starts, ~45 s")
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso; o.KillGrace = 20 * time.Millisecond })
			tok := token(t)
			f.add("stubborn", `{"description":"ignores SIGTERM","timeout":30}`,
				fmt.Sprintf("#!/bin/sh\ntrap '' TERM\nsetsid sleep %[1]s &\nsleep %[1]s\n", tok))
			tool := f.tool("stubborn")
			for i := range 40 {
				cc := f.cc()
				cc.Timeout = time.Duration(200+i*150) * time.Microsecond
				res, err := r.Call(context.Background(), tool, []byte(`{}`), cc)
				wantKind(t, err, ErrTimeout)
				if res == nil || res.ExitCode != -1 {
					t.Errorf("timeout %s: result %+v, error %v", cc.Timeout, res, err)
				}
			}
			goneOrKill(t, tok, "timeout during start")
		})
	}
}
