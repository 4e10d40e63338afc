package exec

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// The tests below are the red team's hostile tools, one per hole it found;
// each failed on the code before the fix.

// Without "network", no IP socket of any kind: UDP to loopback used to
// work for an ordinary user (Landlock does not cover UDP, and the empty
// network namespace was made only as root).
func TestNoUDPWithoutNetwork(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan string, 16)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	args := fmt.Sprintf(`{"op":"udp","addr":%q}`, pc.LocalAddr().String())
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.addProbe("offline", `{"description":"no network"}`)
			f.addProbe("online", `{"description":"network","network":true}`)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			res, err := f.call(r, "offline", args)
			if err == nil {
				t.Errorf("a tool without network sent UDP: %q", res.Stdout)
			} else if ce := wantKind(t, err, ErrExit); !strings.Contains(ce.Error(), "permission denied") && !strings.Contains(ce.Error(), "unreachable") {
				t.Errorf("refusal %v", ce)
			}
			select {
			case m := <-got:
				t.Errorf("the listener received %q from a tool without network", m)
			case <-time.After(100 * time.Millisecond):
			}
			// Control: with network the datagram arrives.
			f.mustOK(f.call(r, "online", args))
			select {
			case <-got:
			case <-time.After(safetyNet):
				t.Error("the network tool's datagram never arrived")
			}
		})
	}
}

// A tool cannot make setuid or setgid files (as root, the red team made a
// setuid-root copy of id that another user then ran as root).
func TestNoSetuidFiles(t *testing.T) {
	f := newFixture(t)
	f.add("suid", `{"description":"makes setuid copies"}`, `#!/bin/sh
cp /bin/sh ./a && chmod u+s ./a
cp /bin/sh ./b && chmod 6755 ./b
cp /bin/sh ./c && chmod g+s ./c
python3 -c 'import os; os.close(os.open("d", os.O_CREAT|os.O_WRONLY, 0o4755))'
python3 -c 'import os; fd = os.open("e", os.O_CREAT|os.O_WRONLY, 0o755); os.fchmod(fd, 0o2755)'
python3 -c 'import os; os.mknod("g", 0o104755)'
exit 0
`)
	res := f.mustOK(f.call(f.runner(nil), "suid", `{}`))
	for _, name := range []string{"a", "b", "c", "d", "e", "g"} {
		fi, err := os.Stat(filepath.Join(f.work, name))
		if err != nil {
			continue // refused outright: fine
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v: the tool set a setuid/setgid bit\nstderr: %s", name, fi.Mode(), res.Stderr)
		}
	}
	if n := strings.Count(string(res.Stderr), "Operation not permitted") + strings.Count(string(res.Stderr), "PermissionError"); n < 5 {
		t.Errorf("want every attempt refused (EPERM), stderr:\n%s", res.Stderr)
	}
}

// A descriptor the server inherited without close-on-exec (a shell's
// "5</root/secret") never reaches a tool.
func TestInheritedDescriptorsNotPassed(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.outside, "secret")
	os.WriteFile(secret, []byte("TOP-SECRET"), 0o600)
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC: inherited by every exec
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	f.add("fds", `{"description":"looks for inherited descriptors"}`,
		fmt.Sprintf("#!/bin/sh\nls /proc/self/fd\ncat /proc/self/fd/%d <&%d 2>/dev/null\ncat <&%d 2>/dev/null\nexit 0\n", fd, fd, fd))
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			res := f.mustOK(f.call(f.runner(func(o *Options) { o.Isolation = mode.iso }), "fds", `{}`))
			if strings.Contains(string(res.Stdout), "TOP-SECRET") {
				t.Fatalf("the tool read the inherited descriptor: %q", res.Stdout)
			}
			var fds []string
			for _, l := range strings.Fields(string(res.Stdout)) {
				if l != "0" && l != "1" && l != "2" {
					fds = append(fds, l)
				}
			}
			// ls opens one descriptor of its own to read the directory.
			if len(fds) > 1 {
				t.Errorf("the tool holds descriptors %v beyond 0-2 (and ls's own)", fds)
			}
		})
	}
}

