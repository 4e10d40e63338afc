package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// preparedFor waits until r keeps a helper prepared for the next call of
// tool (by name, as its command holds it) and returns it.
func preparedFor(t *testing.T, r *Runner, argv0 string) *preparedHelper {
	t.Helper()
	deadline := time.Now().Add(safetyNet)
	for time.Now().Before(deadline) {
		r.prep.mu.Lock()
		var ph *preparedHelper
		for _, x := range r.prep.byKey {
			if len(x.spec.argv) > 0 && strings.Contains(strings.Join(x.spec.argv, " "), argv0) {
				ph = x
			}
		}
		r.prep.mu.Unlock()
		if ph != nil {
			<-ph.ready
			if ph.err != nil {
				t.Fatalf("preparing a helper for %s: %v", argv0, ph.err)
			}
			return ph
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no helper prepared for %s", argv0)
	return nil
}

// Calls of a resident server (Options.Prepare) run on helpers prepared
// ahead: the first call of a tool starts its own and has the next one
// prepared; the next calls take theirs, each a new one.
func TestPreparedHelpersServeCalls(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.add("who", `{"description":"says who runs it"}`, "#!/bin/sh\ncat >/dev/null\necho \"$PPID $OLLIE_SESSION_ID\"\n")
			r := f.runner(func(o *Options) { o.Isolation = mode.iso; o.Prepare = true; o.prepareEvery = false })
			seen := map[string]bool{}
			for i := range 4 {
				cc := f.cc()
				cc.Session = fmt.Sprintf("s%d", i)
				if i > 0 {
					ph := preparedFor(t, r, filepath.Join(f.tools, "who"))
					seen[strconv.Itoa(ph.h.Pid)] = true
				}
				res, err := r.Call(context.Background(), f.tool("who"), []byte(`{}`), cc)
				f.mustOK(res, err)
				if got := strings.Fields(string(res.Stdout)); len(got) != 2 || got[1] != cc.Session {
					t.Fatalf("call %d: %q, want the parent's PID and session %s", i, res.Stdout, cc.Session)
				}
			}
			if n := r.prep.used.Load(); n != 3 {
				t.Errorf("%d calls ran on a prepared helper, want 3 (all but the first)", n)
			}
			if len(seen) != 3 {
				t.Errorf("%d distinct prepared helpers for 3 calls: a helper served twice", len(seen))
			}
		})
	}
}

// Without namespaces, on a kernel whose Landlock cannot keep a tool from
// signalling other processes (ABI < 6), a helper prepared for one call
// would wait in reach of every other call's tool: none is prepared, each
// call starts its own. With namespaces, or from ABI 6, they are.
func TestPreparedHelpersOnlyOutOfReach(t *testing.T) {
	for _, c := range []struct {
		name     string
		iso      Isolation
		abi      int
		prepared bool
	}{
		{"no namespaces, ABI 5", IsolationNone, 5, false},
		{"no namespaces, ABI 6", IsolationNone, 6, true},
		{"namespaces, ABI 5", IsolationNamespaces, 5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if abi, _ := LandlockABI(); abi < c.abi {
				t.Skipf("Landlock ABI %d: the case needs %d", abi, c.abi)
			}
			f := newFixture(t)
			f.add("who", `{"description":"says who runs it"}`, "#!/bin/sh\ncat >/dev/null\necho ok\n")
			r := f.runner(func(o *Options) {
				o.Isolation = c.iso
				o.Prepare = true
				o.prepareEvery = false
				o.landlockABI = func() (int, error) { return c.abi, nil }
			})
			for range 3 {
				f.mustOK(f.call(r, "who", `{}`))
				if c.prepared {
					preparedFor(t, r, filepath.Join(f.tools, "who"))
				}
			}
			r.prep.mu.Lock()
			kept := len(r.prep.byKey)
			r.prep.mu.Unlock()
			used := r.prep.used.Load()
			if c.prepared && used != 2 {
				t.Errorf("%d calls ran on a prepared helper, want 2", used)
			}
			if !c.prepared && (used != 0 || kept != 0) {
				t.Errorf("%d calls ran on a prepared helper and %d are kept, want none", used, kept)
			}
		})
	}
}

