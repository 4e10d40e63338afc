package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A started process talks over its pipes for as long as it runs, under
// the same sandbox as a call: it reads what it is granted, writes only its
// temporary directory and Write, and Stop ends it and everything it
// started.
func TestStartLongRunning(t *testing.T) {
	f := newFixture(t)
	r := f.runner(nil)
	granted, writable := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(granted, "in.txt"), []byte("granted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.outside, "secret"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A line-by-line shell "server": each input line is a command.
	script := filepath.Join(f.tools, "srv")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsleep 300 &\nwhile read -r line; do sh -c \"$line\" 2>&1 | tr '\\n' ' '; echo; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := r.Start(ctx, ProcessSpec{Name: "test server", Argv: []string{script}, Read: []string{granted},
		Write: []string{writable}, Env: []string{"GREETING=hello"}})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(p.Stdout)
	ask := func(cmd string) string {
		t.Helper()
		if _, err := fmt.Fprintln(p.Stdin, cmd); err != nil {
			t.Fatalf("writing %q: %v (stderr %q, ended: %v)", cmd, err, p.Stderr(), p.Err())
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer to %q: %v (stderr %q)", cmd, err, p.Stderr())
		}
		return strings.TrimSpace(line)
	}
	for _, tc := range []struct{ cmd, want string }{
		{"echo $GREETING", "hello"},
		{"cat " + filepath.Join(granted, "in.txt"), "granted"},
		{"cat " + filepath.Join(f.outside, "secret") + " || echo refused", "refused"},
		{"echo x > " + filepath.Join(writable, "out") + " && cat " + filepath.Join(writable, "out"), "x"},
		{"echo x > " + filepath.Join(granted, "out") + " || echo refused", "refused"},
		{"echo x > $TMPDIR/t && cat $TMPDIR/t", "x"},
		{"echo $HOME", ""}, // checked below
	} {
		got := ask(tc.cmd)
		if tc.want != "" && !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: %q, want it to end with %q", tc.cmd, got, tc.want)
		}
		if strings.HasPrefix(tc.cmd, "echo $HOME") && !strings.Contains(got, "toolsrv-call-") {
			t.Errorf("HOME = %q, want its private temporary directory", got)
		}
	}
	if p.Err() != nil {
		t.Fatalf("ended early: %v", p.Err())
	}
	helper := p.PID()
	p.Stop(200 * time.Millisecond)
	if p.Err() == nil {
		t.Fatal("Err is nil after Stop")
	}
	// The helper and the background sleep are gone.
	if err := syscall.Kill(helper, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the helper %d is still there after Stop: %v", helper, err)
	}
}

// A process that exits says how; its standard error is kept.
func TestStartExit(t *testing.T) {
	f := newFixture(t)
	r := f.runner(nil)
	ctx := context.Background()
	p, err := r.Start(ctx, ProcessSpec{Name: "dies", Argv: []string{"/bin/sh", "-c", "echo oops >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(safetyNet):
		t.Fatal("did not end")
	}
	if p.Err() == nil || p.Err().Error() != "exit status 3" {
		t.Errorf("Err = %v, want exit status 3", p.Err())
	}
	if !strings.Contains(string(p.Stderr()), "oops") {
		t.Errorf("stderr %q", p.Stderr())
	}
	p.Stop(0)

	// Unconfined without a broker: refused, nothing starts.
	if _, err := r.Start(ctx, ProcessSpec{Name: "free", Argv: []string{"/bin/true"}, Unconfined: true}); !errors.Is(err, ErrBypassRefused) {
		t.Errorf("unconfined without a broker: %v, want bypass refused", err)
	}
	// A relative command or a missing granted path: refused.
	if _, err := r.Start(ctx, ProcessSpec{Name: "rel", Argv: []string{"true"}}); !errors.Is(err, ErrStart) {
		t.Errorf("relative command: %v", err)
	}
	if _, err := r.Start(ctx, ProcessSpec{Name: "missing", Argv: []string{"/bin/true"}, Read: []string{"/nonexistent/x"}}); !errors.Is(err, ErrBadCallContext) {
		t.Errorf("missing read path: %v", err)
	}
}
