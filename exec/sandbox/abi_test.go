package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// abiProbeArg makes the test binary the probe of TestOlderLandlockABIs:
// it tries each operation given as OP ARG [ARG] and prints one line per
// operation, "OP: ok" or "OP: " and the error.
const abiProbeArg = "__abi_probe"

func abiProbe(args []string) {
	for len(args) > 0 {
		op, n := args[0], 1
		var err error
		switch op {
		case "write":
			err = os.WriteFile(args[1], []byte("written by a tool\n"), 0o644)
		case "read":
			_, err = os.ReadFile(args[1])
		case "link": // a hard link into another directory: Landlock's "refer"
			err, n = os.Link(args[1], args[2]), 2
		case "truncate": // truncate(2) by path
			err = syscall.Truncate(args[1], 0)
		case "opentrunc": // open(2) for reading, with O_TRUNC
			var fd int
			if fd, err = syscall.Open(args[1], syscall.O_RDONLY|syscall.O_TRUNC, 0); err == nil {
				syscall.Close(fd)
			}
		case "abstract": // connect to an abstract Unix socket
			var c net.Conn
			if c, err = net.Dial("unix", "@"+args[1]); err == nil {
				c.Close()
			}
		case "signal": // signal 0 to a process
			pid, _ := strconv.Atoi(args[1])
			err = syscall.Kill(pid, 0)
		case "tcp":
			var c net.Conn
			if c, err = net.Dial("tcp", args[1]); err == nil {
				c.Close()
			}
		default:
			err = errors.New("unknown probe")
		}
		if err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) {
				err = errno
			}
			fmt.Printf("%s: %v\n", op, err)
		} else {
			fmt.Printf("%s: ok\n", op)
		}
		args = args[1+n:]
	}
}

// What a tool can and cannot do at each Landlock ABI a kernel may have
// (Policy.ABI confines it as a kernel of that ABI would), as the README's
// table says: at every ABI it writes and reads nothing outside its
// directories and opens no TCP socket (the seccomp filter); renaming or
// linking into another directory needs ABI 2 (Linux 5.19); truncating a
// file it may not write is refused by Landlock from ABI 3 (Linux 6.2) and
// by the seccomp filter before; abstract Unix sockets and signals outside
// the sandbox are refused from ABI 6 (Linux 6.12).
func TestOlderLandlockABIs(t *testing.T) {
	kernel, err := LandlockABI()
	if err != nil {
		t.Fatalf("this kernel has no Landlock: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	abstract := fmt.Sprintf("toolsrv-abi-test-%d", os.Getpid())
	al, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	outsider := exec.Command("sleep", "600")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outsider.Process.Kill(); outsider.Wait() }()

	for abi := MinABI; abi <= min(kernel, 7); abi++ {
		t.Run("ABI "+strconv.Itoa(abi), func(t *testing.T) {
			work, outside, repo := t.TempDir(), t.TempDir(), t.TempDir()
			for _, d := range []string{"a", "b"} {
				if err := os.Mkdir(filepath.Join(work, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			files := map[string]string{
				filepath.Join(work, "a", "x"):       "x",
				filepath.Join(work, "a", "keep.me"): "kept\n",
				filepath.Join(outside, "secret"):    "a secret\n",
				filepath.Join(outside, "bashrc"):    "export PATH\n",
				filepath.Join(repo, "readme"):       "read me\n",
			}
			for p, c := range files {
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The call sees the host's processes (no PID namespace), as a
			// hostProcesses tool would, so that a signal can reach one.
			ns := DefaultNamespaces()
			ns.PID, ns.Mount = false, true
			p := callPolicy(t, ns, work)
			p.ABI, p.Exec, p.Read = abi, []string{self}, []string{repo}
			const (
				ok, denied, eperm = "ok", "permission denied", "operation not permitted"
				exdev             = "invalid cross-device link"
			)
			from := func(first int, before, after string) string {
				if abi < first {
					return before
				}
				return after
			}
			probes := []struct {
				args []string
				want string
			}{
				{[]string{"write", filepath.Join(work, "a", "keep.me")}, ok},
				{[]string{"write", filepath.Join(outside, "new")}, denied},
				{[]string{"read", filepath.Join(outside, "secret")}, denied},
				{[]string{"read", filepath.Join(repo, "readme")}, ok},
				{[]string{"link", filepath.Join(work, "a", "x"), filepath.Join(work, "b", "x")}, from(2, exdev, ok)},
				{[]string{"truncate", filepath.Join(outside, "bashrc")}, denied},
				{[]string{"opentrunc", filepath.Join(repo, "readme")}, denied},
				{[]string{"truncate", filepath.Join(work, "a", "x")}, from(3, denied, ok)},
				{[]string{"abstract", abstract}, from(6, ok, eperm)},
				{[]string{"signal", strconv.Itoa(outsider.Process.Pid)}, from(6, ok, eperm)},
				{[]string{"tcp", ln.Addr().String()}, denied},
			}
			argv := []string{self, abiProbeArg}
			for _, pr := range probes {
				argv = append(argv, pr.args...)
			}
			out, errs, st := runArgv(t, p, ns, argv...)
			if st.Error != "" || st.Exit != 0 {
				t.Fatalf("the probe did not run: %+v\n%s%s", st, out, errs)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(probes) {
				t.Fatalf("%d answers to %d probes:\n%s%s", len(lines), len(probes), out, errs)
			}
			for i, pr := range probes {
				if want := pr.args[0] + ": " + pr.want; lines[i] != want {
					t.Errorf("%s: %q, want %q", strings.Join(pr.args, " "), lines[i], want)
				}
			}
			// What the tool could change, changed; nothing else did.
			files[filepath.Join(work, "a", "keep.me")] = "written by a tool\n"
			if abi >= 3 {
				files[filepath.Join(work, "a", "x")] = ""
			}
			for p, c := range files {
				if b, err := os.ReadFile(p); err != nil || string(b) != c {
					t.Errorf("%s: %q, %v; want %q", p, b, err, c)
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
				t.Error("the tool wrote outside its directories")
			}
			// What a shell does in its working directory works at every
			// ABI: ">" truncates an open file, truncate(1) uses ftruncate.
			sh, errs, st := runShell(t, p, ns, `printf abcdef > w && printf xyz > w && truncate -s 2 w && cat w && mv w a/ && mv a/w b/w && cat b/w`)
			if st.Error != "" || st.Exit != 0 || sh != "xyxy" {
				t.Errorf("a shell in its working directory: %q, %+v\n%s", sh, st, errs)
			}
		})
	}
}
