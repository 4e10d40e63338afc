package sqlitefile

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDamaged marks a file that cannot be read as the database it should
// be, found so by toolsrv rather than by SQLite (a header that is not
// SQLite's, a layout without its version, rows missing that the file
// counts): it is set aside, as SQLite's own corruption errors are.
var ErrDamaged = errors.New("damaged")

// IsDamage is the one rule for "damaged": err says the file itself is
// not a database, or a corrupt one (SQLITE_NOTADB, SQLITE_CORRUPT and
// their extended codes, or ErrDamaged). Only such a file is set aside and
// made anew. Every other error (busy, out of space, an I/O error, a
// permission refused, a context ended) says nothing about the file's
// contents: setting it aside would throw away what it holds, so it is an
// error for the caller to report (and, where it can, to keep what it was
// writing until the file can take it).
func IsDamage(err error) bool {
	if errors.Is(err, ErrDamaged) {
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

// magic begins every SQLite database file.
var magic = []byte("SQLite format 3\x00")

// checkHeader reports a file that is not empty and not a database.
func checkHeader(f *os.File) error {
	head := make([]byte, len(magic))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return nil // an empty file is an empty database
	case errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && !bytes.Equal(head, magic)):
		return fmt.Errorf("not an SQLite database: %w", ErrDamaged)
	}
	return err
}

// quickCheck reads the whole database once (PRAGMA quick_check: every
// page, every record's format, the indexes' order; not their agreement
// with the tables) and reports damage.
func quickCheck(ctx context.Context, db *sql.DB) error {
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
		return fmt.Errorf("%s: %w", strings.Join(problems, "; "), ErrDamaged)
	}
	return nil
}
