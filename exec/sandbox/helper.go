package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// HelperArg is the hidden first argument that turns the toolsrv binary into
// the sandbox helper: "toolsrv __sandbox POLICY -- ARGV...". The binary's
// main must call HelperMain(os.Args[2:]) before doing anything else when it
// sees it.
const HelperArg = "__sandbox"

// ExitSandbox is the helper's exit status when it could not apply the
// sandbox or could not execute the tool (the reason goes to the status pipe
// and to standard error).
const ExitSandbox = 126

// StatusFD is the helper's file descriptor for the status pipe, on which it
// reports one Status when it ends.
const StatusFD = 3

// landlockConfig is the Landlock ABI version toolsrv was written and tested
// against. Newer ABIs (V9+ restrict pathname unix sockets, V10+ UDP) change
// what tools can do and must be adopted deliberately.
func landlockConfig() landlock.Config { return landlock.V7 }

// landlockConfigAt is the configuration of ABI abi, at most landlockConfig:
// what a kernel of that ABI handles (best effort downgrades the pinned
// configuration to the kernel's by itself; this also names a lower one, for
// Policy.ABI).
func landlockConfigAt(abi int) landlock.Config {
	configs := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}
	if abi < 1 || abi > len(configs) {
		return landlockConfig()
	}
	return configs[abi-1]
}

// referABI is the first Landlock ABI that can allow renaming and linking a
// file into another directory (LANDLOCK_ACCESS_FS_REFER, Linux 5.19).
// Before it, Landlock always denies that (EXDEV): a rule asking for it
// makes go-landlock's best effort enforce nothing at all, so it is asked
// for only from this ABI on.
const referABI = 2

// MinABI is the lowest Landlock ABI toolsrv accepts as "sandboxed": ABI 1
// already restricts the filesystem; network isolation does not depend on
// Landlock's TCP rules (the seccomp filter refuses the sockets).
const MinABI = 1

// LandlockABI reports the kernel's Landlock ABI version (0 and an error when
// Landlock is unavailable).
func LandlockABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock is not available on this kernel: %w", err)
	}
	return v, nil
}

// HelperMain is the sandbox helper. It applies the Policy to its own
// process (limits, the tool marker, and unless Unconfined: capabilities,
// the seccomp filter, Landlock), starts the tool as its child, and stays
// as the call's init until the tool and everything it started are gone;
// then it reports a Status on StatusFD and exits with the tool's status
// (128+N for a signal). It returns ExitSandbox when the sandbox could not
// be applied or the tool not started. args are os.Args[2:]:
// POLICY "--" ARGV..., or PrestartArg alone for a helper that Prestart
// started (its Order, read from OrderFD, gives the rest).
func HelperMain(args []string) int {
	// The server's signals are taken from here on (see supervisor).
	sup := newSupervisor()
	// The main goroutine keeps the main thread: the thread that starts
	// the tool (launch) is another one, which ends with the start.
	runtime.LockOSThread()
	// The threads the helper needs while the tool runs, started while
	// the call's process limit still has room for them.
	holdThreads(heldThreads)
	h := &helper{status: os.NewFile(StatusFD, "status")}
	env := os.Environ()
	if len(args) == 1 && args[0] == PrestartArg {
		// Prestarted: the call comes on OrderFD.
		var ok bool
		var err error
		args, env, ok, err = prestartedCall()
		if err != nil {
			return h.fail(err)
		}
		if !ok {
			return 0 // discarded: no call
		}
	}
	p, argv, err := parseCall(args)
	if err != nil {
		return h.fail(err)
	}
	// Whether the helper may take the memory limit on itself, measured
	// before the sandbox hides /proc from it.
	selfLimit := mayLimitSelf(p)
	// Nothing the helper inherited beyond the standard streams and the
	// status pipe reaches the tool.
	if err := CloseInherited(StatusFD); err != nil {
		return h.fail(err)
	}
	sup.pidNS = p.PidNS
	sup.listen()
	if err := h.isolate(p); err != nil {
		return h.fail(err)
	}
	l, err := restrictHelper(p)
	if err != nil {
		return h.fail(err)
	}
	// A call ended before its tool started does not start it.
	if st, ending := sup.ending(); ending {
		h.report(st)
		return 128 + st.Signal
	}
	pid, ended, err := launch(l, p, argv, env, selfLimit)
	if err != nil {
		return h.fail(err)
	}
	handOverStreams()
	st := sup.run(pid, ended)
	h.report(st)
	if st.Signal != 0 {
		return 128 + st.Signal
	}
	return st.Exit
}

// helper is what HelperMain reports with: the status pipe, and what the
// call's setup found out that every Status carries.
type helper struct {
	status     *os.File
	sharedProc string // why the PID namespace kept the host's /proc
}

// report writes st on the status pipe.
func (h *helper) report(st Status) {
	if h.status != nil {
		st.SharedProc = h.sharedProc
		json.NewEncoder(h.status).Encode(st)
	}
}

