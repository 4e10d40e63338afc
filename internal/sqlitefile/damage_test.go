package sqlitefile

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// The test binary doubles as a process with no room to grow a file, for
// TestOnlyCorruptionIsDamage and TestFullDiskKeepsTheFile:
//
//	SQLITEFILE_CHILD=full SQLITEFILE_DB=PATH: sets its file size limit
//	to 0 (RLIMIT_FSIZE: every write that would grow a file is refused,
//	EFBIG), then writes a row into the File at PATH and prints the error
//	(its SQLite code; "damage" when IsDamage) and the copies set aside.
func TestMain(m *testing.M) {
	if os.Getenv("SQLITEFILE_CHILD") == "full" {
		os.Exit(fullChild(os.Getenv("SQLITEFILE_DB")))
	}
	os.Exit(m.Run())
}

func fullChild(path string) int {
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim)
	lim.Cur = 0
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	f := testFile(path, nil)
	defer f.Close()
	err := f.Write(context.Background(), "insert", true, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO t VALUES (randomblob(4000))`)
		return err
	})
	fmt.Printf("err: %s damage: %v\n", describe(err), IsDamage(err))
	fmt.Printf("set aside: %d\n", len(SetAsideCopies(path)))
	return 0
}

// describe is err with its SQLite code.
func describe(err error) string {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%v [code %d]", err, se.Code())
	}
	return fmt.Sprint(err)
}

// testFile is a File at path holding a table t of blobs.
func testFile(path string, logged *bytes.Buffer) *File {
	o := Options{Name: "test file", Pragmas: []string{"journal_mode(WAL)", "synchronous(FULL)"},
		Layout: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (v BLOB)`)
			return err
		}}
	if logged != nil {
		o.Logger = slogTo(logged)
	}
	return New(path, o)
}

// filled makes a File at path holding n rows, closed.
func filled(t *testing.T, path string, n int) {
	t.Helper()
	f := testFile(path, nil)
	defer f.Close()
	for range n {
		if err := f.Write(context.Background(), "insert", true, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO t VALUES (randomblob(1000))`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// rows counts t's rows in the database at path, read with a plain
// connection (not through File, which could set it aside).
func rows(t *testing.T, path string) (int, error) {
	t.Helper()
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM t`).Scan(&n)
	return n, err
}

// The one rule for "damaged", on the errors SQLite really gives: a file
// that is not a database (NOTADB), or a corrupt one (CORRUPT), is damage;
// no room to write (an I/O error: a full disk, a file size limit), a
// busy file, a path SQLite cannot open, a context ended are not.
func TestOnlyCorruptionIsDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	query := func(path string) error {
		db, err := sql.Open("sqlite", DSN(path))
		if err != nil {
			return err
		}
		defer db.Close()
		var n int
		return db.QueryRowContext(ctx, `SELECT sum(length(v)) FROM t`).Scan(&n)
	}

	notADB := filepath.Join(dir, "notadb.db")
	if err := os.WriteFile(notADB, bytes.Repeat([]byte("not a database "), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.db")
	filled(t, corrupt, 50)
	garble(t, corrupt)
	busy := filepath.Join(dir, "busy.db")
	filled(t, busy, 1)
	holder, err := sql.Open("sqlite", DSN(busy))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.Begin() // IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	impatient, err := sql.Open("sqlite", "file:"+busy+"?mode=rw&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	for _, tc := range []struct {
		name   string
		err    func() error
		damage bool
	}{
		{"not a database", func() error { return query(notADB) }, true},
		{"corrupt pages", func() error { return query(corrupt) }, true},
		{"header checked by toolsrv", func() error {
			f, err := os.Open(notADB)
			if err != nil {
				return err
			}
			defer f.Close()
			return checkHeader(f)
		}, true},
		{"busy", func() error { _, err := impatient.Exec(`INSERT INTO t VALUES (1)`); return err }, false},
		{"cannot open (a directory)", func() error { return query(dir) }, false},
		{"context ended", func() error {
			db, _ := sql.Open("sqlite", DSN(busy))
			defer db.Close()
			_, err := db.ExecContext(cancelled, `SELECT 1`)
			return err
		}, false},
	} {
		err := tc.err()
		if err == nil {
			t.Fatalf("%s: no error (the test shows nothing)", tc.name)
		}
		if got := IsDamage(err); got != tc.damage {
			t.Errorf("%s: IsDamage(%s) = %v, want %v", tc.name, describe(err), got, tc.damage)
		}
	}

	// No room to grow a file: a process whose writes the kernel refuses
	// as it refuses them on a full disk.
	path := filepath.Join(dir, "full.db")
	filled(t, path, 3)
	out := fullChildRun(t, path)
	if !strings.Contains(out, "I/O error") || !strings.Contains(out, "damage: false") {
		t.Errorf("a write with no room to grow the file:\n%s\nwant an I/O error that is not damage", out)
	}
}

// fullChildRun runs fullChild on path and returns what it printed.
func fullChildRun(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SQLITEFILE_CHILD=full", "SQLITEFILE_DB="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	return string(out)
}

// garble overwrites the start (the b-tree header) of every page but the
// first (the layout).
func garble(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	for off := int64(4096); off < fi.Size(); off += 4096 {
		if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, 300), off); err != nil {
			t.Fatal(err)
		}
	}
}

