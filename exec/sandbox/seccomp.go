package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter closes what Landlock (ABI 7) does not cover. It is
// installed on the helper thread that starts the tool (launch) and
// inherited by the tool and everything it starts:
//
//   - tools without network: socket() of any family but AF_UNIX and
//     AF_NETLINK fails with EACCES (no TCP, UDP, raw, packet, vsock, ...
//     socket at all; Landlock does not cover UDP);
//   - tools with network: socket(..., IPPROTO_MPTCP) fails with
//     EPROTONOSUPPORT, so programs fall back to TCP (Landlock's TCP rules
//     do not cover MPTCP; Go's net package even prefers it);
//   - no setuid or setgid file: chmod, fchmod, fchmodat, fchmodat2, and
//     creat/open/openat/mknod/mknodat creating a file, fail with EPERM when
//     the mode has S_ISUID or S_ISGID; openat2, whose mode sits behind a
//     pointer the filter cannot read, fails with ENOSYS (C libraries do not
//     use it for open());
//   - io_uring_setup, io_uring_enter and io_uring_register fail with
//     ENOSYS: io_uring performs opens and socket calls that seccomp never
//     sees;
//   - ptrace, process_vm_readv, process_vm_writev and pidfd_getfd fail
//     with EPERM unless the tool declares "ptrace" (a debugger, strace):
//     Landlock already keeps a tool from tracing anything outside its own
//     call, but a tool that needs none of it gets none of it. Left are
//     PTRACE_TRACEME, which gives the caller's parent power over the
//     caller, never the other way, and PTRACE_CONT and PTRACE_DETACH,
//     which only a tracer can use, and which let a tracee go: the helper
//     starts a tool traced that way to set its memory limit
//     (limitMemory), from the thread the filter is already on. Becoming
//     the tracer of another process (attach, seize) and reading or
//     changing a tracee stay refused;
//   - keyctl, add_key and request_key fail with ENOSYS, as on a kernel
//     without keys: the kernel's keyrings are the user's (as root, root's
//     real keyring), not the call's, and nothing confines them by path;
//   - below Landlock ABI 3 (Linux 6.2), which cannot refuse truncation:
//     truncate(2) and open/openat with O_TRUNC for reading fail with
//     EACCES. Otherwise a tool could empty any file its user may write
//     (~/.bashrc) by path, or one it may only read (another tool, the
//     repository) by opening it read-only with O_TRUNC; truncating what
//     it opened for writing (ftruncate, O_TRUNC with O_WRONLY or O_RDWR)
//     needs Landlock's write right as before;
//   - system calls of a foreign ABI (i386 or x32 on amd64), which the
//     filter cannot inspect, kill the process.

// seccompData offsets (struct seccomp_data: nr int32, arch uint32,
// instruction_pointer uint64, args [6]uint64; little endian).
const (
	offNr   = 0
	offArch = 4
)

// offArg is the offset of the low 32 bits of argument i.
func offArg(i int) uint32 { return uint32(16 + 8*i) }

const (
	seccompRetKillProcess = 0x80000000
	x32SyscallBit         = 0x40000000
	setIDBits             = unix.S_ISUID | unix.S_ISGID
	// createFlags are the open flags that make open/openat use their mode
	// (O_CREAT, and __O_TMPFILE: O_TMPFILE without O_DIRECTORY).
	createFlags = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY
)

// filterRules says what the filter refuses.
type filterRules struct {
	network  bool // MPTCP only is refused; otherwise every non-local family
	ptrace   bool // ptrace and process_vm_* are allowed
	truncate bool // truncation Landlock cannot refuse (ABI < 3) is refused
}

// truncateABI is the first Landlock ABI that refuses truncating a file
// the sandbox may not write (LANDLOCK_ACCESS_FS_TRUNCATE, Linux 6.2).
const truncateABI = 3

// bpf assembles a classic BPF program with symbolic jump targets.
type bpf struct {
	prog   []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string // "" = next instruction
}

const (
	ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret  = unix.BPF_RET | unix.BPF_K
)

func (b *bpf) label(name string) { b.labels[name] = len(b.prog) }

func (b *bpf) stmt(code uint16, k uint32) { b.prog = append(b.prog, unix.SockFilter{Code: code, K: k}) }

func (b *bpf) jump(code uint16, k uint32, jt, jf string) {
	b.fixups = append(b.fixups, fixup{at: len(b.prog), jt: jt, jf: jf})
	b.prog = append(b.prog, unix.SockFilter{Code: code, K: k})
}

func (b *bpf) assemble() ([]unix.SockFilter, error) {
	for _, f := range b.fixups {
		for _, side := range []struct {
			target string
			dst    *uint8
		}{{f.jt, &b.prog[f.at].Jt}, {f.jf, &b.prog[f.at].Jf}} {
			if side.target == "" {
				continue
			}
			to, ok := b.labels[side.target]
			if !ok {
				return nil, fmt.Errorf("seccomp filter: no label %q", side.target)
			}
			off := to - f.at - 1
			if off < 0 || off > 255 {
				return nil, fmt.Errorf("seccomp filter: jump to %q out of range (%d)", side.target, off)
			}
			*side.dst = uint8(off)
		}
	}
	return b.prog, nil
}

