package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Marker is the hard RLIMIT_LOCKS every process started by the helper
// carries, sandboxed or not. The limit has had no effect since Linux 2.4.25,
// so it changes nothing for the tool; but a process can lower a hard limit
// and never raise it again without CAP_SYS_RESOURCE in the initial user
// namespace, which no tool has. A finite hard RLIMIT_LOCKS therefore marks
// a process as a tool (or a descendant of one) for good: the 9P server
// uses it to tell a tool's connection from its owner's (see Marked).
const Marker = 0x746f6f6c // "tool"

// Marked reports whether process pid carries the Marker (a finite hard
// RLIMIT_LOCKS): it was started by a toolsrv sandbox helper or descends
// from such a process. Reading another process's limits needs the same
// user or CAP_SYS_RESOURCE.
func Marked(pid int) (bool, error) {
	var lim unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_LOCKS, nil, &lim); err != nil {
		return false, fmt.Errorf("reading the limits of process %d: %w", pid, err)
	}
	return lim.Max != unix.RLIM_INFINITY, nil
}

// helperTasks is the room left for the helper's own threads (the Go
// runtime's) inside the process limit: the helper and the tool share the
// call's count.
const helperTasks = 16

// reservedPIDs is the kernel's RESERVED_PIDS: once a PID namespace has
// handed out PIDs past it, new processes get PIDs in [reservedPIDs,
// pid_max) only. A pid_max of N would then leave a long-running tool room
// for N-300 processes at once: at the kernel's lowest pid_max (301), one,
// after its first 300 processes (a build that had run 300 compilers could
// no longer run two at once).
const reservedPIDs = 300

// PidMax is the pid_max of the PID namespace of a call of a root toolsrv
// limited to processes processes (the limit's mechanism there): the
// helper's tasks and reservedPIDs come on top, so that the call has room
// for its processes however many it has started before. It may therefore
// hold up to reservedPIDs more processes at once than its limit, until the
// namespace's PIDs first wrap around.
func PidMax(processes int) int {
	return processes + helperTasks + 1 + reservedPIDs
}

// applyLimits sets the limits of the call on the helper; the tool and
// everything it starts inherit them.
func applyLimits(p Policy) error {
	set := func(name string, res int, v uint64) error {
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setting %s to %d: %w", name, v, err)
		}
		return nil
	}
	if err := set("RLIMIT_LOCKS (the tool marker)", unix.RLIMIT_LOCKS, Marker); err != nil {
		return err
	}
	if err := set("RLIMIT_CORE", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if p.FileSize > 0 {
		// A write past the limit fails with EFBIG instead of killing the
		// writer: the ignored SIGXFSZ stays ignored in the tool.
		signal.Ignore(syscall.SIGXFSZ)
		if err := set("RLIMIT_FSIZE (file size)", unix.RLIMIT_FSIZE, uint64(p.FileSize)); err != nil {
			return err
		}
	}
	if p.Processes > 0 {
		switch {
		case p.PidNS && os.Geteuid() == 0 && !p.UserNS:
			// Root is exempt from RLIMIT_NPROC; the PID namespace's own
			// pid_max (Linux 6.14+) bounds how many processes it holds.
			n := PidMax(p.Processes)
			if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(n)), 0); err != nil {
				return fmt.Errorf("limiting the call to %d processes (pid_max of its PID namespace, Linux 6.14 or later): %w", p.Processes, err)
			}
		case os.Geteuid() == 0:
			return errors.New("a process limit for a root toolsrv needs a PID namespace")
		case p.UserNS:
			// In the call's own user namespace, RLIMIT_NPROC counts this
			// call's processes only.
			if err := set("RLIMIT_NPROC (processes)", unix.RLIMIT_NPROC, uint64(p.Processes+helperTasks)); err != nil {
				return err
			}
		default:
			// No user namespace: RLIMIT_NPROC counts every task of the
			// user, so the call gets what runs now plus its own share (an
			// approximation: the fallback documented in package exec).
			if err := set("RLIMIT_NPROC (processes)", unix.RLIMIT_NPROC, uint64(userTasks(os.Getuid())+p.Processes)); err != nil {
				return err
			}
		}
	}
	// The kernel's OOM killer picks tools before anything else, the server
	// included. Raising one's own score needs no privilege.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
		return fmt.Errorf("raising the tool's OOM score: %w", err)
	}
	return nil
}

