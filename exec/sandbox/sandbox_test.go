package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// safetyNet bounds a test's wait for an event (an answer, an exit, a
// connection): the test waits for the event itself, and this only ends a
// wait that would never end. Generous, because a loaded machine (load ~170
// on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

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

func seccompData[N ~int | ~int32](nr N, arch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(nr))
	binary.LittleEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

func TestSeccompFilter(t *testing.T) {
	sc, err := archSyscalls()
	if err != nil {
		t.Skipf("no filter for %s: the helper refuses confined tools there (tested in package exec)", runtime.GOARCH)
	}
	native := sc.arch
	var (
		allow  = uint32(unix.SECCOMP_RET_ALLOW)
		eacces = errno(unix.EACCES)
		eperm  = errno(unix.EPERM)
		enosys = errno(unix.ENOSYS)
		eproto = errno(unix.EPROTONOSUPPORT)
		kill   = uint32(seccompRetKillProcess)
	)
	type row struct {
		name    string
		data    []byte
		offline uint32 // verdict for a tool without network
		online  uint32 // verdict for a tool with network
	}
	rows := []row{
		{"tcp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_STREAM, 0), eacces, allow},
		{"udp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_DGRAM, 17), eacces, allow},
		{"udp v6 socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), eacces, allow},
		{"packet socket", seccompData(unix.SYS_SOCKET, native, unix.AF_PACKET, unix.SOCK_RAW, 0), eacces, allow},
		{"vsock socket", seccompData(unix.SYS_SOCKET, native, unix.AF_VSOCK, unix.SOCK_STREAM, 0), eacces, allow},
		{"unix socket", seccompData(unix.SYS_SOCKET, native, unix.AF_UNIX, unix.SOCK_STREAM, 0), allow, allow},
		{"netlink socket", seccompData(unix.SYS_SOCKET, native, unix.AF_NETLINK, unix.SOCK_RAW, 0), allow, allow},
		{"mptcp socket", seccompData(unix.SYS_SOCKET, native, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), eacces, eproto},
		{"mptcp v6", seccompData(unix.SYS_SOCKET, native, unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP), eacces, eproto},
		{"io_uring_setup", seccompData(unix.SYS_IO_URING_SETUP, native, 8, 0), enosys, enosys},
		{"io_uring_enter", seccompData(unix.SYS_IO_URING_ENTER, native), enosys, enosys},
		{"openat2", seccompData(unix.SYS_OPENAT2, native), enosys, enosys},
		{"fchmod u+s", seccompData(unix.SYS_FCHMOD, native, 3, 0o4755), eperm, eperm},
		{"fchmod g+s", seccompData(unix.SYS_FCHMOD, native, 3, 0o2755), eperm, eperm},
		{"fchmod 0755", seccompData(unix.SYS_FCHMOD, native, 3, 0o755), allow, allow},
		{"fchmodat u+s", seccompData(unix.SYS_FCHMODAT, native, atFDCWD, 0, 0o4755), eperm, eperm},
		{"fchmodat sticky", seccompData(unix.SYS_FCHMODAT, native, atFDCWD, 0, 0o1777), allow, allow},
		{"fchmodat2 g+s", seccompData(unix.SYS_FCHMODAT2, native, atFDCWD, 0, 0o2700, 0), eperm, eperm},
		{"mknodat setuid file", seccompData(unix.SYS_MKNODAT, native, atFDCWD, 0, unix.S_IFREG|0o4755, 0), eperm, eperm},
		{"openat create setuid", seccompData(unix.SYS_OPENAT, native, atFDCWD, 0, unix.O_CREAT|unix.O_WRONLY, 0o4755), eperm, eperm},
		{"openat tmpfile setgid", seccompData(unix.SYS_OPENAT, native, atFDCWD, 0, unix.O_TMPFILE|unix.O_RDWR, 0o2755), eperm, eperm},
		{"openat create 0644", seccompData(unix.SYS_OPENAT, native, atFDCWD, 0, unix.O_CREAT|unix.O_WRONLY, 0o644), allow, allow},
		{"opendir, garbage mode", seccompData(unix.SYS_OPENAT, native, atFDCWD, 0, unix.O_RDONLY|unix.O_DIRECTORY, 0o6777), allow, allow},
		{"openat read, garbage mode", seccompData(unix.SYS_OPENAT, native, atFDCWD, 0, unix.O_RDONLY, 0o6777), allow, allow},
		{"read with setuid-looking args", seccompData(unix.SYS_READ, native, 0, 0o4755, 0o4755, 262), allow, allow},
		{"keyctl", seccompData(unix.SYS_KEYCTL, native, unix.KEYCTL_READ, 0), enosys, enosys},
		{"add_key", seccompData(unix.SYS_ADD_KEY, native), enosys, enosys},
		{"request_key", seccompData(unix.SYS_REQUEST_KEY, native), enosys, enosys},
		{"ptrace", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_SEIZE, 1), eperm, eperm},
		{"ptrace attach", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_ATTACH, 1), eperm, eperm},
		{"ptrace traceme", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_TRACEME), allow, allow},
		{"ptrace cont", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_CONT, 2, 0, 0), allow, allow},
		{"ptrace detach", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_DETACH, 2, 0, 0), allow, allow},
		{"ptrace pokedata", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_POKEDATA, 2, 0, 0), eperm, eperm},
		{"ptrace interrupt", seccompData(unix.SYS_PTRACE, native, unix.PTRACE_INTERRUPT, 2), eperm, eperm},
		{"process_vm_writev", seccompData(unix.SYS_PROCESS_VM_WRITEV, native, 1), eperm, eperm},
		{"process_vm_readv", seccompData(unix.SYS_PROCESS_VM_READV, native, 1), eperm, eperm},
		{"pidfd_getfd", seccompData(unix.SYS_PIDFD_GETFD, native, 3, 0, 0), eperm, eperm},
		{"foreign architecture", seccompData(unix.SYS_SOCKET, 0x40000003 /* i386 */, 0, 0, 0), kill, kill},
	}
	if sc.chmod >= 0 {
		rows = append(rows,
			row{"chmod u+s", seccompData(int32(sc.chmod), native, 0, 0o4755), eperm, eperm},
			row{"chmod 0600", seccompData(int32(sc.chmod), native, 0, 0o600), allow, allow},
			row{"creat setuid", seccompData(int32(sc.creat), native, 0, 0o6755), eperm, eperm},
			row{"open create setuid", seccompData(int32(sc.open), native, 0, unix.O_CREAT|unix.O_RDWR, 0o4711), eperm, eperm},
			row{"open read", seccompData(int32(sc.open), native, 0, unix.O_RDONLY, 0o4711), allow, allow},
			row{"mknod setgid", seccompData(int32(sc.mknod), native, 0, unix.S_IFREG|0o2755, 0), eperm, eperm},
		)
	}
	if sc.x32 {
		rows = append(rows, row{"x32 socket", seccompData(unix.SYS_SOCKET|x32SyscallBit, native, 0, 0, unix.IPPROTO_MPTCP), kill, kill})
	}
	for _, network := range []bool{false, true} {
		prog, err := buildFilter(filterRules{network: network})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want := r.offline
			if network {
				want = r.online
			}
			if got := runFilter(t, prog, r.data); got != want {
				t.Errorf("network=%v %s: verdict %#x, want %#x", network, r.name, got, want)
			}
		}
	}
}