func errno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// buildFilter returns the filter for rules on this architecture.
func buildFilter(r filterRules) ([]unix.SockFilter, error) {
	sc, err := archSyscalls()
	if err != nil {
		return nil, err
	}
	b := &bpf{labels: map[string]int{}}
	b.stmt(ld, offArch)
	b.jump(jeq, sc.arch, "", "kill")
	b.stmt(ld, offNr)
	if sc.x32 {
		b.jump(jset, x32SyscallBit, "kill", "")
	}
	type dispatch struct {
		nr    int
		label string
	}
	var table []dispatch
	add := func(label string, nrs ...int) {
		for _, nr := range nrs {
			if nr >= 0 {
				table = append(table, dispatch{nr, label})
			}
		}
	}
	add("socket", unix.SYS_SOCKET)
	add("enosys", unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY)
	if !r.ptrace {
		add("ptrace", unix.SYS_PTRACE)
		add("eperm", unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD)
	}
	add("enosys", unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_OPENAT2)
	if r.truncate {
		add("eacces", unix.SYS_TRUNCATE)
	}
	add("mode1", sc.chmod, unix.SYS_FCHMOD, sc.creat, sc.mknod)
	add("mode2", unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_MKNODAT)
	add("open", sc.open)
	add("openat", unix.SYS_OPENAT)
	for _, d := range table {
		b.jump(jeq, uint32(d.nr), d.label, "")
	}
	b.stmt(ret, unix.SECCOMP_RET_ALLOW) // any other system call

	// Rule blocks; classic BPF jumps only forward, so every verdict
	// comes after them.
	b.label("socket")
	if r.network {
		b.stmt(ld, offArg(2))
		b.jump(jeq, unix.IPPROTO_MPTCP, "eprotonosupport", "allow")
	} else {
		b.stmt(ld, offArg(0))
		b.jump(jeq, unix.AF_UNIX, "allow", "")
		b.jump(jeq, unix.AF_NETLINK, "allow", "eacces")
	}
	b.label("ptrace") // ptrace(request, ...): PTRACE_TRACEME, _CONT, _DETACH
	b.stmt(ld, offArg(0))
	b.jump(jeq, unix.PTRACE_TRACEME, "allow", "")
	b.jump(jeq, unix.PTRACE_CONT, "allow", "")
	b.jump(jeq, unix.PTRACE_DETACH, "allow", "eperm")
	// O_TRUNC for reading (no O_WRONLY or O_RDWR), where refused.
	readTrunc := func(create string) {
		if r.truncate {
			b.jump(jset, unix.O_TRUNC, "", create)
			b.jump(jset, unix.O_WRONLY|unix.O_RDWR, create, "eacces")
		}
		b.label(create)
	}
	b.label("open") // open(path, flags, mode)
	b.stmt(ld, offArg(1))
	readTrunc("open-create")
	b.jump(jset, createFlags, "", "allow")
	b.stmt(ld, offArg(2))
	b.jump(jset, setIDBits, "eperm", "allow")
	b.label("openat") // openat(dirfd, path, flags, mode)
	b.stmt(ld, offArg(2))
	readTrunc("openat-create")
	b.jump(jset, createFlags, "", "allow")
	b.stmt(ld, offArg(3))
	b.jump(jset, setIDBits, "eperm", "allow")
	b.label("mode1") // chmod(path, mode), fchmod(fd, mode), creat(path, mode), mknod(path, mode, dev)
	b.stmt(ld, offArg(1))
	b.jump(jset, setIDBits, "eperm", "allow")
	b.label("mode2") // fchmodat(dirfd, path, mode...), mknodat(dirfd, path, mode, dev)
	b.stmt(ld, offArg(2))
	b.jump(jset, setIDBits, "eperm", "allow")

	b.label("allow")
	b.stmt(ret, unix.SECCOMP_RET_ALLOW)
	b.label("eacces")
	b.stmt(ret, errno(unix.EACCES))
	b.label("eperm")
	b.stmt(ret, errno(unix.EPERM))
	b.label("enosys")
	b.stmt(ret, errno(unix.ENOSYS))
	b.label("eprotonosupport")
	b.stmt(ret, errno(unix.EPROTONOSUPPORT))
	b.label("kill")
	b.stmt(ret, seccompRetKillProcess)
	return b.assemble()
}

// archSyscalls are the numbers that differ between architectures; -1 for
// a call the architecture does not have.
type syscalls struct {
	arch                      uint32
	x32                       bool
	chmod, creat, mknod, open int
}

func archSyscalls() (syscalls, error) {
	if nativeSyscalls.arch != 0 {
		return nativeSyscalls, nil
	}
	return syscalls{}, fmt.Errorf("no seccomp filter for GOARCH=%s (its system call numbers are untested); refusing to run tools unconfined", runtime.GOARCH)
}

// installFilter installs the filter on the calling thread (the processes
// it starts inherit it). It sets no_new_privs first (required for an
// unprivileged seccomp filter; Landlock needs it anyway).
func installFilter(r filterRules) error {
	filter, err := buildFilter(r)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
