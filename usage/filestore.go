package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/sqlitefile"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// fileStore is the embedded store: an SQLite database in one file (and,
// while in use, its write-ahead log PATH-wal and index PATH-shm).
type fileStore struct {
	path string
	opts Options
	me   int // this user's uid

	// mu guards db and id: the connections to the file at path, nil while
	// there is none, and which file they have open. Each call looks at
	// path first: a store another process set aside (damaged) or someone
	// removed is let go, and a new one opened.
	mu     sync.Mutex
	db     *sql.DB
	id     fileID
	closed bool

	// wmu makes this process's write transactions take turns here
	// rather than in SQLite's busy wait.
	wmu sync.Mutex
}

// fileID identifies a file (device and inode).
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}
}

// openFile is the driver for file paths: it opens the store at dsn if
// there is one (checking it, setting it aside when damaged, sweeping what
// expired) and otherwise makes nothing until the first Record.
func openFile(ctx context.Context, dsn string, opts Options) (Store, []string, error) {
	path, err := filepath.Abs(dsn)
	if err != nil {
		return nil, nil, err
	}
	s := &fileStore{path: path, opts: opts, me: os.Geteuid()}
	var warnings []string
	warn := func(msg string) { warnings = append(warnings, msg) }
	if _, err := os.Stat(path); err == nil {
		// The directory of an existing store must be private too.
		if err := fileio.PrivateDir(filepath.Dir(path), s.me, fileio.WarnLogger(warn)); err != nil {
			return nil, warnings, fmt.Errorf("usage store: %w", err)
		}
	}
	s.mu.Lock()
	_, err = s.handleLocked(ctx, false, warn)
	s.mu.Unlock()
	if err != nil {
		return nil, warnings, err
	}
	if err := s.sweep(ctx); err != nil {
		s.Close()
		return nil, warnings, err
	}
	return s, warnings, nil
}

// handle returns the connections to the store, opening (create: making)
// it when needed; nil, nil when there is no store and create is false.
// Warnings go to the logger.
func (s *fileStore) handle(ctx context.Context, create bool) (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handleLocked(ctx, create, func(msg string) { s.opts.Logger.Warn(msg) })
}

func (s *fileStore) handleLocked(ctx context.Context, create bool, warn func(string)) (*sql.DB, error) {
	if s.closed {
		return nil, errClosed
	}
	fi, err := os.Stat(s.path)
	switch {
	case err == nil:
		if s.db != nil && idOf(fi) == s.id {
			return s.db, nil
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, fmt.Errorf("usage store: %w", err)
	}
	s.closeLocked()
	if err == nil {
		err = s.openLocked(ctx, fi, warn)
		if err == nil || !isDamage(err) {
			return s.db, err
		}
		aside, serr := setAside(s.path, idOf(fi), s.opts.Now())
		if serr != nil {
			return nil, fmt.Errorf("usage store %s is damaged (%v), and %w", s.path, err, serr)
		}
		if aside != "" {
			warn(fmt.Sprintf("usage store %s was damaged (%v): set aside as %s; starting a new one", s.path, err, aside))
		}
		return s.handleLocked(ctx, create, warn)
	}
	if !create {
		return nil, nil
	}
	if err := s.createLocked(ctx, warn); err != nil {
		return nil, err
	}
	return s.db, nil
}

// openLocked connects to the existing store file (fi): its mode made
// private, its header, its pages and its layout checked.
func (s *fileStore) openLocked(ctx context.Context, fi fs.FileInfo, warn func(string)) error {
	if uid, ok := fileio.Owner(fi); ok && uid != s.me {
		return fmt.Errorf("usage store %s belongs to uid %d, not to this user (uid %d)", s.path, uid, s.me)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("usage store %s is not a regular file", s.path)
	}
	f, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("usage store: %w", err)
	}
	err = checkHeader(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("usage store %s: %w", s.path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm"} {
			if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("making the usage store private: %w", err)
			}
		}
		warn(fmt.Sprintf("made usage store %s private: mode 0600, was %04o (other users could read the requests in it)", s.path, perm))
	}
	db, err := sql.Open("sqlite", sqlitefile.DSN(s.path, pragmas...))
	if err != nil {
		return fmt.Errorf("usage store: %w", err)
	}
	// Another process may be laying out or opening the same new file.
	err = sqlitefile.Retry(ctx, func() error { return ensureSchema(ctx, db, s.opts.Now().UnixMicro()) })
	if err == nil && s.opts.Check {
		err = sqlitefile.Retry(ctx, func() error { return check(ctx, db) })
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("usage store %s: %w", s.path, err)
	}
	s.db, s.id = db, idOf(fi)
	return nil
}

