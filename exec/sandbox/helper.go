package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

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
	// Capabilities are per thread: keep this goroutine on the thread that
	// drops them and then forks the tool. (Landlock, the seccomp filter
	// and the limits apply to the whole process.)
	runtime.LockOSThread()
	// The threads the helper needs while the tool runs, started while
	// the call's process limit still has room for them.
	holdThreads(heldThreads)
	status := os.NewFile(StatusFD, "status")
	var sharedProc string // why the PID namespace kept the host's /proc
	report := func(st Status) {
		if status != nil {
			st.SharedProc = sharedProc
			json.NewEncoder(status).Encode(st)
		}
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "toolsrv sandbox: "+err.Error())
		report(Status{Error: err.Error(), Exit: ExitSandbox})
		return ExitSandbox
	}
	env := os.Environ()
	if len(args) == 1 && args[0] == PrestartArg {
		// Prestarted: the call comes on OrderFD.
		o, ok, err := readOrder(os.NewFile(OrderFD, "order"))
		if err != nil {
			return fail(err)
		}
		if !ok {
			return 0 // discarded: no call
		}
		if o.Dir != "" {
			if err := os.Chdir(o.Dir); err != nil {
				return fail(fmt.Errorf("entering the working directory: %w", err))
			}
		}
		args = append([]string{string(o.Policy), "--"}, o.Argv...)
		env = o.Env
	}
	if len(args) < 3 || args[1] != "--" {
		return fail(errors.New("usage: toolsrv " + HelperArg + " POLICY -- COMMAND [ARGS...] (internal; started by toolsrv itself)"))
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fail(fmt.Errorf("bad Policy: %w", err))
	}
	argv := args[2:]
	if !filepath.IsAbs(argv[0]) {
		return fail(fmt.Errorf("command %q is not an absolute path", argv[0]))
	}
	if err := checkPolicy(p); err != nil {
		return fail(err)
	}
	// Whether the helper may take the memory limit on itself, measured
	// before the sandbox hides /proc from it.
	selfLimit := false
	if p.Memory > 0 {
		data, err := dataSize()
		selfLimit = err == nil && canLimitSelf(data, p.Memory)
	}
	// Nothing the helper inherited beyond the standard streams and the
	// status pipe reaches the tool.
	if err := CloseInherited(StatusFD); err != nil {
		return fail(err)
	}
	sup.pidNS = p.PidNS
	sup.listen()
	if p.PidNS {
		// Where the kernel refuses (a container that masks parts of its
		// /proc refuses an unprivileged procfs mount), the tool runs with
		// the host's /proc, as it would without the mount namespace, and
		// the server says so.
		if err := mountProc(); err != nil {
			sharedProc = err.Error()
		}
	} else {
		if err := becomeSubreaper(); err != nil {
			return fail(fmt.Errorf("becoming the call's subreaper: %w", err))
		}
	}
	if err := applyLimits(p); err != nil {
		return fail(err)
	}
	if p.Unconfined {
		if os.Geteuid() != 0 {
			// A helper in a user namespace of its own holds capabilities
			// there that nothing needs.
			if err := dropCapabilities(); err != nil {
				return fail(err)
			}
		}
	} else if err := confine(p); err != nil {
		return fail(err)
	}
	// A call ended before its tool started does not start it.
	if st, ending := sup.ending(); ending {
		report(st)
		return 128 + st.Signal
	}
	// The memory limit: on the helper itself when it holds little (the
	// tool inherits it at the fork, and the helper stays far below it);
	// else the tool starts traced, so that it stops right after its
	// execve, before it runs anything, and limitMemory sets the limit on it
	// alone.
	traced := p.Memory > 0 && !selfLimit
	if selfLimit {
		if err := limitSelf(p.Memory); err != nil {
			return fail(err)
		}
	}
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Ptrace: traced}}
	pid, err := syscall.ForkExec(argv[0], argv, attr)
	var ended *Status // the tool died before it could run
	if errors.Is(err, syscall.EPERM) && traced {
		// Tracing refused (the helper is itself traced, or the system
		// forbids ptrace): the limit goes on the helper, and so on the
		// tool, before it starts.
		if lerr := limitSelf(p.Memory); lerr != nil {
			return fail(lerr)
		}
		attr.Sys.Ptrace = false
		pid, err = syscall.ForkExec(argv[0], argv, attr)
	} else if err == nil && traced {
		var lerr error
		if ended, lerr = limitMemory(pid, p.Memory); lerr != nil {
			syscall.Kill(pid, syscall.SIGKILL)
			return fail(lerr)
		}
	}
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EACCES) && !p.Unconfined {
			hint = " (the sandbox allows executing only system directories and the tool's own directory)"
		}
		return fail(fmt.Errorf("cannot execute %s: %w%s", argv[0], err, hint))
	}
	// Only the tool holds the call's standard streams now: the server sees
	// end of file when the tool and its children close them, and a tool
	// that never reads its input makes the server's write fail.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
	st := sup.run(pid, ended)
	report(st)
	if st.Signal != 0 {
		return 128 + st.Signal
	}
	return st.Exit
}

// confine applies capabilities, the seccomp filter and Landlock to the
// helper. Any error means nothing may run: Landlock enforces nothing when
// building the ruleset fails.
func confine(p Policy) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < MinABI {
		return fmt.Errorf("landlock ABI %d is too old", abi)
	}
	rules, err := policyRules(p)
	if err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := installFilter(filterRules{network: p.Network}); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	// One ruleset: paths, network (no TCP rule, so every connect and bind
	// is denied; not handled at all for tools with network) and scoping.
	cfg := landlockConfig()
	if p.Network {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock has nothing to restrict on this kernel")
	}
	defer unix.Close(fd)
	// Only this thread, the one that starts the tool, is restricted (the
	// tool inherits its domain). Restricting every thread of the helper
	// would go through the psx library, which finds the threads through
	// /proc/PID/task, a path that names another process inside a PID
	// namespace. The helper's other threads run only its own code.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("applying landlock: %w", err)
	}
	return nil
}
