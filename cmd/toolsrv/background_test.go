package main

import (
	"context"
	"os"
	osexec "os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// bgServer is a toolsrv server a test runs until it ends.
type bgServer struct {
	stderr *syncBuffer
	pid    int
	// ready is the submatches of the line that said it serves.
	ready []string
}

// startBackgroundServer runs bin with args, HOME home and env added, until
// the test ends, and returns once its standard error matches ready (and
// holds also, when not ""), or fails the test if it exits before or never
// does. On a failed test, its standard error is logged.
func startBackgroundServer(t *testing.T, bin, home string, env []string, ready *regexp.Regexp, also string, args ...string) *bgServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}, env...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("toolsrv %s:\n%s", args[0], stderr)
		}
	})
	deadline := time.Now().Add(safetyNet)
	for {
		out := stderr.String()
		if m := ready.FindStringSubmatch(out); m != nil && strings.Contains(out, also) {
			return &bgServer{stderr: stderr, pid: cmd.Process.Pid, ready: m}
		}
		select {
		case <-exited:
			t.Fatalf("toolsrv %s exited before serving:\n%s", args[0], stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolsrv %s never said it serves:\n%s", args[0], stderr)
		}
	}
}
