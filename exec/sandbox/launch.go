package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// launch starts the tool confined by p and returns its PID, or its Status
// when it died before it could run (ended).
//
// The tool is started from a thread of its own, which confines itself
// (no_new_privs, the seccomp filter, Landlock: each of them applies to the
// calling thread and is inherited by the processes it starts), forks the
// tool and then ends: its goroutine returns with the thread still locked,
// and the Go runtime ends such a thread rather than reuse it. So no thread
// of the helper shares the tool's Landlock domain once the tool runs, and
// Landlock forbids a process to ptrace one outside its domain: the tool
// cannot attach to any thread of the helper. Before that fix the helper
// confined the thread it kept as its supervisor, and a tool attached to
// that thread, wrote into the memory all of the helper's threads share,
// and ran code on one that had neither Landlock nor dropped capabilities.
// Landlock's own way to confine every thread at once (thread
// synchronisation) is not in the kernels toolsrv supports, and would put
// the helper inside the tool's domain, where ptrace is allowed.
//
// Two more layers hold while the launching thread is still ending, and
// for a tool that declares "ptrace": the helper is not dumpable (attaching
// to it, process_vm_* and /proc/PID/mem need CAP_SYS_PTRACE, which no tool
// has), and the seccomp filter refuses ptrace and process_vm_* to tools
// that do not declare the need (filterRules.ptrace).
//
// Threads the Go runtime starts while the launching thread runs are
// started by its template thread, not cloned from a locked thread, so
// none of them inherits the launching thread's state.
//
// selfLimit: the memory limit is on the helper already (canLimitSelf);
// otherwise, when p has one, the tool starts traced and limitMemory sets
// it before the tool runs its first instruction (the launching thread is
// its tracer).
func launch(l *launcher, p Policy, argv, env []string, selfLimit bool) (pid int, ended *Status, err error) {
	l.run <- func() {
		var s started
		s.pid, s.ended, s.err = launchOnThisThread(p, argv, env, selfLimit)
		l.done <- s
	}
	s := <-l.done
	return s.pid, s.ended, s.err
}

// launcher is the thread the tool is started from, prepared before the
// helper drops its capabilities (restrictHelper): it drops its own at
// once, the bounding set with them, while it still may (CAP_SETPCAP).
// The helper's other threads then drop theirs in two system calls
// (capset and the ambient set, on every thread) rather than one per
// capability of the bounding set: the bounding set only bounds what an
// execve grants, and no other thread of the helper executes anything.
type launcher struct {
	run  chan func()
	done chan started
}

type started struct {
	pid   int
	ended *Status
	err   error
}

// startLauncher starts the launching thread; with drop it drops the
// capabilities of that thread (see dropCapabilities).
func startLauncher(drop bool) (*launcher, error) {
	l := &launcher{run: make(chan func()), done: make(chan started, 1)}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine.
		runtime.LockOSThread()
		var err error
		if drop {
			err = dropCapabilities(unix.Syscall, true)
		}
		ready <- err
		if err == nil {
			(<-l.run)()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return l, nil
}

// launchOnThisThread confines the calling thread, the launcher's, and
// starts the tool from it (see launch).
func launchOnThisThread(p Policy, argv, env []string, selfLimit bool) (int, *Status, error) {
	if !p.Unconfined {
		if err := confine(p); err != nil {
			return 0, nil, err
		}
	}
	traced := p.Memory > 0 && !selfLimit
	if p.Memory > 0 && selfLimit {
		if err := limitSelf(p.Memory); err != nil {
			return 0, nil, err
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
			return 0, nil, lerr
		}
		attr.Sys.Ptrace = false
		pid, err = syscall.ForkExec(argv[0], argv, attr)
	} else if err == nil && traced {
		var lerr error
		if ended, lerr = limitMemory(pid, p.Memory); lerr != nil {
			syscall.Kill(pid, syscall.SIGKILL)
			return 0, nil, lerr
		}
	}
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EACCES) && !p.Unconfined {
			hint = " (the sandbox allows executing only system directories and the tool's own directory)"
		}
		return 0, nil, fmt.Errorf("cannot execute %s: %w%s", argv[0], err, hint)
	}
	return pid, ended, nil
}

// confine applies no_new_privs, the seccomp filter and Landlock to the
// calling thread (the launching thread; the capabilities are dropped on
// every thread before). Any error means nothing may run: Landlock
// enforces nothing when building the ruleset fails.
func confine(p Policy) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < MinABI {
		return fmt.Errorf("landlock ABI %d is too old", abi)
	}
	if p.ABI >= MinABI && p.ABI < abi {
		abi = p.ABI
	}
	rules, err := policyRules(p, abi)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := installFilter(filterRules{network: p.Network, ptrace: p.Ptrace, truncate: abi < truncateABI}); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	// One ruleset: paths, network (no TCP rule, so every connect and bind
	// is denied; not handled at all for tools with network) and scoping.
	cfg := landlockConfigAt(abi)
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
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("applying landlock: %w", err)
	}
	return nil
}
