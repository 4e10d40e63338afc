package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mountProc gives the helper's PID namespace a /proc of its own (the server
// starts the helper in a fresh mount namespace along with the PID one). It
// is needed, not only tidy: Landlock applies itself to every thread through
// the psx library, which finds the threads in /proc/PID/task by the PID it
// has inside the namespace; and the tool sees only its own processes
// (another process's command line or environment is not its business).
// Mounts are made private first so that nothing propagates to the host.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the call's mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc for the call's PID namespace: %w", err)
	}
	return nil
}
