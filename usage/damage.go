package usage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// errDamaged marks a store that cannot be read as one: it is set aside.
var errDamaged = errors.New("damaged")

// isDamage reports whether err says the store's file is damaged (not a
// database, or a corrupt one), as opposed to busy, unreadable or gone.
func isDamage(err error) bool {
	if errors.Is(err, errDamaged) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// sqliteMagic begins every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// checkHeader reports a file that is not empty and not a database.
func checkHeader(f *os.File) error {
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil // an empty file is an empty store
	case errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && !bytes.Equal(head, sqliteMagic)):
		return fmt.Errorf("not an SQLite database: %w", errDamaged)
	}
	return err
}

// check reads the whole store once (PRAGMA quick_check: every page, every
// record's format, the indexes' order; not their agreement with the
// tables) and reports damage.
func check(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(problems, "; "), errDamaged)
	}
	return nil
}

// setAside renames the damaged store at path (and its write-ahead log) to
// PATH.damaged-TIME, removes its shared-memory index, and returns the
// new name. It leaves alone a path that is no longer the file found
// damaged (id): another process set it aside first and made a new one.
func setAside(path string, id fileID, now time.Time) (string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if idOf(fi) != id {
		return "", nil
	}
	aside := path + ".damaged-" + now.UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("setting aside the damaged usage store: %w", err)
	}
	// The log belongs to the damaged file; replayed into a new one it
	// would damage that too.
	if err := os.Rename(path+"-wal", aside+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return aside, fmt.Errorf("setting aside the damaged usage store's log: %w", err)
	}
	if err := os.Remove(path + "-shm"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return aside, fmt.Errorf("removing the damaged usage store's index: %w", err)
	}
	if err := removeDerived(path); err != nil {
		return aside, fmt.Errorf("removing what was derived from the damaged usage store: %w", err)
	}
	return aside, nil
}

// damagedCopies are the set-aside copies of the store at path.
func damagedCopies(path string) []string {
	ents, _ := os.ReadDir(filepath.Dir(path))
	prefix := filepath.Base(path) + ".damaged-"
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
	return out
}