// Nothing of one call reaches the next through a prepared helper: not its
// temporary directory and what it wrote there, not a process it left
// running, not its environment, not its PID namespace.
func TestPreparedCallsShareNothing(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.add("leave", `{"description":"leaves traces"}`, `#!/bin/sh
cat >/dev/null
echo "tmp=$TMPDIR home=$HOME session=$OLLIE_SESSION_ID ns=$(readlink /proc/self/ns/pid)"
ls -A "$TMPDIR" "$HOME" | tr '\n' ' '; echo
if pgrep -f leftover-marker >/dev/null; then echo "sees the last call's process"; fi
echo secret > "$TMPDIR/mine"
echo secret > "$HOME/mine-too"
(setsid sh -c 'exec -a leftover-marker sleep 60' </dev/null >/dev/null 2>&1 &)
`)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso; o.Prepare = true; o.prepareEvery = true })
			var last []string
			for i := range 3 {
				cc := f.cc()
				cc.Session = fmt.Sprintf("session-%d", i)
				res := f.mustOK(r.Call(context.Background(), f.tool("leave"), []byte(`{}`), cc))
				lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
				if len(lines) < 1 || !strings.Contains(lines[0], "session="+cc.Session) {
					t.Fatalf("call %d: %q", i, res.Stdout)
				}
				out := string(res.Stdout)
				if strings.Contains(out, "mine") || strings.Contains(out, "sees the last call's process") {
					t.Errorf("call %d sees what the last one left:\n%s", i, out)
				}
				fields := strings.Fields(lines[0])
				if last != nil {
					for j, fld := range fields[:2] { // tmp, home
						if fld == last[j] {
							t.Errorf("call %d has the last call's %s", i, fld)
						}
					}
					if mode.iso == IsolationNamespaces && fields[3] == last[3] {
						t.Errorf("call %d runs in the last call's PID namespace (%s)", i, fields[3])
					}
				}
				last = fields
			}
			if n := r.prep.used.Load(); n != 3 {
				t.Errorf("%d of 3 calls ran on a prepared helper", n)
			}
			// Nothing of them outlives them: the calls' processes are
			// gone, and their temporary directories.
			if b, _ := os.ReadFile("/proc/self/status"); len(b) > 0 { // (the host's view)
				if out, err := exec_pgrep("leftover-marker"); err == nil && out != "" {
					t.Errorf("a call's process outlived it: %s", out)
				}
			}
		})
	}
}

// exec_pgrep lists the host's processes whose command line has pattern.
func exec_pgrep(pattern string) (string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return "", err
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), pattern) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return strings.Join(out, "; "), nil
}

// A prepared helper whose working directory was replaced since it was
// prepared (removed and made again: another directory by the same name)
// is not used: its rules and its current directory hold the old one. The
// call runs in the new directory.
func TestPreparedHelperOfAReplacedDirectory(t *testing.T) {
	f := newFixture(t)
	f.add("touch", `{"description":"writes here"}`, "#!/bin/sh\ncat >/dev/null\necho hello > out && pwd\n")
	r := f.runner(func(o *Options) { o.Prepare = true; o.prepareEvery = false })
	f.mustOK(f.call(r, "touch", `{}`))
	preparedFor(t, r, filepath.Join(f.tools, "touch"))
	if err := os.RemoveAll(f.work); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.work, 0o755); err != nil {
		t.Fatal(err)
	}
	res := f.mustOK(f.call(r, "touch", `{}`))
	if b, err := os.ReadFile(filepath.Join(f.work, "out")); err != nil || string(b) != "hello\n" {
		t.Errorf("the call did not write the new directory (%v, %q); it said %q, %q", err, b, res.Stdout, res.Stderr)
	}
	if n := r.prep.used.Load(); n != 0 {
		t.Errorf("the helper prepared for the old directory served the call")
	}
}

// A prepared helper's temporary directory is made before its call: one
// that is not empty any more, or not the directory made, is not used (a
// tool that may write where it lies could have left files for the next
// call).
func TestPreparedHelperOfATouchedTempDir(t *testing.T) {
	f := newFixture(t)
	f.add("ls", `{"description":"lists its temporary directory","cmd":"cat >/dev/null; ls -A \"$TMPDIR\""}`, "")
	r := f.runner(func(o *Options) { o.Prepare = true; o.prepareEvery = false })
	f.mustOK(f.call(r, "ls", `{}`))
	for _, touch := range []func(dir string) error{
		func(dir string) error { return os.WriteFile(filepath.Join(dir, "planted"), []byte("x"), 0o644) },
		func(dir string) error {
			if err := os.Remove(dir); err != nil {
				return err
			}
			return os.Mkdir(dir, 0o700)
		},
	} {
		ph := preparedFor(t, r, "ls -A")
		if err := touch(ph.tmp); err != nil {
			t.Fatal(err)
		}
		used := r.prep.used.Load()
		res := f.mustOK(f.call(r, "ls", `{}`))
		if r.prep.used.Load() != used {
			t.Error("the call ran on a helper whose temporary directory was touched after it was made")
		}
		if strings.Contains(string(res.Stdout), "planted") {
			t.Errorf("the call saw a file left in its temporary directory: %q", res.Stdout)
		}
	}
}

