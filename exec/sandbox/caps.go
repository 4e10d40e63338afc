package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// dropCapabilities limits the calling thread (the one that forks the tool;
// HelperMain locks it) to keepCaps when it runs as uid 0, and to nothing
// otherwise: a helper started in a user namespace of its own holds
// CAP_SYS_ADMIN there (ambient, to mount its /proc), which neither it nor
// the tool needs after that. Such a helper lacks CAP_SETPCAP and leaves
// the bounding set as it is: with no capability permitted, inheritable or
// ambient, a process that is not uid 0 gains none at execve but from file
// capabilities, which the initial namespace's files do not give in a user
// namespace that does not map uid 0 (and no_new_privs refuses anyway).
func dropCapabilities() error {
	keep := uint64(keepCaps)
	if os.Geteuid() != 0 {
		keep = 0
	}
	hdr0 := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var have [2]unix.CapUserData
	if err := unix.Capget(&hdr0, &have[0]); err != nil {
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
	if have[0].Effective&(1<<unix.CAP_SETPCAP) == 0 {
		last = -1 // the bounding set stays (see above)
	}
	for c := 0; c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for i := range data {
		k := uint32(keep >> (32 * i))
		data[i].Effective &= k
		data[i].Permitted &= k
		data[i].Inheritable = 0
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
