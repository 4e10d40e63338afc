package ninep

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// TestDiodInterop reads the tree with an independent 9P2000.L client (diod's
// diodls and diodcat, TCP only, the token as their attach name), after
// loading a tool through the Go client.
func TestDiodInterop(t *testing.T) {
	// Without diod the test skips, unless TOOLSRV_TEST_REQUIRE names it
	// (as CI does): then it fails.
	diodls, diodcat := testdeps.Program(t, testdeps.Diod, "diodls"), testdeps.Program(t, testdeps.Diod, "diodcat")
	e := newEnv(t, func(o *Options) { o.Token = testToken })
	tcp := e.listenTCP()
	cl := e.client()
	mustMkdir(t, cl, "session/s1")
	mustMkdir(t, cl, "session/s1/agent/a")
	mustWrite(t, cl, "session/s1/agent/a/tools", "weather\n")
	mustWrite(t, cl, "session/s1/agent/a/ctl", "tool_load git_push\n")

	run := func(bin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		// -t: the diod client's own timeout, in seconds.
		full := append([]string{"-s", tcp, "-a", testToken, "-t", strconv.Itoa(int(safetyNet.Seconds()))}, args...)
		out, err := exec.CommandContext(ctx, bin, full...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(full, " "), err, out)
		}
		return string(out)
	}

	ls := run(diodls, "-l")
	t.Logf("diodls -l:\n%s", ls)
	for _, name := range []string{"tools", "tools.json", "revision", "errors", "err", "rank", "ctl", "session"} {
		if !strings.Contains(ls, " "+name+"\n") {
			t.Errorf("diodls -l lacks %s:\n%s", name, ls)
		}
	}
	// diodls -l shows the real size of tools.
	toolsText := mustRead(t, cl, "tools")
	for _, l := range strings.Split(ls, "\n") {
		if strings.HasSuffix(l, " tools") {
			if !strings.Contains(l, " "+strconv.Itoa(len(toolsText))+" ") {
				t.Errorf("diodls -l line %q does not show size %d", l, len(toolsText))
			}
			if !strings.HasPrefix(l, "-r--r--r--") {
				t.Errorf("diodls -l line %q: want mode -r--r--r--", l)
			}
		}
		if strings.HasSuffix(l, " session") && !strings.HasPrefix(l, "d") {
			t.Errorf("diodls -l line %q: session is not a directory", l)
		}
	}

	if got := run(diodcat, "tools"); got != toolsText {
		t.Fatalf("diodcat tools =\n%q\nGo client read\n%q", got, toolsText)
	}
	got := run(diodcat, "session/s1/agent/a/tools")
	if want := "git_push\tcold\tPush the current git branch to its remote.\nweather\twarm\tCurrent weather forecast for a city.\n"; got != want {
		t.Fatalf("diodcat session/s1/agent/a/tools = %q, want %q", got, want)
	}
	if got := run(diodcat, "revision"); got != mustRead(t, cl, "revision") {
		t.Fatalf("diodcat revision = %q", got)
	}
	// A big file read in several messages (small msize).
	if got := run(diodcat, "-m", "4096", "tools.json"); got != mustRead(t, cl, "tools.json") {
		t.Fatalf("diodcat -m 4096 tools.json differs from the Go client's read (%d bytes)", len(got))
	}
	sessions := run(diodls, "session/s1/agent/a")
	for _, name := range []string{"tools", "ctl", "schemas", "rank", "call", "err"} {
		if !strings.Contains(sessions, name) {
			t.Errorf("diodls session/s1/agent/a lacks %s:\n%s", name, sessions)
		}
	}
}

// Over TCP, diod's clients get nothing without the token: no -a (diod's
// default attach name, "ctl"), -a / (what worked before the token), a
// wrong token, and (as root) the same from another user's process; with
// -a TOKEN, the tree. diod's clients send a Tauth first, then the Tattach:
// both carry the attach name.
func TestDiodTCPToken(t *testing.T) {
	diodls := testdeps.Program(t, testdeps.Diod, "diodls")
	e := newEnv(t, func(o *Options) { o.Token = testToken })
	tcp := e.listenTCP()
	diod := func(cred *syscall.Credential, args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		full := append([]string{"-s", tcp, "-t", strconv.Itoa(int(safetyNet.Seconds()))}, args...)
		cmd := exec.CommandContext(ctx, diodls, full...)
		cmd.Dir = "/"
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	users := []*syscall.Credential{nil}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("a client of another uid needs the user nobody: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		users = append(users, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
	}
	for _, cred := range users {
		who := "this user"
		if cred != nil {
			who = "uid " + strconv.Itoa(int(cred.Uid))
		}
		for _, args := range [][]string{{}, {"-a", "/"}, {"-a", "wrong-token-0123456789abcdef"}, {"-a", testToken + "x"}} {
			out, err := diod(cred, args...)
			if err == nil || !strings.Contains(out, "Permission denied") {
				t.Errorf("%s, diodls %s: %v, want a refusal (Permission denied):\n%s", who, strings.Join(args, " "), err, out)
			}
			if strings.Contains(out, "tools.json") {
				t.Errorf("%s, diodls %s listed the tree:\n%s", who, strings.Join(args, " "), out)
			}
		}
		out, err := diod(cred, "-a", testToken)
		if err != nil || !strings.Contains(out, "tools.json") || !strings.Contains(out, "session") {
			t.Errorf("%s, diodls -a TOKEN: %v\n%s", who, err, out)
		}
	}
}
