package sqlitefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// asideInfix names a file set aside: PATH.damaged-TIME[-N].
const asideInfix = ".damaged-"

// SetAside renames the damaged database at path to a name of its own,
// PATH.damaged-TIME (TIME is now, to the nanosecond; -2, -3, … follow
// when that name is taken), its write-ahead log with it, removes its
// shared-memory index, and returns the new name. A name is never reused
// and nothing is ever renamed onto an existing file (the rename refuses
// to replace: renameat2's RENAME_NOREPLACE, else a hard link), so two
// set-asides in the same instant, by this process or another, keep both
// copies. It leaves alone a path that is no longer the file found damaged
// (id, from Identify): another process set it aside first and made a new
// one; then it returns "".
func SetAside(path string, id FileID, now time.Time) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if Identify(fi) != id {
		return "", nil
	}
	base := path + asideInfix + now.UTC().Format("20060102T150405.000000000Z")
	var aside string
	for n := 1; ; n++ {
		aside = base
		if n > 1 {
			aside += "-" + strconv.Itoa(n)
		}
		if _, err := os.Lstat(aside + "-wal"); err == nil {
			continue // the log of a copy of that name: not this one's
		}
		err := renameNoReplace(path, aside)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n >= 1000 {
			return "", fmt.Errorf("setting aside %s: %w", path, err)
		}
	}
	// The log belongs to the damaged file; replayed into a new one it
	// would damage that too.
	if err := renameNoReplace(path+"-wal", aside+"-wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return aside, fmt.Errorf("setting aside %s's log: %w", path, err)
	}
	if err := os.Remove(path + "-shm"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return aside, fmt.Errorf("removing %s's index: %w", path, err)
	}
	return aside, nil
}

// renameNoReplace renames from to to unless to exists (an error
// wrapping fs.ErrExist then). Where the file system cannot rename without
// replacing, it links to to (which fails when to exists) and removes from.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}

// SetAsideCopies are the copies of the database at path set aside
// (SetAside), their logs among them.
func SetAsideCopies(path string) []string {
	ents, _ := os.ReadDir(filepath.Dir(path))
	prefix := filepath.Base(path) + asideInfix
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
	return out
}
