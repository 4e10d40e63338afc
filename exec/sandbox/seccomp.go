package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules (ABI 4+) apply to TCP sockets only: a socket created
// with IPPROTO_MPTCP connects and binds anywhere (reproduced on 6.18 with
// net.mptcp.enabled=1; Go's net package even uses MPTCP by default for
// listeners). denyMPTCP closes that gap with a seccomp filter on the
// calling process (all threads): socket(*, *, IPPROTO_MPTCP) fails with
// EPROTONOSUPPORT, which makes programs fall back to plain TCP (as Go's net
// package does), which Landlock then restricts. Syscalls of a foreign ABI
// (i386 or x32 on amd64), whose socket calls the filter cannot inspect, kill
// the process.

// seccompData offsets (struct seccomp_data: nr int32, arch uint32,
// instruction_pointer uint64, args [6]uint64; little endian).
const (
	offNr    = 0
	offArch  = 4
	offArgs2 = 16 + 2*8 // low 32 bits of args[2] (the protocol)
)

const (
	seccompRetKillProcess = 0x80000000
	x32SyscallBit         = 0x40000000
)

func mptcpFilter() ([]unix.SockFilter, error) {
	var arch, x32 uint32
	switch runtime.GOARCH {
	case "amd64":
		arch, x32 = unix.AUDIT_ARCH_X86_64, x32SyscallBit
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return nil, fmt.Errorf("no MPTCP seccomp filter for GOARCH=%s", runtime.GOARCH)
	}
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	return []unix.SockFilter{
		/* 0 */ stmt(ld, offArch),
		/* 1 */ jump(jeq, arch, 0, 7), // foreign ABI → 9
		/* 2 */ stmt(ld, offNr),
		/* 3 */ jump(jset, x32, 5, 0), // x32 syscall → 9
		/* 4 */ jump(jeq, uint32(unix.SYS_SOCKET), 0, 2), // not socket → 7
		/* 5 */ stmt(ld, offArgs2),
		/* 6 */ jump(jeq, unix.IPPROTO_MPTCP, 1, 0), // MPTCP → 8
		/* 7 */ stmt(ret, unix.SECCOMP_RET_ALLOW),
		/* 8 */ stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPROTONOSUPPORT)),
		/* 9 */ stmt(ret, seccompRetKillProcess),
	}, nil
}

// denyMPTCP installs the filter on every thread of the calling process. It
// sets no_new_privs first (required for an unprivileged seccomp filter;
// Landlock needs it anyway).
func denyMPTCP() error {
	filter, err := mptcpFilter()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if tid != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronized", tid)
	}
	return nil
}