// fail reports err on standard error and the status pipe and returns
// ExitSandbox.
func (h *helper) fail(err error) int {
	fmt.Fprintln(os.Stderr, "toolsrv sandbox: "+err.Error())
	h.report(Status{Error: err.Error(), Exit: ExitSandbox})
	return ExitSandbox
}

// prestartedCall reads a prestarted helper's call from OrderFD, enters its
// working directory, and returns its arguments (POLICY "--" ARGV...) and
// environment. ok is false when the helper was discarded without a call.
func prestartedCall() (args, env []string, ok bool, err error) {
	o, ok, err := readOrder(os.NewFile(OrderFD, "order"))
	if err != nil || !ok {
		return nil, nil, ok, err
	}
	if o.Dir != "" {
		if err := os.Chdir(o.Dir); err != nil {
			return nil, nil, false, fmt.Errorf("entering the working directory: %w", err)
		}
	}
	return append([]string{string(o.Policy), "--"}, o.Argv...), o.Env, true, nil
}

// parseCall reads the helper's arguments, POLICY "--" ARGV..., and checks
// them: a Policy checkPolicy accepts and a command given by absolute path.
func parseCall(args []string) (Policy, []string, error) {
	if len(args) < 3 || args[1] != "--" {
		return Policy{}, nil, errors.New("usage: toolsrv " + HelperArg + " POLICY -- COMMAND [ARGS...] (internal; started by toolsrv itself)")
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return Policy{}, nil, fmt.Errorf("bad Policy: %w", err)
	}
	argv := args[2:]
	if !filepath.IsAbs(argv[0]) {
		return Policy{}, nil, fmt.Errorf("command %q is not an absolute path", argv[0])
	}
	if err := checkPolicy(p); err != nil {
		return Policy{}, nil, err
	}
	return p, argv, nil
}

// mayLimitSelf says whether the helper may take the call's memory limit on
// itself (see canLimitSelf).
func mayLimitSelf(p Policy) bool {
	selfLimit := false
	if p.Memory > 0 {
		data, err := dataSize()
		selfLimit = err == nil && canLimitSelf(data, p.Memory)
	}
	return selfLimit
}

// isolate gives the call its own mounts and, with a PID namespace, its own
// /proc (recording in h.sharedProc why not, where the kernel refuses), or
// without one makes the helper the call's subreaper; then it makes the
// mounts the policy asks for.
func (h *helper) isolate(p Policy) error {
	// The call's mount namespace (with its PID namespace, or alone for a
	// tool that sees the host's processes) is made its own first: every
	// mount below depends on it.
	var mountErr error
	if p.MountNS {
		mountErr = ownMounts()
	} else {
		mountErr = errors.New("the call has no mount namespace of its own")
	}
	if p.PidNS {
		// Where the kernel refuses (a container that masks parts of its
		// /proc refuses an unprivileged procfs mount), the tool runs with
		// the host's /proc, as it would without the mount namespace, and
		// the server says so.
		err := mountErr
		if err == nil {
			err = mountProc()
		}
		if err != nil {
			h.sharedProc = err.Error()
		} else {
			// Best effort: what they show is the keys' descriptions only
			// (the seccomp filter keeps their contents and the keyrings
			// from the tool), and a kernel that refuses the bind must not
			// stop every call.
			_ = hideKeys()
		}
	} else {
		if err := becomeSubreaper(); err != nil {
			return fmt.Errorf("becoming the call's subreaper: %w", err)
		}
	}
	return callMounts(p, mountErr)
}

// restrictHelper restricts the helper itself before it starts the tool, in
// this order: the call's limits, then its capabilities, then its
// dumpability. It returns the thread to start the tool from.
func restrictHelper(p Policy) (*launcher, error) {
	if err := applyLimits(p); err != nil {
		return nil, err
	}
	// From here on the helper needs no capability: the launching thread
	// drops what a tool must not have (all of them in a user namespace),
	// the bounding set with it, then every thread does.
	drop := dropsCapabilities(p)
	l, err := startLauncher(drop)
	if err != nil {
		return nil, err
	}
	if drop {
		if err := dropCapabilities(allThreads(), false); err != nil {
			return nil, err
		}
	}
	// Nothing of the call may attach to the helper or read or write its
	// memory (ptrace, process_vm_*, /proc/PID/mem): that needs
	// CAP_SYS_PTRACE over a process that is not dumpable, which no tool
	// has. (See launch for why the helper is out of the tool's reach in
	// the first place.) Not earlier: a process that is not dumpable may no
	// longer write its own /proc/self files (applyLimits' OOM score), and
	// nothing of the tool runs before launch.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	return l, nil
}

// handOverStreams points the helper's standard streams at /dev/null once
// the tool started.
func handOverStreams() {
	// Only the tool holds the call's standard streams now: the server sees
	// end of file when the tool and its children close them, and a tool
	// that never reads its input makes the server's write fail.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
}