// userTasks counts the tasks (threads included) of processes owned by uid.
func userTasks(uid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) != nil || int(st.Uid) != uid {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + e.Name() + "/task")
		if err != nil {
			continue
		}
		n += len(tasks)
	}
	return n
}

// limitMemory gives the tool (pid, stopped right after its execve by
// PTRACE_TRACEME: HelperMain starts it traced when there is a memory
// limit and cannot take it on itself, see canLimitSelf) its memory limit,
// then lets it run. The limit is set on the tool only, never on the
// helper: the helper's own memory (the Go runtime, and a race detector's
// shadow memory in tests) must not count against a limit that may be
// smaller than it, and the tool runs no instruction before the limit is
// in place.
//
// A signal may reach the tool before its execve (the server's SIGTERM to
// the call's process group, when the call times out as it starts): it is
// delivered, and when it ends the tool, ended is how (the tool is reaped
// then, and never ran).
func limitMemory(pid int, memory int64) (ended *Status, err error) {
wait:
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("waiting for the tool to start: %w", err)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			st := statusOf(syscall.WaitStatus(ws))
			return &st, nil
		case !ws.Stopped():
			return nil, fmt.Errorf("the tool did not stop after it started (wait status %#x)", uint32(ws))
		case ws.StopSignal() != unix.SIGTRAP:
			// A signal that came before the execve: deliver it.
			if err := unix.PtraceCont(pid, int(ws.StopSignal())); err != nil {
				return nil, fmt.Errorf("passing signal %s to the starting tool: %w", ws.StopSignal(), err)
			}
			continue
		}
		break wait // the stop at the execve: the tool runs nothing yet
	}
	lim := unix.Rlimit{Cur: uint64(memory), Max: uint64(memory)}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &lim, nil); err != nil {
		return nil, fmt.Errorf("setting the tool's RLIMIT_DATA (memory) to %d: %w", memory, err)
	}
	if err := unix.PtraceDetach(pid); err != nil {
		return nil, fmt.Errorf("letting the tool run: %w", err)
	}
	return nil, nil
}

// selfLimitMargin is the room the helper keeps between what it holds and
// a memory limit it takes on itself (canLimitSelf): after the fork it
// allocates only a few kilobytes, within the heap arena it has already
// mapped, but a new arena would take 64 MiB at once.
const selfLimitMargin = 128 << 20

// canLimitSelf reports whether the helper, holding data bytes of data
// memory, may take a memory limit on itself (limitSelf) instead of tracing
// the tool's start (limitMemory), which costs a ptrace stop per call. The
// tool inherits the limit at the fork and counts only its own memory
// against it, as with limitMemory; the helper must stay far below it. The
// slim helper holds about 80 MiB, so it traces only under limits below
// about 210 MiB; a race-detector build holds some 400 MiB.
func canLimitSelf(data, memory int64) bool {
	return data > 0 && memory-data >= selfLimitMargin
}

// dataSize is the data memory the helper holds (the "data" field of
// /proc/self/statm, which counts the stack too: an upper bound of what
// RLIMIT_DATA counts).
func dataSize() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 6 {
		return 0, fmt.Errorf("/proc/self/statm: %q has no data field", b)
	}
	pages, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// limitSelf sets the memory limit on the helper itself, and so on the
// tool it starts: when the helper holds little (canLimitSelf), and as the
// fallback when the tool cannot be started traced. In the fallback a limit
// below what the helper's runtime already holds may make it fail, and the
// call with it.
func limitSelf(memory int64) error {
	lim := unix.Rlimit{Cur: uint64(memory), Max: uint64(memory)}
	if err := unix.Setrlimit(unix.RLIMIT_DATA, &lim); err != nil {
		return fmt.Errorf("setting RLIMIT_DATA (memory) to %d: %w", memory, err)
	}
	return nil
}