// A tool cannot allocate more memory than its limit (the red team
// allocated 4 GiB unhindered), whichever way the helper sets the limit: on
// itself when it holds far less than the limit (canLimitSelf), else on the
// tool, traced at its start. This test binary as the helper holds about
// 100 MiB, or 400 MiB under the race detector: at 768 MiB it takes the
// limit on itself, at 256 MiB it does so only without the race detector,
// and under the 64 MiB cap it traces.
func TestMemoryLimit(t *testing.T) {
	testdeps.Long(t, "allocates 1 GiB")
	for _, limit := range []string{"256MiB", "768MiB"} {
		t.Run(limit, func(t *testing.T) { testMemoryLimit(t, limit) })
	}
}

func testMemoryLimit(t *testing.T, limit string) {
	f := newFixture(t)
	f.add("hog", `{"description":"allocates","limits":{"memory":"`+limit+`"}}`,
		"#!/bin/sh\nexec python3 -c 'b = bytearray(1 << 30); print(\"allocated\", len(b))'\n")
	f.add("modest", `{"description":"allocates a little","limits":{"memory":"`+limit+`"}}`,
		"#!/bin/sh\nexec python3 -c 'b = bytearray(64 << 20); print(\"allocated\", len(b))'\n")
	r := f.runner(nil)
	_, err := f.call(r, "hog", `{}`)
	if ce := wantKind(t, err, ErrExit); !strings.Contains(ce.Error(), "MemoryError") {
		t.Errorf("over the limit: %v", ce)
	}
	res := f.mustOK(f.call(r, "modest", `{}`))
	if !strings.Contains(string(res.Stdout), "allocated 67108864") {
		t.Errorf("within the limit: %q", res.Stdout)
	}
	// The server's cap wins over what a tool asks for.
	// (Under 64 MiB the interpreter may fail before the allocation.)
	capped := f.runner(func(o *Options) { o.MaxLimits.Memory = 64 << 20 })
	res, err = f.call(capped, "modest", `{}`)
	if ce := wantKind(t, err, ErrExit); res == nil || strings.Contains(string(res.Stdout), "allocated") {
		t.Errorf("capped at 64 MiB, below the interpreter plus 64 MiB: %v", ce)
	}
}

// The process limit holds per call: a tool cannot start more processes
// than its limit (a fork bomb made the server itself fail; the whole
// server-side test, inside an outer limit, is in cmd/toolsrv).
func TestProcessLimit(t *testing.T) {
	testdeps.Long(t, "700 processes against a limit of 64, ~10 s")
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			if mode.iso == IsolationNone && os.Geteuid() == 0 {
				t.Skip("a root toolsrv without namespaces has no process limit (documented); the namespaced mode is the one used")
			}
			f := newFixture(t)
			// 700 background sleeps, with a limit of 64 processes (a root
			// call's namespace holds up to sandbox.PidMax(64), about 380).
			tok := token(t)
			f.add("spawner", `{"description":"starts processes","limits":{"processes":64}}`,
				fmt.Sprintf("#!/bin/sh\nfor i in $(seq 700); do sleep %s & done\necho spawned\n", tok))
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			res, err := f.call(r, "spawner", `{}`)
			if err != nil && res == nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Stderr), "fork") {
				t.Errorf("no fork was refused; stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			goneOrKill(t, tok, "spawner")
		})
	}
}

// The process limit counts processes at once, not processes ever started:
// a tool that has run 400 commands one after another may still run a few
// at once. (As root the limit is its PID namespace's pid_max, and the
// kernel hands out only PIDs from 300 up once a namespace's PIDs wrap
// around: with pid_max at the kernel's floor, 301, a shell loop of 400
// commands left room for one process, and "sleep &" four times failed
// with "Cannot fork".)
func TestProcessLimitCountsProcessesAtOnce(t *testing.T) {
	testdeps.Long(t, "400 commands in one call, ~10 s")
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			// Without a user namespace, RLIMIT_NPROC counts every task of
			// the user (the fallback's approximation: the tasks at the
			// start plus the limit), so the tests running beside this one
			// as the same user take from the call's share as they start
			// threads and processes: a larger limit there, still well below
			// the 400 commands run one after another.
			limit := 32
			if mode.iso == IsolationNone {
				limit = 200
			}
			f.add("builder", fmt.Sprintf(`{"description":"runs many commands, then a few at once","limits":{"processes":%d}}`, limit),
				"#!/bin/sh\nfor i in $(seq 400); do /bin/true || exit 1; done\nfor j in 1 2 3 4 5 6 7 8; do sleep 0.2 & done\nwait\necho built\n")
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			res, err := f.call(r, "builder", `{}`)
			if err != nil {
				t.Fatalf("%v", err)
			}
			if strings.TrimSpace(string(res.Stdout)) != "built" {
				t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
			}
		})
	}
}

