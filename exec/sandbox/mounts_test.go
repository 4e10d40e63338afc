package sandbox

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runShell runs script under /bin/sh through this test binary as the
// helper, with p (WorkDir and TempDir set by the caller) in ns, and
// returns its standard output and error and the status it reported.
func runShell(t *testing.T, p Policy, ns Namespaces, script string) (stdout, stderr string, st Status) {
	t.Helper()
	return runArgv(t, p, ns, "/bin/sh", "-c", script)
}

// runArgv is runShell for any command.
func runArgv(t *testing.T, p Policy, ns Namespaces, argv ...string) (stdout, stderr string, st Status) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pj, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "TMPDIR=" + p.TempDir, "HOME=" + p.TempDir}
	h, err := StartHelper(self, append([]string{HelperArg, string(pj), "--"}, argv...), env, p.WorkDir, ns)
	if err != nil {
		t.Fatal(err)
	}
	h.Stdin.Close()
	var out, errb []byte
	done := make(chan struct{})
	go func() { errb, _ = io.ReadAll(h.Stderr); close(done) }()
	out, _ = io.ReadAll(h.Stdout)
	<-done
	st, ok, err := ReadStatus(h.Status)
	if !ok || err != nil {
		t.Fatalf("no status (%v); stderr %s", err, errb)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(h.Pid, &ws, 0, nil)
	for _, f := range []*os.File{h.Status, h.Stdout, h.Stderr} {
		f.Close()
	}
	if h.PidFD >= 0 {
		syscall.Close(h.PidFD)
	}
	return string(out), string(errb), st
}

// callPolicy is a confined call's policy in ns, writing work, with its
// own temporary directory.
func callPolicy(t *testing.T, ns Namespaces, work string) Policy {
	return Policy{WorkDir: work, TempDir: t.TempDir(), PidNS: ns.PID, MountNS: ns.PID || ns.Mount, UserNS: ns.User}
}

// A repository that keeps its tools in ./tools may be a call's working
// directory: the tool writes the project, not the tools (bound read-only
// over themselves in the call's mount namespace). Where the call has no
// mount namespace, it is refused, with the reason.
func TestProtectedPathsStayReadOnly(t *testing.T) {
	work := t.TempDir()
	tools := filepath.Join(work, "tools")
	os.Mkdir(tools, 0o755)
	os.WriteFile(filepath.Join(tools, "calc.meta"), []byte(`{"description":"calc"}`), 0o644)
	for _, ns := range []Namespaces{DefaultNamespaces(), func() Namespaces { n := DefaultNamespaces(); n.PID, n.Mount = false, true; return n }()} {
		p := callPolicy(t, ns, work)
		p.Protect = []string{tools}
		out, errs, st := runShell(t, p, ns, `
echo changed > tools/calc.meta && echo WROTE-META
echo new > tools/evil.meta && echo WROTE-NEW
rm -f tools/calc.meta && echo REMOVED
mv tools tools2 && echo RENAMED
echo project > notes.txt && echo WROTE-PROJECT
exit 0`)
		if st.Error != "" {
			t.Fatalf("pid ns %v: refused: %s", ns.PID, st.Error)
		}
		for _, bad := range []string{"WROTE-META", "WROTE-NEW", "REMOVED", "RENAMED"} {
			if strings.Contains(out, bad) {
				t.Errorf("pid ns %v: %s: the call changed the protected tools directory\nstderr: %s", ns.PID, bad, errs)
			}
		}
		if !strings.Contains(out, "WROTE-PROJECT") {
			t.Errorf("pid ns %v: the call could not write its project: %q, %s", ns.PID, out, errs)
		}
		if b, _ := os.ReadFile(filepath.Join(tools, "calc.meta")); string(b) != `{"description":"calc"}` {
			t.Errorf("pid ns %v: calc.meta is now %q", ns.PID, b)
		}
	}
	// A parent of the protected directory cannot be moved aside to put a
	// writable directory in its place.
	nested := filepath.Join(work, "sub", "tools")
	os.MkdirAll(nested, 0o755)
	ns := DefaultNamespaces()
	p := callPolicy(t, ns, work)
	p.Protect = []string{nested}
	out, errs, st := runShell(t, p, ns, `
mv sub moved && echo MOVED-PARENT
rmdir sub/tools && echo REMOVED-DIR
mkdir -p sub/tools && echo x > sub/tools/evil.meta && echo PLANTED
echo project > sub/notes.txt && echo WROTE-PROJECT
exit 0`)
	if st.Error != "" {
		t.Fatalf("refused: %s", st.Error)
	}
	for _, bad := range []string{"MOVED-PARENT", "REMOVED-DIR", "PLANTED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: a protected directory was replaced through its parent\nstderr: %s", bad, errs)
		}
	}
	if !strings.Contains(out, "WROTE-PROJECT") {
		t.Errorf("the project beside the protected directory: %q, %s", out, errs)
	}
	if _, err := os.Stat(filepath.Join(work, "moved")); err == nil {
		t.Error("the parent of the protected directory was renamed")
	}
	// No mount namespace: refused at call time, saying why and what to do.
	p = callPolicy(t, Namespaces{}, work)
	p.Protect = []string{tools}
	out, _, st = runShell(t, p, Namespaces{}, "echo ran")
	if st.Exit != ExitSandbox || !strings.Contains(st.Error, tools) || !strings.Contains(st.Error, "working directory that does not hold it") || out != "" {
		t.Errorf("without a mount namespace: status %+v, output %q; want a refusal naming %s", st, out, tools)
	}
	// A protected path that does not exist could be made by the tool.
	p = callPolicy(t, ns, work)
	p.Protect = []string{filepath.Join(work, "profiles")}
	if _, _, st := runShell(t, p, ns, "echo ran"); st.Exit != ExitSandbox || !strings.Contains(st.Error, "mkdir -p") {
		t.Errorf("missing protected path: status %+v, want a refusal that says to create it", st)
	}
}

// A call may write no file larger than its file-size limit (the red team
// wrote 3 GiB), and no more than its temporary directory's size there.
func TestFileSizeAndTempSize(t *testing.T) {
	work := t.TempDir()
	ns := DefaultNamespaces()
	p := callPolicy(t, ns, work)
	p.FileSize = 2 << 20
	p.TempSize = 4 << 20
	out, errs, st := runShell(t, p, ns, `
head -c 3145728 /dev/zero > big && echo WROTE-BIG
head -c 1048576 /dev/zero > small && echo WROTE-SMALL
for i in 1 2 3 4 5 6; do head -c 1048576 /dev/zero > "$TMPDIR/t$i" || break; done
du -k "$TMPDIR" | tail -1
exit 0`)
	if st.Error != "" {
		t.Fatalf("refused: %s", st.Error)
	}
	if strings.Contains(out, "WROTE-BIG") || !strings.Contains(errs, "File too large") {
		t.Errorf("a 3 MiB file under a 2 MiB limit: output %q, stderr %q (want \"File too large\")", out, errs)
	}
	if fi, err := os.Stat(filepath.Join(work, "big")); err == nil && fi.Size() > 2<<20 {
		t.Errorf("big is %d bytes", fi.Size())
	}
	if !strings.Contains(out, "WROTE-SMALL") {
		t.Errorf("a file within the limit: %q, %s", out, errs)
	}
	if !strings.Contains(errs, "No space left on device") {
		t.Errorf("6 MiB into a 4 MiB temporary directory: stderr %q, output %q", errs, out)
	}
}
