package exec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attackHelper is the probe's "attack-helper" operation: the red team's
// escape through the sandbox helper. The helper is the tool's parent; on
// each of its threads the tool tries what would let it run code there
// (attach with ptrace and write the memory all the threads share), and
// it tries the helper's memory through process_vm_writev and
// /proc/PID/mem. Each line it prints is "held WHAT: ERROR" or
// "escaped WHAT" (the helper's memory was writable from the tool).
func attackHelper() []string {
	helper := os.Getppid()
	var out []string
	say := func(what string, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("held %s: %v", what, err))
		} else {
			out = append(out, "escaped "+what)
		}
	}
	addr, word, err := writableWord(helper)
	if err != nil {
		// Reading the helper's maps needs what attaching needs: being
		// refused is the sandbox holding.
		say("reading the helper's memory map", err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", helper))
	if err != nil {
		say("listing the helper's threads", err)
	}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		say(fmt.Sprintf("ptrace of helper thread %d", tid), pokeThread(tid, addr, word))
	}
	if addr != 0 {
		buf := make([]byte, 8)
		binaryPut(buf, word)
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: addr, Len: 8}}
		_, err := unix.ProcessVMWritev(helper, local, remote, 0)
		say("process_vm_writev into the helper", err)
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", helper), os.O_RDWR, 0)
		if err == nil {
			_, err = f.WriteAt(buf, int64(addr))
			f.Close()
		}
		say("writing /proc/PID/mem of the helper", err)
	}
	return out
}

// attackProcess tries what a tool could do to process pid, another
// process of toolsrv's it can see (hostProcesses): signal it, attach to
// it, read its environment, descriptors and memory, write its memory. Each
// line says "held" or "escaped".
func attackProcess(pid int) []string {
	var out []string
	say := func(what string, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("held %s: %v", what, err))
		} else {
			out = append(out, "escaped "+what)
		}
	}
	say("signal 0 to it", unix.Kill(pid, 0))
	say("SIGKILL to it", unix.Kill(pid, unix.SIGKILL))
	say("SIGSTOP to it", unix.Kill(pid, unix.SIGSTOP))
	err := unix.PtraceSeize(pid)
	if err == nil {
		unix.PtraceDetach(pid)
	}
	say("PTRACE_SEIZE", err)
	for _, f := range []string{"environ", "mem", "maps", "cwd", "root"} {
		_, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
		if f == "cwd" || f == "root" {
			_, err = os.ReadDir(fmt.Sprintf("/proc/%d/%s", pid, f))
		}
		say("reading /proc/PID/"+f, err)
	}
	// (Listing /proc/PID/fd shows the descriptors' numbers only, as for
	// any process of the user's; opening them is what counts.)
	for _, fd := range []int{0, 1, 2, 3, 4} {
		f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		say(fmt.Sprintf("opening its descriptor %d", fd), err)
	}
	buf := make([]byte, 8)
	_, err = unix.ProcessVMWritev(pid, []unix.Iovec{{Base: &buf[0], Len: 8}}, []unix.RemoteIovec{{Base: 0x400000, Len: 8}}, 0)
	say("process_vm_writev into it", err)
	return out
}

// pokeThread attaches to thread tid, stops it, and writes word back to
// addr, or the word at the top of the thread's stack back there when addr
// is 0 (the value it already holds: a write that changes nothing, but one
// that could have changed anything).
func pokeThread(tid int, addr uintptr, word uint64) error {
	if err := unix.PtraceSeize(tid); err != nil {
		return fmt.Errorf("PTRACE_SEIZE: %w", err)
	}
	defer unix.PtraceDetach(tid)
	if err := unix.PtraceInterrupt(tid); err != nil {
		return fmt.Errorf("PTRACE_INTERRUPT: %w", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		return fmt.Errorf("waiting for the stop: %w", err)
	}
	buf := make([]byte, 8)
	if addr == 0 {
		// The maps were not readable: the thread's own stack is memory
		// every thread of the helper shares.
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(tid, &regs); err != nil {
			return fmt.Errorf("PTRACE_GETREGS: %w", err)
		}
		addr = uintptr(stackPointer(&regs))
		if _, err := unix.PtracePeekData(tid, addr, buf); err != nil {
			return fmt.Errorf("PTRACE_PEEKDATA: %w", err)
		}
	} else {
		binaryPut(buf, word)
	}
	if _, err := unix.PtracePokeData(tid, addr, buf); err != nil {
		return fmt.Errorf("PTRACE_POKEDATA: %w", err)
	}
	return nil
}

// writableWord finds a writable private mapping of process pid and the
// word at its start.
func writableWord(pid int) (uintptr, uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[1] != "rw-p" {
			continue
		}
		start, err := strconv.ParseUint(strings.SplitN(fields[0], "-", 2)[0], 16, 64)
		if err != nil {
			continue
		}
		mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
		if err != nil {
			return uintptr(start), 0, nil
		}
		buf := make([]byte, 8)
		_, err = mem.ReadAt(buf, int64(start))
		mem.Close()
		if err != nil {
			return uintptr(start), 0, nil
		}
		return uintptr(start), *(*uint64)(unsafe.Pointer(&buf[0])), nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, errors.New("no writable mapping")
}

// traceChild starts a child and attaches to it, as a debugger does to a
// running program, then lets it go and ends it.
func traceChild() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "30"}, &syscall.ProcAttr{})
	if err != nil {
		return fmt.Errorf("starting a child: %w", err)
	}
	defer func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WALL, nil)
	}()
	if err := unix.PtraceSeize(pid); err != nil {
		return fmt.Errorf("PTRACE_SEIZE of its own child: %w", err)
	}
	if err := unix.PtraceInterrupt(pid); err != nil {
		return fmt.Errorf("PTRACE_INTERRUPT: %w", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return err
	}
	if err := unix.PtraceDetach(pid); err != nil {
		return fmt.Errorf("PTRACE_DETACH: %w", err)
	}
	return nil
}

// attackKeyring tries to find, read and add keys in the user's keyrings,
// and to read the key named name's description from /proc/keys; it prints
// "held WHAT: ERROR" or "escaped WHAT" as attackHelper does.
func attackKeyring(name string) []string {
	var out []string
	say := func(what string, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("held %s: %v", what, err))
		} else {
			out = append(out, "escaped "+what)
		}
	}
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", name, 0)
	say("finding the host's key in the user keyring", err)
	if err == nil {
		buf := make([]byte, 256)
		_, err = unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		say("reading the host's key", err)
	}
	_, err = unix.AddKey("user", name+"-planted", []byte("x"), unix.KEY_SPEC_USER_KEYRING)
	say("adding a key to the user keyring", err)
	_, err = unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	say("reaching the session keyring", err)
	b, err := os.ReadFile("/proc/keys")
	if err == nil && !strings.Contains(string(b), name) {
		err = errors.New("the key is not listed")
	}
	say("seeing the host key's name in /proc/keys", err)
	return out
}

func binaryPut(b []byte, v uint64) { *(*uint64)(unsafe.Pointer(&b[0])) = v }