// A tool that declares "ptrace" may trace (within its own call: Landlock
// and the helper's non-dumpable state keep the rest out of reach); the
// keyrings stay closed to it.
func TestSeccompFilterPtrace(t *testing.T) {
	sc, err := archSyscalls()
	if err != nil {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	prog, err := buildFilter(filterRules{ptrace: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		nr   int
		want uint32
	}{
		{"ptrace", unix.SYS_PTRACE, unix.SECCOMP_RET_ALLOW},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, unix.SECCOMP_RET_ALLOW},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, unix.SECCOMP_RET_ALLOW},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD, unix.SECCOMP_RET_ALLOW},
		{"keyctl", unix.SYS_KEYCTL, errno(unix.ENOSYS)},
	} {
		if got := runFilter(t, prog, seccompData(c.nr, sc.arch, 1)); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
}

// Below Landlock ABI 3 the filter refuses the truncation Landlock cannot:
// truncate(2), and O_TRUNC on a file opened for reading; truncating what
// is opened for writing is left to Landlock's write right.
func TestSeccompFilterTruncate(t *testing.T) {
	sc, err := archSyscalls()
	if err != nil {
		t.Skipf("no filter for %s", runtime.GOARCH)
	}
	allow, eacces, eperm := uint32(unix.SECCOMP_RET_ALLOW), errno(unix.EACCES), errno(unix.EPERM)
	rows := []struct {
		name      string
		data      []byte
		old, want uint32 // verdict below ABI 3, from ABI 3
	}{
		{"truncate", seccompData(unix.SYS_TRUNCATE, sc.arch, 0, 0), eacces, allow},
		{"ftruncate", seccompData(unix.SYS_FTRUNCATE, sc.arch, 3, 0), allow, allow},
		{"openat read O_TRUNC", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_RDONLY|unix.O_TRUNC, 0), eacces, allow},
		{"openat read O_TRUNC O_CREAT", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_RDONLY|unix.O_TRUNC|unix.O_CREAT, 0o644), eacces, allow},
		{"openat write O_TRUNC", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_WRONLY|unix.O_TRUNC|unix.O_CREAT, 0o644), allow, allow},
		{"openat rdwr O_TRUNC", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_RDWR|unix.O_TRUNC, 0), allow, allow},
		{"openat write O_TRUNC setuid", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_WRONLY|unix.O_TRUNC|unix.O_CREAT, 0o4755), eperm, eperm},
		{"openat read", seccompData(unix.SYS_OPENAT, sc.arch, atFDCWD, 0, unix.O_RDONLY, 0), allow, allow},
	}
	if sc.open >= 0 {
		rows = append(rows, struct {
			name      string
			data      []byte
			old, want uint32
		}{"open read O_TRUNC", seccompData(sc.open, sc.arch, 0, unix.O_RDONLY|unix.O_TRUNC, 0), eacces, allow})
	}
	for _, truncate := range []bool{true, false} {
		prog, err := buildFilter(filterRules{truncate: truncate})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want := r.want
			if truncate {
				want = r.old
			}
			if got := runFilter(t, prog, r.data); got != want {
				t.Errorf("%s (refusing truncation %v): verdict %#x, want %#x", r.name, truncate, got, want)
			}
		}
	}
}