// A changed definition (another command, other limits) never runs on what
// was prepared for the old one.
func TestPreparedHelperOfAChangedTool(t *testing.T) {
	f := newFixture(t)
	f.add("v", `{"description":"version","cmd":"cat >/dev/null; echo one"}`, "")
	r := f.runner(func(o *Options) { o.Prepare = true; o.prepareEvery = false })
	f.mustOK(f.call(r, "v", `{}`))
	preparedFor(t, r, "echo one")
	f.add("v", `{"description":"version","cmd":"cat >/dev/null; echo two"}`, "")
	if res := f.mustOK(f.call(r, "v", `{}`)); string(res.Stdout) != "two\n" {
		t.Errorf("after the change the call said %q, want two", res.Stdout)
	}
	preparedFor(t, r, "echo two")
	f.add("v", `{"description":"version","cmd":"cat >/dev/null; echo two; ulimit -v","limits":{"memory":"300MiB"}}`, "")
	f.add("v", `{"description":"version","cmd":"cat >/dev/null; echo two","limits":{"memory":"300MiB"}}`, "")
	used := r.prep.used.Load()
	f.mustOK(f.call(r, "v", `{}`))
	if r.prep.used.Load() != used {
		t.Error("a tool whose limits changed ran on the helper prepared with the old ones")
	}
}

// A prepared helper is out of reach of every tool: one that sees the
// host's processes (hostProcesses) may see it, but not signal it, attach
// to it, read its environment, descriptors or memory. It stays ready and
// serves its call afterwards.
func TestPreparedHelperOutOfReach(t *testing.T) {
	if abi, _ := LandlockABI(); abi < scopedSignalsABI {
		t.Skipf("Landlock ABI %d: hostProcesses needs %d (Linux 6.12)", abi, scopedSignalsABI)
	}
	f := newFixture(t)
	f.add("victim", `{"description":"waits"}`, "#!/bin/sh\ncat >/dev/null\necho fine\n")
	f.addProbe("viewer", `{"description":"sees the host's processes","hostProcesses":true}`)
	r := f.runner(func(o *Options) { o.Prepare = true; o.prepareEvery = false })
	f.mustOK(f.call(r, "victim", `{}`))
	ph := preparedFor(t, r, filepath.Join(f.tools, "victim"))
	res := f.mustOK(f.call(r, "viewer", fmt.Sprintf(`{"op":"attack-pid","path":"%d"}`, ph.h.Pid)))
	out := strings.TrimSpace(string(res.Stdout))
	if !strings.Contains(out, "SIGKILL") {
		t.Fatalf("the attack did not run: %q %q", out, res.Stderr)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "escaped") {
			t.Errorf("%s (prepared helper %d)", l, ph.h.Pid)
		}
	}
	if err := syscall.Kill(ph.h.Pid, 0); err != nil {
		t.Errorf("the prepared helper is gone after the attack: %v", err)
	}
	if res := f.mustOK(f.call(r, "victim", `{}`)); string(res.Stdout) != "fine\n" || r.prep.used.Load() != 1 {
		t.Errorf("the attacked helper's call: %q, prepared calls %d", res.Stdout, r.prep.used.Load())
	}
	if t.Failed() {
		t.Logf("all attempts:\n%s", out)
	}
}

// Close ends the prepared helpers and removes their temporary
// directories; so does their idle time running out.
func TestPreparedHelpersEnd(t *testing.T) {
	f := newFixture(t)
	f.add("a", `{"description":"a","cmd":"cat >/dev/null; echo a"}`, "")
	f.add("b", `{"description":"b","cmd":"cat >/dev/null; echo b"}`, "")
	r := f.runner(func(o *Options) { o.Prepare = true; o.prepareEvery = false; o.prepareIdle = 300 * time.Millisecond })
	f.mustOK(f.call(r, "a", `{}`))
	pa := preparedFor(t, r, "echo a")
	deadline := time.Now().Add(safetyNet)
	for syscall.Kill(pa.h.Pid, 0) == nil || exists(pa.tmp) {
		if time.Now().After(deadline) {
			t.Fatal("an idle prepared helper was not ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.mustOK(f.call(r, "b", `{}`))
	pb := preparedFor(t, r, "echo b")
	r.Close()
	if err := syscall.Kill(pb.h.Pid, 0); err == nil {
		t.Error("Close left a prepared helper running")
	}
	if exists(pb.tmp) {
		t.Errorf("Close left %s", pb.tmp)
	}
	// Calls still work after Close, without preparing.
	f.mustOK(f.call(r, "b", `{}`))
	if n := len(r.prep.byKey); n != 0 {
		t.Errorf("%d helpers prepared after Close", n)
	}
}
