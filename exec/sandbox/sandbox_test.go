package sandbox

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter interprets the classic BPF program on a seccomp_data record.
func runFilter(t *testing.T, prog []unix.SockFilter, data []byte) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected instruction %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("program fell off its end")
	return 0
}

func seccompData(nr int32, arch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(nr))
	binary.LittleEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

func TestMPTCPFilter(t *testing.T) {
	prog, err := mptcpFilter()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		if err == nil {
			t.Fatalf("a filter for %s, which has no tested syscall numbers", runtime.GOARCH)
		}
		return // the helper then refuses tools without network: tested in package exec
	}
	if err != nil {
		t.Fatal(err)
	}
	native := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		native = unix.AUDIT_ARCH_AARCH64
	}
	mptcpDenied := unix.SECCOMP_RET_ERRNO | uint32(unix.EPROTONOSUPPORT)
	for _, tc := range []struct {
		name string
		data []byte
		want uint32
	}{
		{"tcp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_STREAM, 0), unix.SECCOMP_RET_ALLOW},
		{"mptcp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), mptcpDenied},
		{"mptcp v6", seccompData(unix.SYS_SOCKET, native, unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP), mptcpDenied},
		{"udp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_DGRAM, 17), unix.SECCOMP_RET_ALLOW},
		{"other syscall with 262 in arg 2", seccompData(unix.SYS_READ, native, 0, 0, 262), unix.SECCOMP_RET_ALLOW},
		{"foreign architecture", seccompData(unix.SYS_SOCKET, 0x40000003 /* i386 */, 0, 0, 0), seccompRetKillProcess},
	} {
		if got := runFilter(t, prog, tc.data); got != tc.want {
			t.Errorf("%s: verdict %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if runtime.GOARCH == "amd64" {
		x32 := seccompData(unix.SYS_SOCKET|x32SyscallBit, native, 0, 0, unix.IPPROTO_MPTCP)
		if got := runFilter(t, prog, x32); got != seccompRetKillProcess {
			t.Errorf("x32 socket: verdict %#x", got)
		}
	}
}

func TestPolicyRules(t *testing.T) {
	work := t.TempDir()
	file := filepath.Join(work, "tool")
	os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755)
	// Files get file rights and directories directory rights (a directory
	// right on a file makes landlock_add_rule fail with EINVAL).
	rules, err := policyRules(Policy{WorkDir: work, Exec: []string{file, work, "/nonexistent/x"}})
	if err != nil {
		t.Fatal(err)
	}
	// The kernel accepts every rule (building a ruleset restricts nothing).
	fd, _, err := landlockConfig().NewRulesetFD(rules...)
	if err != nil {
		t.Fatalf("kernel rejected the rules: %v", err)
	}
	unix.Close(fd)
	for _, p := range []Policy{
		{WorkDir: "/nonexistent/toolsrv"},
		{WorkDir: file},
		{WorkDir: work, TempDir: "/nonexistent/tmp"},
	} {
		if _, err := policyRules(p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/usr/bin/sh", true}, {"/usr", true}, {"/usrx/bin", false}, {"/bin/sh", true},
		{"/home/u/x", false}, {"/etc/passwd", true}, {"/etc/shadow", false}, {"/etc/ssl/certs/a.pem", true},
	} {
		if got := Under(tc.path, SystemReadOnly); got != tc.want {
			t.Errorf("Under(%s) = %v", tc.path, got)
		}
	}
}
