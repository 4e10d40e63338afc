package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// File is an SQLite database in one file of this user's (mode 0600, in a
// private directory; while in use, with its write-ahead log PATH-wal and
// index PATH-shm), opened when first needed. Each call looks at the path
// first: a file another process set aside or someone removed is let go,
// and the one now there opened (or made). A file found damaged (IsDamage,
// at open or by a call) is set aside (SetAside) and a new one made; any
// other error is returned as it is, and the file left as it is. Every
// method may be called from several goroutines at once.
type File struct {
	path string
	o    Options
	me   int // this user's uid

	// mu guards db, id and closed: the connections to the file at path,
	// nil while there are none, and which file they have open.
	mu     sync.Mutex
	db     *sql.DB
	id     FileID
	closed bool

	// wmu makes this process's write transactions take turns here
	// rather than in SQLite's busy wait.
	wmu sync.Mutex
}

// Options say what a File holds and how it is opened.
type Options struct {
	// Name is what the file is, for messages ("usage store").
	Name string
	// Pragmas are set on every connection, in order, after busy_timeout
	// (DSN).
	Pragmas []string
	// Layout lays out a new (empty) file and checks an existing one's
	// layout; it runs at every open, again while another process holds
	// the file (Retry). An error that IsDamage sets the file aside.
	Layout func(ctx context.Context, db *sql.DB) error
	// Check reads the whole file at open (quick_check), setting it aside
	// when damaged.
	Check bool
	// Derived, if set, removes what was derived from the file at path:
	// called when a new file is made there and when one is set aside, so
	// that nothing derived from one file is taken as another's.
	Derived func(path string) error
	// Now is the clock of set-aside names (nil: time.Now).
	Now func() time.Time
	// Logger gets the warnings of calls after the first (a file set
	// aside); nil discards them.
	Logger *slog.Logger
}

// New is the File at path (an absolute path). It touches nothing: Handle,
// Read and Write open the file.
func New(path string, o Options) *File {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &File{path: path, o: o, me: os.Geteuid()}
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// FileID identifies a file (its device and inode).
type FileID struct{ dev, ino uint64 }

// Identify is the identity of the file fi describes.
func Identify(fi fs.FileInfo) FileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}
	}
	return FileID{dev: uint64(st.Dev), ino: st.Ino}
}

// Tag names the file open now ("" when none is): the same tag is the same
// file, a file made anew gets another.
func (f *File) Tag() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return ""
	}
	return fmt.Sprintf("file %d:%d", f.id.dev, f.id.ino)
}

// Handle returns the connections to the file, opening it (create: making
// it, when there is none) when needed; nil, nil when there is no file and
// create is false. warn gets what the user should be told (a file made
// private, one set aside); nil sends it to the logger.
func (f *File) Handle(ctx context.Context, create bool, warn func(string)) (*sql.DB, error) {
	if warn == nil {
		warn = func(msg string) { f.o.Logger.Warn(msg) }
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handleLocked(ctx, create, warn, 0)
}

func (f *File) handleLocked(ctx context.Context, create bool, warn func(string), depth int) (*sql.DB, error) {
	if f.closed {
		return nil, fmt.Errorf("%s: closed", f.o.Name)
	}
	fi, err := os.Lstat(f.path)
	switch {
	case err == nil:
		if f.db != nil && Identify(fi) == f.id {
			return f.db, nil
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("%s: %w", f.o.Name, err)
	}
	f.closeLocked()
	if err == nil {
		err = f.openLocked(ctx, fi, warn)
		if err == nil || !IsDamage(err) || depth > 0 {
			return f.db, err
		}
		aside, serr := f.setAside(Identify(fi))
		if serr != nil {
			return nil, fmt.Errorf("%s %s is damaged (%v), and %w", f.o.Name, f.path, err, serr)
		}
		if aside != "" {
			warn(fmt.Sprintf("%s %s was damaged (%v): set aside as %s; starting a new one", f.o.Name, f.path, err, aside))
		}
		return f.handleLocked(ctx, create, warn, depth+1)
	}
	if !create {
		return nil, nil
	}
	if err := f.createLocked(ctx, warn); err != nil {
		return nil, err
	}
	return f.db, nil
}

// openLocked connects to the existing file (fi): its owner checked, its
// mode made private, its header, layout (and with Check its pages)
// checked.
func (f *File) openLocked(ctx context.Context, fi fs.FileInfo, warn func(string)) error {
	if uid, ok := fileio.Owner(fi); ok && uid != f.me {
		return fmt.Errorf("%s %s belongs to uid %d, not to this user (uid %d)", f.o.Name, f.path, uid, f.me)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s %s is not a regular file", f.o.Name, f.path)
	}
	fd, err := os.OpenFile(f.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", f.o.Name, err)
	}
	err = checkHeader(fd)
	fd.Close()
	if err != nil {
		return fmt.Errorf("%s %s: %w", f.o.Name, f.path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		for _, p := range []string{f.path, f.path + "-wal", f.path + "-shm"} {
			if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("making the %s private: %w", f.o.Name, err)
			}
		}
		warn(fmt.Sprintf("made %s %s private: mode 0600, was %04o (other users could read the requests in it)", f.o.Name, f.path, perm))
	}
	db, err := sql.Open("sqlite", DSN(f.path, f.o.Pragmas...))
	if err != nil {
		return fmt.Errorf("%s: %w", f.o.Name, err)
	}
	// Another process may be laying out or opening the same new file.
	if f.o.Layout != nil {
		err = Retry(ctx, func() error { return f.o.Layout(ctx, db) })
	}
	if err == nil && f.o.Check {
		err = Retry(ctx, func() error { return quickCheck(ctx, db) })
	}
	if err != nil {
		db.Close()
		return fmt.Errorf("%s %s: %w", f.o.Name, f.path, err)
	}
	f.db, f.id = db, Identify(fi)
	return nil
}

// createLocked makes a new file: its directory private (0700; a
// directory of another user, or a shared one, is refused), the file mode
// 0600 (the log and index SQLite adds beside it take its mode), laid out.
func (f *File) createLocked(ctx context.Context, warn func(string)) error {
	if err := fileio.PrivateDir(filepath.Dir(f.path), f.me, fileio.WarnLogger(warn)); err != nil {
		return fmt.Errorf("%s: %w", f.o.Name, err)
	}
	fd, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) { // another process made it first: use theirs
		return fmt.Errorf("%s: %w", f.o.Name, err)
	}
	if fd != nil {
		fd.Close()
		// What was derived from a file once at this path is not of this
		// one.
		if f.o.Derived != nil {
			if err := f.o.Derived(f.path); err != nil {
				return fmt.Errorf("%s: %w", f.o.Name, err)
			}
		}
	}
	fi, err := os.Lstat(f.path)
	if err != nil {
		return fmt.Errorf("%s: %w", f.o.Name, err)
	}
	return f.openLocked(ctx, fi, warn)
}

// setAside sets aside the file id at the path, and removes what was
// derived from it.
func (f *File) setAside(id FileID) (string, error) {
	aside, err := SetAside(f.path, id, f.o.Now())
	if err == nil && aside != "" && f.o.Derived != nil {
		if err := f.o.Derived(f.path); err != nil {
			return aside, fmt.Errorf("removing what was derived from the damaged %s: %w", f.o.Name, err)
		}
	}
	return aside, err
}

func (f *File) closeLocked() error {
	if f.db == nil {
		return nil
	}
	err := f.db.Close()
	f.db, f.id = nil, FileID{}
	return err
}

// Close releases the file; calls after it fail.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return f.closeLocked()
}