func TestPolicyRules(t *testing.T) {
	work := t.TempDir()
	file := filepath.Join(work, "tool")
	os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755)
	// Files get file rights and directories directory rights (a directory
	// right on a file makes landlock_add_rule fail with EINVAL).
	rules, err := policyRules(Policy{WorkDir: work, Exec: []string{file, work, "/nonexistent/x"}}, 7)
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
		if _, err := policyRules(p, 7); err == nil {
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
		{"/sys/devices/system/cpu", true}, {"/root", false}, {"/run/user/1000/toolsrv/9p.sock", false},
	} {
		if got := Under(tc.path, SystemReadOnly); got != tc.want {
			t.Errorf("Under(%s) = %v", tc.path, got)
		}
	}
}

// atFDCWD is AT_FDCWD as the 64-bit register value a system call sees.
const atFDCWD = uint64(0xffffffffffffff9c)

// The helper takes the memory limit on itself only far below it.
func TestCanLimitSelf(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		data, memory int64
		want         bool
	}{
		{data: 80 * mib, memory: 2048 * mib, want: true},  // the default limit
		{data: 80 * mib, memory: 256 * mib, want: true},   // 176 MiB to spare
		{data: 80 * mib, memory: 207 * mib, want: false},  // 127 MiB: less than the margin
		{data: 80 * mib, memory: 64 * mib, want: false},   // below what the helper holds
		{data: 0, memory: 2048 * mib, want: false},        // unknown
		{data: 414 * mib, memory: 256 * mib, want: false}, // a race-detector test binary
		{data: 414 * mib, memory: 2048 * mib, want: true}, // the same, with the default limit
		{data: 80 * mib, memory: 80*mib + selfLimitMargin, want: true},
	} {
		if got := canLimitSelf(tc.data, tc.memory); got != tc.want {
			t.Errorf("canLimitSelf(%d MiB, %d MiB) = %v, want %v", tc.data/mib, tc.memory/mib, got, tc.want)
		}
	}
}

// dataSize reads this process's data memory: more than nothing (the test
// binary's heap) and less than its whole address space.
func TestDataSize(t *testing.T) {
	data, err := dataSize()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	fmt.Sscan(string(b), &size)
	if size *= int64(os.Getpagesize()); data <= 0 || data > size {
		t.Errorf("dataSize() = %d, want in (0, %d] (the address space)", data, size)
	}
}

// ReadStatus answers as soon as the helper has written its line, while
// the helper still holds the pipe (it reports, then exits); nothing
// written is no status, and anything else is an error.
func TestReadStatus(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte(`{"exit":3,"killed":true}` + "\n")); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		st  Status
		ok  bool
		err error
	}
	got := make(chan answer, 1)
	go func() {
		st, ok, err := ReadStatus(r)
		got <- answer{st, ok, err}
	}()
	select {
	case a := <-got:
		if !a.ok || a.err != nil || a.st != (Status{Exit: 3, Killed: true}) {
			t.Errorf("ReadStatus = %+v, %v, %v", a.st, a.ok, a.err)
		}
	case <-time.After(safetyNet):
		t.Fatal("ReadStatus waited for the writer to close the pipe")
	}
	for in, wantOK := range map[string]bool{"": false, `{"exit":0}`: true} {
		st, ok, err := ReadStatus(strings.NewReader(in))
		if ok != wantOK || err != nil || st.Exit != 0 {
			t.Errorf("ReadStatus(%q) = %+v, %v, %v", in, st, ok, err)
		}
	}
	if _, ok, err := ReadStatus(strings.NewReader("oops\n")); ok || err == nil {
		t.Errorf("ReadStatus(garbage) = %v, %v; want an error", ok, err)
	}
}
