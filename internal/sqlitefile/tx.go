package sqlitefile

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// InTx runs fn in a transaction of db and commits it. While SQLite
// answers BUSY (IsBusy), the whole transaction is rolled back and run
// again (Retry), so that several processes writing at once lose nothing;
// fn must therefore do nothing outside the transaction that cannot be
// done twice.
func InTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	return Retry(ctx, func() error { return once(ctx, db, opts, fn) })
}

// Retry runs fn, and again while it fails with BUSY (IsBusy), for up to
// BusyTimeout in all (pauses from 5 ms, doubling to 200 ms; ctx ends the
// wait sooner): what a connection does outside a transaction of InTx's
// (laying out a new file, reading it once at open) meets the locks of
// other processes opening the same file too. fn must be safe to run
// twice.
func Retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(BusyTimeout)
	pause := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil || !IsBusy(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// once runs fn in one transaction of db.
func once(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// IsBusy reports whether err is SQLite's "database is locked" (BUSY): most
// waits for another connection's lock happen in SQLite's busy handler
// (BusyTimeout), but some are answered BUSY at once (a connection opened
// while another checkpoints the log or recovers it, under heavy load).
func IsBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
