package exec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// A tool's view of processes is consistent: the PIDs its /proc shows are
// the ones getpid() gives it, so ps works and finds itself. In a call's PID
// namespace with the host's /proc they disagreed: ps ended with "fatal
// library error, lookup self" whenever the host had no process with ps's
// PID in the namespace (CI's process_list printed nothing). In namespaces
// a tool sees only its own call's processes (its /proc's PID 1 is the
// helper); one that declares hostProcesses sees the host's (this test
// among them) and still cannot signal them.
func TestProcessView(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Fatalf("this test needs ps (procps; .ci/run installs it): %v", err)
	}
	me := os.Getpid()
	script := fmt.Sprintf(`#!/bin/sh
read self rest < /proc/self/stat
echo "self $self"
echo "shell $$"
echo "pspid $(ps -o pid= -p $$ 2>&1 | tr -d ' ')"
ps -e >/dev/null 2>ps.err && echo "psall ok" || echo "psall failed: $(cat ps.err)"
case "$(tr '\0' ' ' < /proc/1/cmdline)" in *__sandbox*) echo "init helper" ;; *) echo "init host" ;; esac
[ -r /proc/%[1]d/cmdline ] && echo "test $(tr '\0' '\n' < /proc/%[1]d/cmdline | head -1)"
kill -0 %[1]d 2>/dev/null && echo "signalled the test"
exit 0
`, me)
	testExe := filepath.Base(os.Args[0])
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.add("own", `{"description":"looks at processes"}`, script)
			f.add("host", `{"description":"looks at the host's processes","hostProcesses":true}`, script)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			_, abi := r.Sandboxed()
			for _, c := range []struct {
				tool string
				host bool // sees the host's processes
			}{
				{"own", mode.iso == IsolationNone},
				{"host", mode.iso == IsolationNone || abi >= scopedSignalsABI},
			} {
				out := string(f.mustOK(f.call(r, c.tool, `{}`)).Stdout)
				got := map[string]string{}
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					k, v, _ := strings.Cut(l, " ")
					got[k] = v
				}
				if got["self"] == "" || got["self"] != got["shell"] {
					t.Errorf("%s: /proc/self says PID %q, $$ %q: they must agree\n%s", c.tool, got["self"], got["shell"], out)
				}
				if got["pspid"] != got["shell"] {
					t.Errorf("%s: ps -o pid= -p $$ printed %q, want the shell's PID %q\n%s", c.tool, got["pspid"], got["shell"], out)
				}
				if got["psall"] != "ok" {
					t.Errorf("%s: ps -e %s\n%s", c.tool, got["psall"], out)
				}
				if _, ok := got["signalled"]; ok {
					t.Errorf("%s: a sandboxed tool signalled the server's process\n%s", c.tool, out)
				}
				switch {
				case c.host && !strings.Contains(got["test"], testExe):
					t.Errorf("%s: does not see this test's process (%d as %q, want %s)\n%s", c.tool, me, got["test"], testExe, out)
				case !c.host && got["init"] != "helper":
					t.Errorf("%s: its /proc's PID 1 is not its call's helper: it sees the host's processes\n%s", c.tool, out)
				}
			}
		})
	}
}

// hostProcesses is honoured only where something else keeps the tool from
// signalling what it sees: Landlock's signal scoping (ABI 6), or an
// approved bypass, which runs unsandboxed anyway. Below ABI 6 only the PID
// namespace would, so the tool keeps it (and the runner warns).
func TestHostProcessesNeedsScopedSignals(t *testing.T) {
	declared := &registry.Tool{Name: "ps", HostProcesses: true}
	plain := &registry.Tool{Name: "ls"}
	for _, c := range []struct {
		name       string
		tool       *registry.Tool
		abi        int
		unconfined bool
		host, ok   bool
	}{
		{"not declared", plain, 7, false, false, true},
		{"declared, ABI 7", declared, 7, false, true, true},
		{"declared, ABI 6", declared, scopedSignalsABI, false, true, true},
		{"declared, ABI 5", declared, 5, false, false, false},
		{"declared, ABI 5, approved bypass", declared, 5, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Runner{abi: c.abi}
			host, ok := r.hostProcesses(c.tool, sandbox.Policy{Unconfined: c.unconfined})
			if host != c.host || ok != c.ok {
				t.Errorf("hostProcesses = %v, %v; want %v, %v", host, ok, c.host, c.ok)
			}
		})
	}
}
