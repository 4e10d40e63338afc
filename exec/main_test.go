package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// safetyNet bounds a test's wait for an event (an answer, an exit, a
// connection): the test waits for the event itself, and this only ends a
// wait that would never end. Generous, because a loaded machine (load ~170
// on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

// The test binary plays two extra roles:
//   - the sandbox helper (Options.SelfExe is the test binary itself), and
//   - a "probe" tool written in Go (a symlink named after a tool points to
//     the test binary; the sandbox passes OLLIE_TOOL=name), for checks that
//     need system calls a shell cannot make (MPTCP sockets).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		os.Exit(HelperMain(os.Args[2:]))
	}
	if name := os.Getenv("OLLIE_TOOL"); name != "" && filepath.Base(os.Args[0]) == name {
		os.Exit(probeMain())
	}
	os.Exit(m.Run())
}

// probeArgs are the probe tool's arguments.
type probeArgs struct {
	Op   string `json:"op"`   // dial, listen, socket-mptcp, read, udp, unix
	Addr string `json:"addr"` // dial
	// MPTCP makes dial and listen use Multipath TCP.
	MPTCP bool   `json:"mptcp"`
	Path  string `json:"path"` // read
}

// probeMain does one operation and prints "ok ..." (exit 0) or
// "fail ..." (exit 1).
func probeMain() int {
	var a probeArgs
	if err := json.NewDecoder(os.Stdin).Decode(&a); err != nil {
		fmt.Println("fail decoding arguments:", err)
		return 1
	}
	var err error
	switch a.Op {
	case "dial":
		d := net.Dialer{Timeout: 3 * time.Second}
		d.SetMultipathTCP(a.MPTCP)
		var c net.Conn
		if c, err = d.Dial("tcp", a.Addr); err == nil {
			_, err = c.Write([]byte("hello\n"))
			c.Close()
		}
	case "listen":
		var lc net.ListenConfig
		lc.SetMultipathTCP(a.MPTCP)
		var ln net.Listener
		if ln, err = lc.Listen(context.Background(), "tcp", "127.0.0.1:0"); err == nil {
			ln.Close()
		}
	case "socket-mptcp":
		// A raw MPTCP socket, bypassing Go's fallback to TCP.
		var fd int
		if fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262); err == nil {
			syscall.Close(fd)
		}
	case "read":
		_, err = os.ReadFile(a.Path)
	case "udp":
		// One datagram to a loopback UDP listener (Landlock does not
		// cover UDP).
		var c net.Conn
		if c, err = net.Dial("udp", a.Addr); err == nil {
			_, err = c.Write([]byte("hello\n"))
			c.Close()
		}
	case "unix":
		// Connect to a Unix socket and wait for the other side to close.
		var c net.Conn
		if c, err = net.Dial("unix", a.Path); err == nil {
			_, err = c.Read(make([]byte, 1))
			c.Close()
			if err == io.EOF {
				err = nil
			}
		}
	case "trace-child":
		// Trace a child of its own, as a debugger does.
		err = traceChild()
	case "keyring":
		lines := attackKeyring(a.Path)
		fmt.Println(strings.Join(lines, "\n"))
		return 0
	case "attack-helper":
		lines := attackHelper()
		fmt.Println(strings.Join(lines, "\n"))
		return 0
	case "attack-pid":
		// What a tool that sees the host's processes can do to another
		// process of toolsrv's (Path: its PID).
		pid, _ := strconv.Atoi(a.Path)
		fmt.Println(strings.Join(attackProcess(pid), "\n"))
		return 0
	default:
		err = fmt.Errorf("unknown op %q", a.Op)
	}
	if err != nil {
		fmt.Println("fail", a.Op, err)
		return 1
	}
	fmt.Println("ok", a.Op)
	return 0
}

// fixture is a tools directory and a working directory.
type fixture struct {
	t           testing.TB
	tools, work string
	outside     string // a directory the sandbox does not allow
	selfExe     string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, tools: t.TempDir(), work: t.TempDir(), outside: t.TempDir(), selfExe: self}
	return f
}

// add writes NAME.meta and, when script is not empty, an executable NAME.
func (f *fixture) add(name, meta, script string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.tools, name+".meta"), []byte(meta), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(f.tools, name), []byte(script), 0o755); err != nil {
			f.t.Fatal(err)
		}
	}
}

// addProbe makes tool NAME the Go probe (see probeMain).
func (f *fixture) addProbe(name, meta string) {
	f.t.Helper()
	f.add(name, meta, "")
	if err := os.Symlink(f.selfExe, filepath.Join(f.tools, name)); err != nil {
		f.t.Fatal(err)
	}
}

// tool loads the tools directory and returns tool NAME.
func (f *fixture) tool(name string) *registry.Tool {
	f.t.Helper()
	reg := registry.New(registry.Options{Dirs: []string{f.tools}})
	if err := reg.Load(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	cat := reg.Catalog()
	tool, ok := cat.Get(name)
	if !ok {
		f.t.Fatalf("tool %s not in catalog; problems: %+v", name, cat.Problems)
	}
	return tool
}

// runner makes a runner of the test binary as helper. With
// TOOLSRV_TEST_PREPARE=1 in the environment, every sandboxed call runs on
// a helper prepared for it (Options.Prepare): the suites check that
// prepared helpers keep every guarantee (make test runs them both ways).
func (f *fixture) runner(mod func(*Options)) *Runner {
	f.t.Helper()
	opts := Options{SelfExe: f.selfExe, KillGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&opts)
	}
	if os.Getenv("TOOLSRV_TEST_PREPARE") == "1" && opts.Prestarted == nil && !opts.Prepare {
		opts.Prepare, opts.prepareEvery = true, true
	}
	r, err := NewRunner(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(r.Close)
	return r
}

func (f *fixture) cc() CallContext {
	return CallContext{WorkDir: f.work, Session: "s1", Agent: "a1", ToolsPath: f.tools}
}

// call runs tool NAME with args through r. (A resident runner removes a
// call's temporary directory right after the call, in the background:
// call waits for that too.)
func (f *fixture) call(r *Runner, name, args string) (*Result, error) {
	f.t.Helper()
	res, err := r.Call(context.Background(), f.tool(name), []byte(args), f.cc())
	if r.prep != nil {
		r.prep.removing.Wait()
	}
	return res, err
}

func (f *fixture) mustOK(res *Result, err error) *Result {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("call failed: %v", err)
	}
	return res
}

func wantKind(t *testing.T, err, kind error) *CallError {
	t.Helper()
	if err == nil {
		t.Fatalf("call succeeded, want %v", kind)
	}
	var ce *CallError
	if !errors.As(err, &ce) || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want a CallError of kind %v", err, err, kind)
	}
	return ce
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// listener is a loopback TCP listener that counts the connections it gets.
type listener struct {
	ln    net.Listener
	conns chan string
}

func newListener(t *testing.T) *listener {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(true) // accepts TCP and MPTCP
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln, conns: make(chan string, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(io.LimitReader(c, 100))
			c.Close()
			l.conns <- strings.TrimSpace(string(b))
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// count drains what arrives within wait, returning early once it has want.
func (l *listener) count(want int, wait time.Duration) int {
	n := 0
	deadline := time.After(wait)
	for {
		if want > 0 && n == want {
			return n
		}
		select {
		case <-l.conns:
			n++
		case <-deadline:
			return n
		}
	}
}