// A File that cannot be written (no room) returns the error and stays
// where it is, whole: nothing set aside, every row there once there is
// room. As root the disk is a real full tmpfs as well.
func TestFullDiskKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	filled(t, path, 3)
	out := fullChildRun(t, path)
	if !strings.Contains(out, "damage: false") || !strings.Contains(out, "set aside: 0") {
		t.Errorf("a file size limit of 0:\n%s\nwant an error, not damage, nothing set aside", out)
	}
	if n, err := rows(t, path); err != nil || n != 3 {
		t.Errorf("after: %d rows (%v), want the 3 there were", n, err)
	}
	if os.Geteuid() != 0 {
		return // the file size limit stands for the full disk
	}
	mnt := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	path = filepath.Join(mnt, "x.db")
	var logged bytes.Buffer
	f := testFile(path, &logged)
	defer f.Close()
	insert := func() error {
		return f.Write(context.Background(), "insert", true, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO t VALUES (randomblob(1000))`)
			return err
		})
	}
	var err error
	n := 0
	for ; n < 5000; n++ { // the file itself fills the disk, while open
		if err = insert(); err != nil {
			break
		}
	}
	if err == nil || IsDamage(err) {
		t.Fatalf("writing until the tmpfs is full: %s after %d rows, want an error that is not damage", describe(err), n)
	}
	t.Logf("full after %d rows: %s", n, describe(err))
	if err := insert(); err == nil || IsDamage(err) {
		t.Errorf("another write on the full disk: %s", describe(err))
	}
	if aside := SetAsideCopies(path); len(aside) != 0 || logged.Len() != 0 {
		t.Errorf("set aside on a full disk: %v, log %s", aside, logged.String())
	}
	f.Close()
	if got, err := rows(t, path); err != nil || got != n {
		t.Errorf("after: %d rows (%v), want the %d written", got, err, n)
	}
}

// A damaged file is set aside under a name of its own and a new one made,
// with a warning; two set-asides in the same instant keep both copies,
// and nothing is renamed onto an existing file.
func TestSetAsideNeverReplaces(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	at := time.Date(2026, 12, 7, 15, 4, 5, 0, time.UTC)
	name := path + ".damaged-20261207T150405.000000000Z"
	// A file already there under the name the first would take.
	if err := os.WriteFile(name, []byte("an older copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 3 {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("damaged copy %d, not a database", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		f := testFile(path, &logged)
		f.o.Now = func() time.Time { return at }
		var warned []string
		if _, err := f.Handle(ctx, true, func(msg string) { warned = append(warned, msg) }); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if len(warned) != 1 || !strings.Contains(warned[0], "set aside as ") {
			t.Fatalf("set-aside %d: warnings %q", i, warned)
		}
		names = append(names, warned[0][strings.Index(warned[0], "set aside as ")+len("set aside as "):strings.Index(warned[0], ";")])
		if err := os.Remove(path); err != nil { // the new one made, removed for the next round
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "an older copy" {
		t.Errorf("the file under the first name: %q %v, want it untouched", b, err)
	}
	seen := map[string]bool{}
	for i, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || string(b) != fmt.Sprintf("damaged copy %d, not a database", i) || seen[n] {
			t.Errorf("set-aside %d as %s: %q %v", i, n, b, err)
		}
		seen[n] = true
	}
	if got := SetAsideCopies(path); len(got) != 4 {
		t.Errorf("copies %v, want 4", got)
	}
	// A path that is no longer the file found damaged is left alone.
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if aside, err := SetAside(path, FileID{dev: 1, ino: 1}, at); aside != "" || err != nil {
		t.Errorf("SetAside of another file: %q %v", aside, err)
	}
}

// slogTo is a logger writing text to b.
func slogTo(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }
