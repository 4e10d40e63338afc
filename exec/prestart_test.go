package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// A call on a prestarted helper (Options.Prestarted, what "toolsrv call"
// starts while it initialises) is the call a freshly started helper runs:
// the same output, working directory, environment and sandbox, and a
// descriptor the process held, without close-on-exec, when it prestarted
// the helper does not reach the tool. A prestarted helper of other
// namespaces, or one that died before its call, is not used, and the call
// starts its own.
func TestPrestartedHelper(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.outside, "secret")
	if err := os.WriteFile(secret, []byte("TOP-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	escaped := filepath.Join(f.outside, "escaped")
	// Everything a call's helper decides shows in what the tool prints; the
	// descriptor test is last (its number differs between runs).
	f.add("report", `{"description":"reports where and how it runs"}`, fmt.Sprintf(`#!/bin/sh
pwd
env | grep -v '^_=' | sort
echo x > out.txt && echo wrote inside
echo x > %s 2>/dev/null || echo denied outside
ls /proc/self/fd | grep -v '^[0-2]$' | wc -l
cat /proc/self/fd/$FD 2>/dev/null
exit 0
`, escaped))
	nsOf := func(iso Isolation) sandbox.Namespaces {
		if iso == IsolationNone {
			return sandbox.Namespaces{}
		}
		return sandbox.DefaultNamespaces()
	}
	other := func(iso Isolation) sandbox.Namespaces {
		if iso == IsolationNone {
			return sandbox.DefaultNamespaces()
		}
		return sandbox.Namespaces{}
	}
	cases := []struct {
		name string
		iso  Isolation
		// ns gives the prestarted helper's namespaces; kill ends it before
		// the call.
		ns       func(Isolation) sandbox.Namespaces
		kill     bool
		wantUsed bool
	}{
		{"namespaces", IsolationNamespaces, nsOf, false, true},
		{"no namespaces", IsolationNone, nsOf, false, true},
		{"other namespaces", IsolationNamespaces, other, false, false},
		{"helper gone", IsolationNamespaces, nsOf, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A descriptor held without close-on-exec while the helper is
			// prestarted: the helper inherits it, the tool must not.
			fd, err := unix.Open(secret, unix.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			pre, err := sandbox.Prestart(f.selfExe, c.ns(c.iso))
			unix.Close(fd)
			if err != nil {
				t.Fatalf("prestart: %v", err)
			}
			defer pre.Discard()
			if c.kill {
				killAndWaitForZombie(t, pre.Pid)
			}
			os.Remove(filepath.Join(f.work, "out.txt"))
			run := func(pre *sandbox.Helper) (out string, prestarted bool) {
				t.Helper()
				var log strings.Builder
				r := f.runner(func(o *Options) {
					o.Isolation = c.iso
					o.Prestarted = pre
					o.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
					o.PassEnv = []string{"FD"}
					o.Getenv = func(k string) string {
						if k == "FD" {
							return fmt.Sprint(fd)
						}
						return os.Getenv(k)
					}
				})
				res := f.mustOK(f.call(r, "report", `{}`))
				return string(res.Stdout), strings.Contains(log.String(), "prestarted=true")
			}
			got, used := run(pre)
			if used != c.wantUsed {
				t.Errorf("the call ran on the prestarted helper: %v, want %v", used, c.wantUsed)
			}
			want, _ := run(nil)
			// The temporary directory (and $HOME in it) is each call's own.
			callTemp := regexp.MustCompile(`toolsrv-call-[0-9]+-[0-9]+`)
			norm := func(s string) string { return callTemp.ReplaceAllString(s, "toolsrv-call-<own>") }
			if norm(got) != norm(want) {
				t.Errorf("the call on the prestarted helper printed\n%s\nwant (a fresh helper)\n%s", got, want)
			}
			for _, line := range []string{f.work, "OLLIE_TOOL=report", "wrote inside", "denied outside"} {
				if !strings.Contains(got, line+"\n") {
					t.Errorf("output lacks %q:\n%s", line, got)
				}
			}
			if strings.Contains(got, "TOP-SECRET") {
				t.Fatalf("the tool read the descriptor the prestarting process held: %q", got)
			}
			if exists(escaped) {
				t.Fatal("the tool wrote outside its working directory")
			}
			if !c.wantUsed {
				// Not used (or, when it had died, ended by Use): gone
				// after Discard. (One that was used is reaped by the
				// runner once it has exited.)
				pre.Discard()
				if err := syscall.Kill(pre.Pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("the prestarted helper (pid %d) is still there after the call and Discard: %v", pre.Pid, err)
				}
			}
		})
	}
}

// Use gives a prestarted helper one call: a second Use, or a Use after
// Discard, gets ErrTaken; Discard ends and reaps a helper no call used,
// and leaves one a call used to finish its call.
func TestPrestartedHelperUseAndDiscard(t *testing.T) {
	f := newFixture(t)
	pol, err := json.Marshal(sandbox.Policy{Unconfined: true, WorkDir: f.work, TempDir: f.work})
	if err != nil {
		t.Fatal(err)
	}
	order := sandbox.Order{Policy: pol, Argv: []string{"/bin/true"}, Dir: f.work}
	for _, ns := range []sandbox.Namespaces{{}, sandbox.DefaultNamespaces()} {
		unused, err := sandbox.Prestart(f.selfExe, ns)
		if err != nil {
			t.Fatal(err)
		}
		unused.Discard()
		if err := unused.Use(order); !errors.Is(err, sandbox.ErrTaken) {
			t.Errorf("Use after Discard: %v, want ErrTaken", err)
		}
		if err := syscall.Kill(unused.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("namespaces %+v: the discarded helper (pid %d) is still there: %v", ns, unused.Pid, err)
		}

		used, err := sandbox.Prestart(f.selfExe, ns)
		if err != nil {
			t.Fatal(err)
		}
		used.Stdin.Close()
		first, second := used.Use(order), used.Use(order)
		if first != nil || !errors.Is(second, sandbox.ErrTaken) {
			t.Errorf("Use twice: %v, %v; want nil, ErrTaken", first, second)
		}
		used.Discard() // the call's to finish
		st, ok, err := sandbox.ReadStatus(used.Status)
		if err != nil || !ok || st.Exit != 0 || st.Killed {
			t.Errorf("namespaces %+v: the used helper reported %+v (ok %v, %v); want its call's exit 0: Discard ended it", ns, st, ok, err)
		}
		syscall.Wait4(used.Pid, nil, 0, nil)
		for _, fl := range []*os.File{used.Stdout, used.Stderr, used.Status} {
			fl.Close()
		}
		if used.PidFD >= 0 {
			syscall.Close(used.PidFD)
		}
	}
}

// killAndWaitForZombie kills pid (a child) and waits until it has exited,
// without reaping it (its parent's Discard does).
func killAndWaitForZombie(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var si unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
}