// Write runs fn in a write transaction (BEGIN IMMEDIATE: it holds the
// file's write lock from the start; InTx: again while BUSY), making the
// file when create is set; with no file and create unset it does nothing.
// A file found damaged is set aside, and fn runs once more on a new one
// (so fn must start afresh each time). Any other error is returned, fn's
// and the transaction's as "NAME: op: ERR" (op names the operation).
func (f *File) Write(ctx context.Context, op string, create bool, fn func(*sql.Tx) error) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	for try := 0; ; try++ {
		db, err := f.Handle(ctx, create, nil)
		if err != nil || db == nil {
			return err
		}
		err = InTx(ctx, db, nil, fn)
		if err == nil || !IsDamage(err) || try > 0 {
			return f.opErr(op, err)
		}
		f.setAsideInUse(err)
	}
}

// Read runs fn in a read transaction: one consistent view of the file
// while others write. The transaction is nil when there is no file. A
// file found damaged is set aside, and fn runs once more on a new one (so
// fn must start afresh each time). Any other error is returned, fn's and
// the transaction's as "NAME: op: ERR" (errors.Is finds fn's own).
func (f *File) Read(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	for try := 0; ; try++ {
		db, err := f.Handle(ctx, false, nil)
		if err != nil {
			return err
		}
		if db == nil {
			return fn(nil)
		}
		err = InTx(ctx, db, &sql.TxOptions{ReadOnly: true}, fn)
		if err == nil || !IsDamage(err) || try > 0 {
			return f.opErr(op, err)
		}
		f.setAsideInUse(err)
	}
}

// opErr is err of operation op (nil: nil).
func (f *File) opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", f.o.Name, op, err)
}

// Exclusive runs fn with the connections to the file (none: fn is not
// run) while this process's writes wait: for what runs outside a
// transaction (VACUUM, a checkpoint).
func (f *File) Exclusive(ctx context.Context, fn func(*sql.DB) error) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	db, err := f.Handle(ctx, false, nil)
	if err != nil || db == nil {
		return err
	}
	return fn(db)
}

// setAsideInUse sets aside the open file, found damaged (err) while in
// use, so that the next call starts a new one.
func (f *File) setAsideInUse(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.id
	f.closeLocked()
	aside, serr := f.setAside(id)
	switch {
	case serr != nil:
		f.o.Logger.Error(f.o.Name+" damaged, and could not be set aside", "path", f.path, "damage", err, "err", serr)
	case aside != "":
		f.o.Logger.Warn(fmt.Sprintf("%s %s was damaged (%v): set aside as %s; starting a new one", f.o.Name, f.path, err, aside))
	}
}
