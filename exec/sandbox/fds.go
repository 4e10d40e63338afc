package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (linux/close_range.h).
const closeRangeCloexec = 1 << 2

// CloseInherited marks every descriptor from first up close-on-exec, so that
// no program this process executes inherits it. A process started with
// descriptors it did not open (a shell's "5</root/secret") would otherwise
// hand them to every tool. Descriptors the Go runtime opens are
// close-on-exec already, so marking them again changes nothing.
func CloseInherited(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), closeRangeCloexec)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	// Kernels before 5.11: one descriptor at a time.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("listing open descriptors: %w", rerr)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