// createLocked makes a new store: its directory private (0700; a
// directory of another user, or a shared one, is refused), the file mode
// 0600 (the log and index SQLite adds beside it take its mode), laid out.
func (s *fileStore) createLocked(ctx context.Context, warn func(string)) error {
	if err := fileio.PrivateDir(filepath.Dir(s.path), s.me, fileio.WarnLogger(warn)); err != nil {
		return fmt.Errorf("usage store: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil && !errors.Is(err, os.ErrExist) { // another process made it first: use theirs
		return fmt.Errorf("usage store: %w", err)
	}
	if f != nil {
		f.Close()
		// What was derived from a store once at this path is not of this
		// one (usage.Derived).
		if err := removeDerived(s.path); err != nil {
			return fmt.Errorf("usage store: %w", err)
		}
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("usage store: %w", err)
	}
	return s.openLocked(ctx, fi, warn)
}

func (s *fileStore) closeLocked() error {
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db, s.id = nil, fileID{}
	return err
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("usage store: closed")

func (s *fileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.closeLocked()
}

// write runs fn in a write transaction (BEGIN IMMEDIATE: it holds the
// store's write lock from the start), making the store when create is
// set. With no store and create unset it does nothing. A store found
// damaged is set aside, and fn runs once more on a new one. op names the
// operation in errors.
func (s *fileStore) write(ctx context.Context, op string, create bool, fn func(*sql.Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for try := 0; ; try++ {
		db, err := s.handle(ctx, create)
		if err != nil || db == nil {
			return err
		}
		err = sqlitefile.InTx(ctx, db, nil, fn)
		if err == nil {
			return nil
		}
		if !isDamage(err) || try > 0 {
			return fmt.Errorf("usage store: %s: %w", op, err)
		}
		s.setAsideDamaged(err)
	}
}

// read runs fn in a read transaction: one consistent view of the store
// while others write. The transaction is nil when there is no store. A
// store found damaged is set aside, and fn runs once more on a new one.
// op names the operation in errors; ErrResnapshot is returned as it is.
func (s *fileStore) read(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	for try := 0; ; try++ {
		db, err := s.handle(ctx, false)
		if err != nil {
			return err
		}
		if db == nil {
			return fn(nil)
		}
		err = sqlitefile.InTx(ctx, db, &sql.TxOptions{ReadOnly: true}, fn)
		if err == nil || err == ErrResnapshot {
			return err
		}
		if !isDamage(err) || try > 0 {
			return fmt.Errorf("usage store: %s: %w", op, err)
		}
		s.setAsideDamaged(err)
	}
}

// setAsideDamaged sets aside the open store, found damaged (err) while in
// use, so that the next call starts a new one.
func (s *fileStore) setAsideDamaged(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.id
	s.closeLocked()
	aside, serr := setAside(s.path, id, s.opts.Now())
	switch {
	case serr != nil:
		s.opts.Logger.Error("usage store damaged, and could not be set aside", "path", s.path, "damage", err, "err", serr)
	case aside != "":
		s.opts.Logger.Warn(fmt.Sprintf("usage store %s was damaged (%v): set aside as %s; starting a new one", s.path, err, aside))
	}
}
