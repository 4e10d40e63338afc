package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// keepCaps are the capabilities a tool started by a root toolsrv keeps:
// the file-ownership ones (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
// CAP_FOWNER), so that root-owned working directories and tools such as
// tar behave as usual; Landlock bounds which files they reach. Everything
// else (loading kernel modules, raw I/O, ptrace, mknod, network
// administration, raw sockets, setuid, reboot, the clock, BPF, ...) is
// dropped from the bounding set, so the tool, as uid 0, gets none of it.
// CAP_FSETID goes too: without it, writing to a setuid file clears the
// bit, and a file's setgid bit is not kept when its group is not the
// tool's (setting the bits at all is refused by the seccomp filter).
const keepCaps = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH |
	1<<unix.CAP_FOWNER

// dropsCapabilities reports whether the helper drops capabilities under
// p: always, but for an approved bypass (Unconfined) of a root toolsrv,
// which runs as root does.
func dropsCapabilities(p Policy) bool { return !p.Unconfined || os.Geteuid() != 0 }

// syscall3 makes a system call of up to three arguments, on the calling
// thread (unix.Syscall) or on every thread of the helper
// (syscall.AllThreadsSyscall).
type syscall3 func(trap, a1, a2, a3 uintptr) (uintptr, uintptr, syscall.Errno)

// allThreads is how dropCapabilities reaches every thread of the helper:
// the Go runtime's syscall.AllThreadsSyscall, which a binary built
// without cgo has (toolsrv's are: make build). With cgo it has none (the
// runtime cannot see threads C code started), and the psx library that
// fills the gap livelocked in a helper in a user namespace; there only
// the main thread and the launching thread drop theirs. Either way the
// tool cannot reach the helper's other threads (see launch).
func allThreads() syscall3 {
	if cgoEnabled {
		return unix.Syscall
	}
	return syscall.AllThreadsSyscall
}

// dropCapabilities limits the helper's threads (those sys reaches) to
// keepCaps when it runs as uid 0, and to nothing otherwise: a helper
// started in a user namespace of its own holds CAP_SYS_ADMIN there
// (ambient, to mount its /proc), which neither it nor the tool needs after
// that. Such a helper lacks CAP_SETPCAP and leaves the bounding set as it
// is: with no capability permitted, inheritable or ambient, a process that
// is not uid 0 gains none at execve but from file capabilities, which the
// initial namespace's files do not give in a user namespace that does not
// map uid 0 (and no_new_privs refuses anyway).
//
// bounding says whether to drop the bounding set too (one system call per
// capability): the launching thread does (startLauncher); the helper's
// other threads, which execute nothing, need not.
func dropCapabilities(sys syscall3, bounding bool) error {
	keep := uint64(keepCaps)
	if os.Geteuid() != 0 {
		keep = 0
	}
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	have := new([2]unix.CapUserData)
	if err := unix.Capget(hdr, &have[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if have[0].Permitted == 0 && have[1].Permitted == 0 && have[0].Effective == 0 && have[1].Effective == 0 {
		return nil // an ordinary process: nothing to drop (no_new_privs keeps it so)
	}
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	if have[0].Effective&(1<<unix.CAP_SETPCAP) == 0 || !bounding {
		last = -1 // the bounding set stays (see above)
	}
	for c := 0; c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 && e != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := sys(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); e != 0 && e != unix.EINVAL {
		return fmt.Errorf("clearing ambient capabilities: %w", e)
	}
	data := new([2]unix.CapUserData)
	for i := range data {
		k := uint32(keep >> (32 * i))
		data[i].Effective = have[i].Effective & k
		data[i].Permitted = have[i].Permitted & k
	}
	_, _, e := sys(unix.SYS_CAPSET, uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(hdr)
	runtime.KeepAlive(data)
	if e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}
