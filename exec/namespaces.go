package exec

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// Isolation is how a call is separated from the server beyond Landlock.
type Isolation int

const (
	// IsolationAuto (the default) uses namespaces where the kernel allows
	// them and falls back to IsolationNone, with a warning, where not.
	IsolationAuto Isolation = iota
	// IsolationNamespaces: every call gets a PID namespace (its helper is
	// the init: everything the tool starts dies with the call) with a
	// /proc of its own in a mount namespace, and an IPC namespace; a
	// non-root toolsrv adds a user namespace of the call's own (which also
	// makes RLIMIT_NPROC count only the call's processes). A tool that
	// declares hostProcesses goes without the PID and mount namespaces
	// (see hostProcesses).
	IsolationNamespaces
	// IsolationNone: no namespaces. The helper is a child subreaper that
	// kills the tool's descendants one by one; the process limit counts all
	// of the user's processes (what runs now plus the call's share).
	IsolationNone
)

// isolation decides, and remembers, whether calls get namespaces.
type isolation struct {
	mode Isolation
	root bool
	uid  int
	gid  int
	// pidMax: the kernel has a pid_max per PID namespace (Linux 6.14+),
	// which is the process limit of a root toolsrv.
	pidMax bool

	mu       sync.Mutex
	disabled error // why namespaces failed once (then IsolationNone)
}

func newIsolation(mode Isolation) *isolation {
	return &isolation{mode: mode, root: os.Geteuid() == 0, uid: os.Getuid(), gid: os.Getgid(),
		pidMax: kernelAtLeast(6, 14)}
}

// namespaces reports whether the next call should get namespaces.
func (i *isolation) namespaces() bool {
	if i.mode == IsolationNone {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.disabled == nil
}

// disable records that starting with namespaces failed (with IsolationAuto
// the caller retries without them).
func (i *isolation) disable(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.disabled == nil {
		i.disabled = err
	}
}

// apply decides the helper's namespaces and sets the matching policy
// fields. (No network namespace: the seccomp filter already refuses every
// IP socket to a tool without network, which an empty namespace would only
// repeat, at about half a millisecond per call.)
//
// hostProcs: the call sees the host's processes (hostProcesses), so it
// gets no PID namespace (a mount namespace alone, for its temporary
// directory and protected paths); the helper is then the call's
// subreaper, and a root call has no process limit.
func (i *isolation) apply(pol *sandbox.Policy, hostProcs bool) sandbox.Namespaces {
	ns := sandbox.Namespaces{PID: !hostProcs, Mount: hostProcs, IPC: true}
	pol.PidNS = ns.PID
	pol.MountNS = true
	if !i.root {
		// The tool keeps its identity: the same uid and gid inside and out.
		ns.User, ns.UID, ns.GID = true, i.uid, i.gid
		pol.UserNS = true
	}
	if i.root && (!i.pidMax || hostProcs) {
		// Root is exempt from RLIMIT_NPROC, and only a PID namespace's
		// pid_max (Linux 6.14+) limits it: without one, no process limit
		// (said once at start for the kernel, in the README for
		// hostProcesses).
		pol.Processes = 0
	}
	return ns
}

// scopedSignalsABI is the Landlock ABI that keeps a sandboxed process from
// signalling processes outside its sandbox (LANDLOCK_SCOPE_SIGNAL, Linux
// 6.12).
const scopedSignalsABI = 6

// hostProcesses reports whether a call of t, under pol, sees the host's
// processes: t declares it, and either the call is unconfined (an approved
// bypass) or Landlock can keep it from signalling them, which the PID
// namespace does for every other call. Otherwise it gets the PID namespace
// like any call, and sees its own processes only; ok is false then (the
// caller warns).
func (r *Runner) hostProcesses(t *registry.Tool, pol sandbox.Policy) (host, ok bool) {
	if !t.HostProcesses {
		return false, true
	}
	if pol.Unconfined || r.abi >= scopedSignalsABI {
		return true, true
	}
	return false, false
}

// nsStartError reports whether err from starting the helper means the
// kernel refused the namespaces (rather than, say, a missing binary).
func nsStartError(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES)
}

// kernelAtLeast compares the running kernel's release with major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// noteSharedProc warns, once, when a call's PID namespace could not get a
// /proc of its own (see sandbox.Status.SharedProc).
func (r *Runner) noteSharedProc(st sandbox.Status) {
	if st.SharedProc != "" {
		r.warnOnce("sharedProc", "calls see the host's /proc, whose PIDs are not theirs (ps and pgrep may fail or mistake themselves): their PID namespace could not get a /proc of its own",
			"err", st.SharedProc)
	}
}
