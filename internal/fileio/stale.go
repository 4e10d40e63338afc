package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StaleAfter is how long a temporary file of WriteAtomic must have gone
// unwritten before RemoveStaleTemps may take it for a dead writer's. The
// lock says whether its writer lives; the age covers the instant between
// the file's creation and its lock, and a file system without flock.
const StaleAfter = time.Minute

// tempPattern is os.CreateTemp's pattern of path's temporary files:
// ".NAME.RANDOM.tmp", hidden, beside it.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".*.tmp" }

// isTemp reports whether name is one of tempPattern's.
func isTemp(name string) bool {
	_, ok := TempOf(name)
	return ok
}

// TempOf says whether name is the temporary file of a WriteAtomic under
// way (or of one whose writer died), and of which file: its base name.
func TempOf(name string) (target string, ok bool) {
	rest, ok := strings.CutSuffix(name, ".tmp")
	if !ok || !strings.HasPrefix(rest, ".") {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 1 || i == len(rest)-1 {
		return "", false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest[1:i], true
}

// lockTemp takes the writer's lock on a temporary file (held until the
// file is closed, or its process dies), where the file system can.
func lockTemp(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Flock(int(fd), unix.LOCK_EX) })
	}
}

// RemoveStaleTemps removes from dir the temporary files of WriteAtomic
// whose writer died before its rename (kill -9, a crash, a power cut):
// those no process holds the lock of and that nobody wrote to for
// StaleAfter. A live writer's, in this process or another sharing the
// directory, holds its lock; it is left alone. It returns the names of
// the files removed; a file it cannot examine is left, and an error is
// returned only when dir cannot be listed.
func RemoveStaleTemps(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isTemp(e.Name()) {
			continue
		}
		if removeStale(filepath.Join(dir, e.Name())) {
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

// removeStale removes path if it is a stale temporary file (see
// RemoveStaleTemps) and reports whether it did.
func removeStale(path string) bool {
	// Read-write: where flock is emulated with record locks (NFS), an
	// exclusive lock needs a descriptor open for writing.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < StaleAfter {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil || lerr != nil {
		return false // a live writer holds it (or locks do not work here)
	}
	// Holding its lock, no writer can take it: remove it unless the name
	// was given to another file meanwhile.
	if now, err := os.Lstat(path); err != nil || !os.SameFile(now, fi) {
		return false
	}
	return os.Remove(path) == nil
}
