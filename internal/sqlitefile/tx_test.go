package sqlitefile

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// TestInTxWaitsOutBusy: a connection answered BUSY at once (here one with
// no busy handler of its own, as SQLite answers some opens under load)
// gets its transaction done by InTx once the other writer commits, and
// IsBusy tells that answer apart from other errors.
func TestInTxWaitsOutBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := sql.Open("sqlite", DSN(path, "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	// No busy_timeout: BUSY comes back at once.
	impatient, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String()+"?mode=rw&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()

	tx, err := holder.BeginTx(ctx, nil) // IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	_, busyErr := impatient.ExecContext(ctx, `INSERT INTO t VALUES (0)`)
	if !IsBusy(busyErr) {
		t.Fatalf("a write beside a held lock: %v, want BUSY", busyErr)
	}
	if IsBusy(sql.ErrNoRows) || IsBusy(nil) {
		t.Error("IsBusy true for an error that is not BUSY")
	}
	if err := once(ctx, impatient, nil, func(*sql.Tx) error { return nil }); !IsBusy(err) {
		t.Fatalf("one transaction beside a held lock: %v, want BUSY (the test would show nothing)", err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		tx.Commit()
		close(released)
	}()
	err = InTx(ctx, impatient, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		return err
	})
	<-released
	if err != nil {
		t.Fatalf("InTx beside a writer that commits: %v (the BUSY answer was not waited out)", err)
	}
	var n int
	if err := holder.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 2 {
		t.Errorf("rows %d (%v), want 2: both writes kept", n, err)
	}
}

// TestInTxGivesUpOnOtherErrors: an error that is not BUSY is returned at
// once, the transaction rolled back.
func TestInTxGivesUpOnOtherErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	runs := 0
	err = InTx(ctx, db, nil, func(tx *sql.Tx) error {
		runs++
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (NULL)`)
		return err
	})
	if err == nil || runs != 1 {
		t.Fatalf("a failing transaction: err %v after %d run(s), want an error after 1", err, runs)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows %d (%v), want 0: rolled back", n, err)
	}
}

// TestRetryWaitsOutBusy: a statement outside any transaction of InTx's
// (laying out a file that another process is opening too) that SQLite
// answers BUSY is run again until the other writer commits, and another
// error is returned at once.
func TestRetryWaitsOutBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := sql.Open("sqlite", DSN(path, "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	impatient, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String()+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	layout := func() error {
		_, err := impatient.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS u (v INTEGER)`)
		return err
	}
	if err := layout(); !IsBusy(err) {
		t.Fatalf("a layout beside a held lock: %v, want BUSY (the test would show nothing)", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		tx.Commit()
	}()
	if err := Retry(ctx, layout); err != nil {
		t.Fatalf("Retry beside a writer that commits: %v", err)
	}
	runs := 0
	if err := Retry(ctx, func() error { runs++; return sql.ErrNoRows }); err != sql.ErrNoRows || runs != 1 {
		t.Errorf("another error: %v after %d runs, want it at once", err, runs)
	}
}
