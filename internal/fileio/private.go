package fileio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotPrivate is wrapped by PrivateDir's error for a directory toolsrv
// will not keep its files in.
var ErrNotPrivate = errors.New("not a private directory")

// PrivateDir makes dir fit to hold toolsrv's own files, which other users
// must not read (the index and catalog caches hold every tool's
// definition; the known schemas, the thresholds, the logs, what a user
// searched for): a directory of this user's that nobody else may enter.
//   - A missing directory is created 0700 (its missing parents too).
//   - A directory of another user is refused: it could read or replace
//     what toolsrv writes there.
//   - A directory of ours that group or others may use is made 0700,
//     which log is told in one line; unless that would cut others off
//     from what it holds (SharedDir): such a directory is refused. A
//     directory named "toolsrv", or one of its directories, is toolsrv's
//     own, whose mode is always toolsrv's to change.
//
// The directory is examined and changed through one open descriptor, so
// that a path swapped in between changes nothing. An error wraps
// ErrNotPrivate when the directory exists but is refused. me is this
// user's uid (os.Geteuid(); tests pretend to be someone else).
func PrivateDir(dir string, me int, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if uid, ok := Owner(fi); !ok || uid != me {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d), who could read or replace what toolsrv keeps there: %w", dir, uid, me, ErrNotPrivate)
	}
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
	if mode.Perm()&0o077 == 0 {
		return nil
	}
	if !toolsrvOwn(dir) {
		if why := SharedDir(dir, fi, me); why != "" {
			return fmt.Errorf("%s is mode %04o, which lets others in, and %s, so toolsrv will not change its mode; use a directory of its own: %w", dir, mode.Perm(), why, ErrNotPrivate)
		}
	}
	if err := d.Chmod(0o700); err != nil {
		return fmt.Errorf("making %s private (0700): %w", dir, err)
	}
	if log != nil {
		log.Warn(fmt.Sprintf("made %s private: mode 0700, was %04o (other users could read what toolsrv keeps there)", dir, mode.Perm()))
	}
	return nil
}

// toolsrvOwn reports whether dir is named "toolsrv" or is a directory of
// one so named (where toolsrv puts its caches, state and settings:
// toolsrv/EMBEDDER, toolsrv/thresholds).
func toolsrvOwn(dir string) bool {
	dir = filepath.Clean(dir)
	return filepath.Base(dir) == "toolsrv" || filepath.Base(filepath.Dir(dir)) == "toolsrv"
}

// SharedDir says why a mode change of dir (ours, fi its status) would hurt
// others, or "" when it would not: a shared directory (sticky or
// world-writable, such as /tmp), a system directory ("/", its direct
// children such as /run or /home, anything under /etc, /usr, /var, /run
// ...), the home directory itself, or a directory holding files of other
// users. me is this user's uid.
func SharedDir(dir string, fi fs.FileInfo, me int) string {
	if fi.Mode()&fs.ModeSticky != 0 || fi.Mode().Perm()&0o002 != 0 {
		return "is shared (sticky or world-writable)"
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	if real, err = filepath.Abs(real); err != nil {
		return "cannot be located"
	}
	if real == "/" || filepath.Dir(real) == "/" {
		return "is a system directory"
	}
	// The trees whose directories are never changed.
	for _, s := range []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
		"/opt", "/proc", "/run", "/sbin", "/srv", "/sys", "/usr", "/var"} {
		if strings.HasPrefix(real, s+"/") {
			return "is a system directory"
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil && h == real {
			return "is your home directory"
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "cannot be listed (" + err.Error() + ")"
	}
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		if uid, ok := Owner(info); ok && uid != me {
			return fmt.Sprintf("holds files of other users (%s belongs to uid %d)", e.Name(), uid)
		}
	}
	return ""
}

// Owner is a file's owner uid.
func Owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}

// WarnLogger is a logger that passes each message to warn: for callers of
// PrivateDir that return its notes as warnings rather than log them.
func WarnLogger(warn func(string)) *slog.Logger { return slog.New(warnHandler(warn)) }

type warnHandler func(string)

func (h warnHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	h(r.Message)
	return nil
}
func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnHandler) WithGroup(string) slog.Handler      { return h }