// Calls of a dead server leave temporary directories behind; the next
// runner sweeps them, and leaves those of live processes alone.
func TestStaleCallDirectoriesSwept(t *testing.T) {
	root := t.TempDir()
	dead := filepath.Join(root, fmt.Sprintf("%s%d-1234", tempPrefix, deadPID(t)))
	live := filepath.Join(root, fmt.Sprintf("%s%d-5678", tempPrefix, os.Getpid()))
	old := filepath.Join(root, tempPrefix+"9876543")
	other := filepath.Join(root, "unrelated")
	for _, d := range []string{dead, live, old, other} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * legacyTempAge)
	os.Chtimes(old, past, past)
	f := newFixture(t)
	r := f.runner(func(o *Options) { o.TempRoot = root })
	mine, err := r.temp.make()
	if err != nil {
		t.Fatal(err)
	}
	<-r.swept
	if !exists(mine) {
		t.Error("the sweep removed the runner's own directory")
	}
	for d, want := range map[string]bool{dead: false, live: true, old: false, other: true} {
		if exists(d) != want {
			t.Errorf("%s exists = %v, want %v", filepath.Base(d), !want, want)
		}
	}
}

// deadPID returns the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	return p.Pid
}

// Identify tells a tool's connection (and which call it belongs to) from
// any other process's, and a tool of another runner from one of ours.
func TestIdentifyPeer(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.addProbe("connector", `{"description":"connects to a unix socket"}`)
			sock := filepath.Join(f.work, "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			other := f.runner(func(o *Options) { o.Isolation = mode.iso })
			args := fmt.Sprintf(`{"op":"unix","path":%q}`, sock)

			peers := make(chan Peer, 4)
			errs := make(chan error, 4)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					p, err := r.Identify(c)
					if err != nil {
						errs <- err
					} else {
						peers <- p
					}
					c.Close()
				}
			}()
			next := func() Peer {
				t.Helper()
				select {
				case p := <-peers:
					return p
				case err := <-errs:
					t.Fatalf("Identify: %v", err)
				case <-time.After(safetyNet):
					t.Fatal("no connection")
				}
				return Peer{}
			}

			// This test process: not a tool.
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			p := next()
			c.Close()
			if p.Tool || p.Call != nil || p.PID != os.Getpid() {
				t.Errorf("the test process: %+v", p)
			}
			// A tool of this runner: its session and agent.
			cc := f.cc()
			cc.Session, cc.Agent = "s9", "a9"
			if _, err := r.Call(context.Background(), f.tool("connector"), []byte(args), cc); err != nil {
				t.Fatal(err)
			}
			p = next()
			if !p.Tool || p.Call == nil || p.Call.Session != "s9" || p.Call.Agent != "a9" {
				t.Errorf("a tool of this runner: %+v (call %+v)", p, p.Call)
			}
			// A tool of another runner: a tool, but no call of ours.
			if _, err := other.Call(context.Background(), f.tool("connector"), []byte(args), cc); err != nil {
				t.Fatal(err)
			}
			p = next()
			if !p.Tool || p.Call != nil {
				t.Errorf("a tool of another runner: %+v (call %+v)", p, p.Call)
			}
		})
	}
}

// A tool cannot reach into its sandbox helper: on 29c4465 it attached
// with ptrace to the helper thread that had started it (the only one
// under Landlock, and with its capabilities dropped), wrote into the
// memory every helper thread shares, and ran code on a thread that had
// neither Landlock nor dropped capabilities (as a user it read
// ~/.ssh/id_rsa; as root /etc/shadow). Every way in is tried, on every
// thread of the helper, in both isolation modes.
func TestToolCannotReachItsHelper(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.addProbe("intruder", `{"description":"attacks its helper"}`)
			res := f.mustOK(f.call(f.runner(func(o *Options) { o.Isolation = mode.iso }), "intruder", `{"op":"attack-helper"}`))
			out := strings.TrimSpace(string(res.Stdout))
			if !strings.Contains(out, "ptrace of helper thread") && !strings.Contains(out, "listing the helper's threads") {
				t.Fatalf("the attack did not run:\n%s\nstderr: %s", out, res.Stderr)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "escaped") {
					t.Errorf("%s", l)
				}
			}
			if t.Failed() {
				t.Logf("all attempts:\n%s", out)
			}
		})
	}
}

