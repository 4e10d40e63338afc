package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A call's PID namespace gets a /proc of its own. With the host's /proc a
// process in the namespace sees every process of the host under its host
// PID, while getpid() gives it its PID in the namespace: the two disagree,
// and programs that look themselves up in /proc by PID break. procps's ps
// reads /proc/getpid() at start ("lookup self"): where no host process
// has that number it ends with "fatal library error, lookup self" and
// prints nothing, and where one has, it takes that process for itself;
// pgrep and pkill leave out the wrong process; $$ in a shell names another
// process's /proc directory. Which PIDs the host has free decided whether
// ps worked (a call's ps was PID 11 to 25 in its namespace, and the CI
// machine had no process 11).
//
// So the helper, the namespace's init, is started in a mount namespace of
// its own too (Namespaces.PID) and mounts the PID namespace's procfs on
// /proc before anything else reads it (Landlock's /proc rule is then that
// procfs). A tool then sees its own call's processes only, consistently;
// one that must see the host's declares it ("hostProcesses" in its .meta)
// and runs without a PID namespace (package exec decides).

// mountProc mounts the procfs of its PID namespace on /proc (after
// ownMounts). It needs CAP_SYS_ADMIN over the mount
// namespace: root's, or the helper's in its own user namespace (the PID
// namespace must belong to that user namespace, which it does when both
// are made by the same clone).
func mountProc() error {
	// Only the init of a new PID namespace mounts: Namespaces makes that
	// namespace together with the mount namespace, so a helper that is
	// not PID 1 was started some other way and must not touch what may be
	// the host's mounts.
	if unix.Getpid() != 1 {
		return fmt.Errorf("not the init of a PID namespace of its own (PID %d): /proc left as it is", unix.Getpid())
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting the PID namespace's own /proc: %w", err)
	}
	return nil
}
