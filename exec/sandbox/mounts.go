package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// A call with a mount namespace of its own (Policy.MountNS) gets three
// changes there, made by the helper before Landlock's rules are built
// (a rule holds the inode it was made from, and a mount put over that path
// later would not be beneath it):
//
//   - its temporary directory is a tmpfs of Policy.TempSize bytes: what the
//     tool writes to $TMPDIR and $HOME is bounded, and gone with the call;
//   - each of Policy.Protect (toolsrv's own paths inside a directory the
//     tool may write: the tools directory of a repository that is the
//     working directory, say) is bound read-only over itself, so the call
//     may write the project but not the tools;
//   - with a /proc of its own (mountProc), /proc/keys and /proc/key-users
//     are hidden: they list the descriptions of the user's keys, which
//     the seccomp filter keeps the tool from reading or adding.
//
// A sandboxed tool cannot undo any of them: Landlock refuses it every
// mount, unmount and remount, and it holds no capability.

// callMounts makes the temporary directory's tmpfs and binds Protect
// read-only; mountErr says why the call has no mount namespace of its own
// (nil: it has). Without one the temporary directory keeps no size limit
// (the file-size limit still holds), and a confined call with paths to
// protect is refused: its tool could write them.
func callMounts(p Policy, mountErr error) error {
	if len(p.Protect) > 0 && !p.Unconfined {
		if mountErr != nil {
			return fmt.Errorf("the working directory holds toolsrv's own %s, which a tool must not write, and it cannot be kept read-only here (%v): run the call from a working directory that does not hold it", p.Protect[0], mountErr)
		}
		if err := protect(p); err != nil {
			return err
		}
	}
	if p.TempSize > 0 && p.TempDir != "" && mountErr == nil {
		if err := mountTemp(p.TempDir, p.TempSize); err != nil {
			return err
		}
	}
	return nil
}

// ownMounts makes the mount namespace's mounts its own: nothing mounted
// here may reach the host (with a shared /, as systemd makes it, a new
// mount would otherwise appear there too). Slave, not private: mounts the
// host makes later still show here. It must succeed before any other
// mount.
func ownMounts() error {
	if err := inOwnMountNS(); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making the call's mounts its own (mount --make-rslave /): %w", err)
	}
	return nil
}

// inOwnMountNS checks that the helper is in a mount namespace of its own
// before it mounts anything: a policy that says so (Policy.MountNS) is
// the caller's word, and a helper started without one, as root, would
// change the host's mounts. The init of a new PID namespace has one
// (Namespaces makes them together); any other helper's must differ from
// its parent's, where it may look (root may; a helper in a user namespace
// of its own may not, and cannot mount in a mount namespace that
// namespace does not own).
func inOwnMountNS() error {
	if unix.Getpid() == 1 {
		return nil
	}
	var self, parent unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &self); err != nil {
		return fmt.Errorf("telling the helper's mount namespace: %w", err)
	}
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/mnt", unix.Getppid()), &parent); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			// Not allowed to look at its parent: a helper in a user
			// namespace of its own, whose mounts the kernel allows only in
			// a mount namespace that namespace owns.
			return nil
		}
		return fmt.Errorf("telling its parent's mount namespace: %w", err)
	}
	if self.Dev == parent.Dev && self.Ino == parent.Ino {
		return errors.New("the helper is not in a mount namespace of its own: nothing mounted")
	}
	return nil
}

// mountTemp puts a tmpfs of size bytes on dir (the call's temporary
// directory), owned by the helper and mode 0700 like the directory.
func mountTemp(dir string, size int64) error {
	opts := fmt.Sprintf("size=%d,mode=0700", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs of %d bytes on the call's temporary directory %s: %w", size, dir, err)
	}
	return nil
}

// protect binds each path read-only over itself, with everything mounted
// below it. The directories between a writable root of p (WorkDir,
// TempDir, Write) and each path are bound over themselves too (read-write):
// a mount point cannot be renamed or removed, so the tool cannot move a
// protected directory aside with its parent (mv sub elsewhere, when sub
// holds the tools) and make a writable one in its place.
func protect(p Policy) error {
	roots := append([]string{p.WorkDir, p.TempDir}, p.Write...)
	type bind struct {
		path string
		ro   bool
	}
	var binds []bind
	seen := map[string]bool{}
	for _, path := range p.Protect {
		if _, err := os.Lstat(path); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// A tool could create it, and with it tools or profiles
				// that toolsrv would load.
				return fmt.Errorf("toolsrv's own %s, inside the call's working directory, does not exist, so it cannot be kept read-only: create it (mkdir -p %s) or choose a working directory that does not hold it", path, path)
			}
			return fmt.Errorf("keeping %s read-only: %w", path, err)
		}
		for _, d := range between(roots, path) {
			if !seen[d] {
				seen[d] = true
				binds = append(binds, bind{path: d})
			}
		}
		binds = append(binds, bind{path: path, ro: true})
	}
	// Outer directories first: each bind (recursive) carries the binds
	// already made below it.
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].path) < len(binds[j].path) })
	for _, b := range binds {
		if err := unix.Mount(b.path, b.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s over itself to keep %s: %w", b.path, strings.Join(p.Protect, ", "), err)
		}
		if b.ro {
			if err := readOnly(b.path); err != nil {
				return fmt.Errorf("making %s read-only: %w", b.path, err)
			}
		}
	}
	return nil
}

// between lists the directories strictly between the deepest of roots
// that holds path and path itself, outermost first.
func between(roots []string, path string) []string {
	root := ""
	for _, r := range roots {
		if r != "" && len(r) > len(root) && Under(path, []string{r}) && path != r {
			root = r
		}
	}
	if root == "" {
		return nil
	}
	var dirs []string
	for d := filepath.Dir(path); d != root && len(d) > len(root); d = filepath.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	return dirs
}

// readOnly makes the mount at p, and the mounts below it, read-only.
func readOnly(p string) error {
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, attr)
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	// Before Linux 5.12: a remount of the top mount only, keeping the
	// flags a user namespace may not clear.
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return unix.Mount("", p, "", flags, "")
}

// hideKeys binds /dev/null over /proc/keys and /proc/key-users (the call's
// own /proc only).
func hideKeys() error {
	for _, p := range []string{"/proc/keys", "/proc/key-users"} {
		if _, err := os.Stat(p); err != nil {
			continue // a kernel without keys
		}
		if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hiding %s: %w", p, err)
		}
	}
	return nil
}
