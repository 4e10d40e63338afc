package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/sqlitefile"
)

// fileStore is the embedded store: an SQLite database in one file (and,
// while in use, its write-ahead log PATH-wal and index PATH-shm), which
// sqlitefile.File opens, follows (a file set aside or removed by another
// process is let go) and sets aside when damaged.
type fileStore struct {
	path string
	opts Options
	file *sqlitefile.File

	// key is the installation's key once read (Secret), warned whether
	// Secret said it cannot be read.
	keyMu  sync.Mutex
	key    []byte
	warned bool
}

// openFile is the driver for file paths: it opens the store at dsn if
// there is one (checking it, setting it aside when damaged, sweeping what
// expired) and otherwise makes nothing until the first Record.
func openFile(ctx context.Context, dsn string, opts Options) (Store, []string, error) {
	path, err := filepath.Abs(dsn)
	if err != nil {
		return nil, nil, err
	}
	s := &fileStore{path: path, opts: opts}
	s.file = sqlitefile.New(path, sqlitefile.Options{
		Name:    "usage store",
		Pragmas: pragmas,
		Layout:  func(ctx context.Context, db *sql.DB) error { return ensureSchema(ctx, db, opts.Now().UnixMicro()) },
		Check:   opts.Check,
		Derived: removeDerived,
		Now:     opts.Now,
		Logger:  opts.Logger,
	})
	var warnings []string
	warn := func(msg string) { warnings = append(warnings, msg) }
	if _, err := os.Stat(path); err == nil {
		// The directory of an existing store must be private too.
		if err := fileio.PrivateDir(filepath.Dir(path), os.Geteuid(), fileio.WarnLogger(warn)); err != nil {
			return nil, warnings, fmt.Errorf("usage store: %w", err)
		}
	}
	if _, err := s.file.Handle(ctx, false, warn); err != nil {
		return nil, warnings, err
	}
	if err := s.sweep(ctx); err != nil {
		s.Close()
		return nil, warnings, err
	}
	return s, warnings, nil
}

func (s *fileStore) Close() error { return s.file.Close() }

// write runs fn in a write transaction (sqlitefile.File.Write), making
// the store when create is set; with no store and create unset it does
// nothing. A store found damaged is set aside, and fn runs once more on a
// new one; any other error (out of space, an I/O error) is returned, the
// store left as it is. op names the operation in errors.
func (s *fileStore) write(ctx context.Context, op string, create bool, fn func(*sql.Tx) error) error {
	return s.file.Write(ctx, op, create, fn)
}

// read runs fn in a read transaction (sqlitefile.File.Read): one
// consistent view of the store while others write. The transaction is
// nil when there is no store. op names the operation in errors;
// ErrResnapshot is returned as it is.
func (s *fileStore) read(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	err := s.file.Read(ctx, op, fn)
	if errors.Is(err, ErrResnapshot) {
		return ErrResnapshot
	}
	return err
}
