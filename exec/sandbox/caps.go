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
// CAP_FOWNER, CAP_FSETID), so that root-owned working directories and
// tools such as tar behave as usual; Landlock bounds which files they
// reach. Everything else (loading kernel modules, raw I/O, ptrace, mknod,
// network administration, raw sockets, setuid, reboot, the clock, BPF, ...)
// is dropped from the bounding set, so the tool, as uid 0, gets none of it.
const keepCaps = 1<<unix.CAP_CHOWN | 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH |
	1<<unix.CAP_FOWNER | 1<<unix.CAP_FSETID

// dropCapabilities limits the calling thread (the one that will execve;
// HelperMain locks it) to keepCaps. For a non-root toolsrv there is
// nothing to drop: with no_new_privs set, execve grants no capability.
func dropCapabilities() error {
	if os.Geteuid() != 0 {
		return nil
	}
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if keepCaps&(1<<c) != 0 {
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
		keep := uint32(uint64(keepCaps) >> (32 * i))
		data[i].Effective &= keep
		data[i].Permitted &= keep
		data[i].Inheritable = 0
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