// Only a tool that declares "ptrace" may trace, and only its own call's
// processes: even then its helper stays out of reach.
func TestPtraceOnlyWhenDeclared(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.addProbe("plain", `{"description":"traces without saying so"}`)
			f.addProbe("debugger", `{"description":"a debugger","ptrace":true}`)
			r := f.runner(func(o *Options) { o.Isolation = mode.iso })
			res, err := f.call(r, "plain", `{"op":"trace-child"}`)
			if ce := wantKind(t, err, ErrExit); !strings.Contains(string(res.Stdout), "operation not permitted") {
				t.Errorf("an undeclared trace: %v, output %q", ce, res.Stdout)
			}
			f.mustOK(f.call(r, "debugger", `{"op":"trace-child"}`))
			res = f.mustOK(f.call(r, "debugger", `{"op":"attack-helper"}`))
			for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
				if strings.HasPrefix(l, "escaped") {
					t.Errorf("a tool that declares ptrace: %s", l)
				}
			}
		})
	}
}

// A tool sees nothing of the user's keyrings: on 29c4465 keyctl read a
// key added on the host and added keys to the user keyring (as root,
// root's real one), and /proc/keys listed the host's keys.
func TestKeyringsClosed(t *testing.T) {
	name := "toolsrv-test-" + token(t)
	id, err := unix.AddKey("user", name, []byte("HOST-SECRET"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatalf("adding a key on the host (the test needs the kernel's keyrings): %v", err)
	}
	t.Cleanup(func() {
		unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		if pid, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", name+"-planted", 0); err == nil {
			unix.KeyctlInt(unix.KEYCTL_UNLINK, pid, unix.KEY_SPEC_USER_KEYRING, 0, 0)
		}
	})
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.addProbe("keys", `{"description":"looks at keyrings"}`)
			res := f.mustOK(f.call(f.runner(func(o *Options) { o.Isolation = mode.iso }), "keys", fmt.Sprintf(`{"op":"keyring","path":%q}`, name)))
			out := strings.TrimSpace(string(res.Stdout))
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "escaped") && !(mode.iso == IsolationNone && strings.Contains(l, "/proc/keys")) {
					t.Errorf("%s", l)
				}
			}
			if strings.Contains(out, "HOST-SECRET") {
				t.Errorf("the key's contents reached the tool:\n%s", out)
			}
			if _, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", name+"-planted", 0); err == nil {
				t.Error("the tool planted a key in the user keyring")
			}
		})
	}
}

// A call writes no file over its file-size limit and no more than its
// temporary directory holds (the red team wrote 3 GiB to the working
// directory and $TMPDIR); the limits come from the .meta, within the
// server's caps. Without a mount namespace only the file size holds.
func TestFileSizeLimit(t *testing.T) {
	for _, mode := range isolations {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			f.add("filler", `{"description":"fills the disk","limits":{"fileSize":"2MiB","tempSize":"4MiB"}}`, `#!/bin/sh
head -c 3145728 /dev/zero > big && echo WROTE-BIG
for i in 1 2 3 4 5 6; do head -c 1048576 /dev/zero > "$TMPDIR/t$i" || break; done
exit 0
`)
			res := f.mustOK(f.call(f.runner(func(o *Options) { o.Isolation = mode.iso }), "filler", `{}`))
			if strings.Contains(string(res.Stdout), "WROTE-BIG") || !strings.Contains(string(res.Stderr), "File too large") {
				t.Errorf("a 3 MiB file under a 2 MiB limit: %q, %q", res.Stdout, res.Stderr)
			}
			if fi, err := os.Stat(filepath.Join(f.work, "big")); err == nil && fi.Size() > 2<<20 {
				t.Errorf("big is %d bytes", fi.Size())
			}
			if tmpCapped := mode.iso != IsolationNone; tmpCapped != strings.Contains(string(res.Stderr), "No space left on device") {
				t.Errorf("6 MiB into a 4 MiB temporary directory (capped: %v): %q", tmpCapped, res.Stderr)
			}
		})
	}
}
