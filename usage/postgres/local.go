package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/sqlitefile"
	"github.com/toolsrv/toolsrv/usage"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// local is what a shared store keeps on this host, in one SQLite file
// (mode 0600, in a private directory): the view (the namespace's entries
// as last read from the server, and their version), so that ranking goes
// on from it when the server is down, across restarts too; and the spool,
// the events recorded while the server was down, until they are sent.
type local struct {
	db   *sql.DB
	path string
}

// localSchema is the local file's layout.
var localSchema = []string{
	`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS view (hash BLOB PRIMARY KEY, entry BLOB NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, at INTEGER NOT NULL, event BLOB NOT NULL)`,
}

// errLocalDamaged is a local file SQLite cannot read.
var errLocalDamaged = errors.New("damaged")

// openLocal opens (making) the local file at path. warn gets what the
// user should be told (a directory made private).
func openLocal(ctx context.Context, path string, warn func(string)) (*local, error) {
	dir := filepath.Dir(path)
	if err := fileio.PrivateDir(dir, os.Geteuid(), fileio.WarnLogger(warn)); err != nil {
		return nil, fmt.Errorf("usage store: the local copy: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage store: the local copy: %w", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("usage store: the local copy: %w", err)
	}
	// FULL: a commit here may be the only copy of an event (the spool),
	// so it is synced to the disk before Record returns.
	db, err := sql.Open("sqlite", sqlitefile.DSN(path, "journal_mode(WAL)", "synchronous(FULL)", "secure_delete(ON)", "temp_store(MEMORY)"))
	if err != nil {
		return nil, fmt.Errorf("usage store: the local copy %s: %w", path, err)
	}
	l := &local{db: db, path: path}
	// Other instances on this host may be opening the same file: their
	// locks are BUSY, not damage (which would set the file, and its
	// unsent calls, aside).
	err = sqlitefile.Retry(ctx, func() error {
		for _, stmt := range localSchema {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, l.failed(err)
	}
	return l, nil
}

// failed is err of the local file: damage (errLocalDamaged), unless SQLite
// answered BUSY (another process holds it).
func (l *local) failed(err error) error {
	if sqlitefile.IsBusy(err) {
		return fmt.Errorf("usage store: the local copy %s: %w", l.path, err)
	}
	return fmt.Errorf("usage store: the local copy %s: %w: %w", l.path, errLocalDamaged, err)
}

func (l *local) Close() error { return l.db.Close() }

// storedEntry is an entry as the view keeps it.
type storedEntry struct {
	usage.Entry
}

// loadView reads the view and its version (none: empty, 0), again while
// another process holds the file (sqlitefile.Retry).
func (l *local) loadView(ctx context.Context) (view map[usage.Key]usage.Entry, version int64, err error) {
	err = sqlitefile.Retry(ctx, func() error {
		view, version, err = l.readView(ctx)
		return err
	})
	if err != nil {
		return nil, 0, l.failed(err)
	}
	return view, version, nil
}

// readView is one read of loadView's.
func (l *local) readView(ctx context.Context) (map[usage.Key]usage.Entry, int64, error) {
	view := map[usage.Key]usage.Entry{}
	var version int64
	err := l.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'version'`).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return view, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT entry FROM view`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		var e storedEntry
		if err := rows.Scan(&b); err != nil {
			return nil, 0, err
		}
		if err := json.Unmarshal(b, &e); err != nil {
			// A damaged cache: start from nothing (the server has it all).
			return map[usage.Key]usage.Entry{}, 0, nil
		}
		view[e.Key] = e.Entry
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return view, version, nil
}

// saveView writes what changed in the view (everything when full).
func (l *local) saveView(ctx context.Context, full bool, changed []usage.Entry, removed []usage.Key, version int64) error {
	return l.inTx(ctx, func(tx *sql.Tx) error {
		if full {
			if _, err := tx.ExecContext(ctx, `DELETE FROM view`); err != nil {
				return err
			}
		}
		for _, k := range removed {
			if _, err := tx.ExecContext(ctx, `DELETE FROM view WHERE hash = ?`, keyHash(k)); err != nil {
				return err
			}
		}
		for _, e := range changed {
			b, err := json.Marshal(storedEntry{e})
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO view (hash, entry) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET entry = excluded.entry`,
				keyHash(e.Key), b); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, version)
		return err
	})
}

// spool keeps preps to send later, all or none; an ID spooled before is
// kept once. It fails when the spool holds max events.
func (l *local) spool(ctx context.Context, preps []usage.Prepared, now time.Time, max int) error {
	return l.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM spool`).Scan(&n); err != nil {
			return err
		}
		if n+len(preps) > max {
			return fmt.Errorf("the local spool of unsent calls is full (%d; %s): these calls are not recorded", n, l.path)
		}
		for _, p := range preps {
			b, err := json.Marshal(p.Event)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO spool (id, at, event) VALUES (?, ?, ?)`, p.ID, now.UnixNano(), b); err != nil {
				return err
			}
		}
		return nil
	})
}

// spooled are up to n of the spooled events, the oldest first.
func (l *local) spooled(ctx context.Context, n int) ([]usage.Event, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT event FROM spool ORDER BY seq LIMIT ?`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []usage.Event
	for rows.Next() {
		var b []byte
		var ev usage.Event
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("a spooled call does not decode: %w", err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// unspool removes the events of ids from the spool (sent).
func (l *local) unspool(ctx context.Context, ids []string) error {
	return l.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM spool WHERE id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// pending is how many events the spool holds, and since when.
func (l *local) pending(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var since sql.NullInt64
	if err := l.db.QueryRowContext(ctx, `SELECT count(*), min(at) FROM spool`).Scan(&n, &since); err != nil {
		return 0, time.Time{}, fmt.Errorf("usage store: the local spool %s: %w", l.path, err)
	}
	var t time.Time
	if since.Valid {
		t = time.Unix(0, since.Int64)
	}
	return n, t, nil
}

// forget removes what f matches from the spool and rewrites the view as
// view, then rewrites the file so nothing forgotten is left in it.
func (l *local) forget(ctx context.Context, f usage.Filter, view map[usage.Key]usage.Entry, version int64) error {
	evs, err := l.spooled(ctx, maxSpool)
	if err != nil {
		return err
	}
	var drop []string
	for _, ev := range evs {
		k := usage.Key{Request: usage.Normalize(ev.Request), Tool: ev.Tool, Agent: ev.Agent}
		if matches(f, k, ev.Time) {
			drop = append(drop, ev.ID)
		}
	}
	if err := l.unspool(ctx, drop); err != nil {
		return err
	}
	entries := make([]usage.Entry, 0, len(view))
	for _, e := range view {
		entries = append(entries, e)
	}
	if err := l.saveView(ctx, true, entries, nil, version); err != nil {
		return err
	}
	if _, err := l.db.ExecContext(ctx, `VACUUM`); err != nil {
		return err
	}
	_, err = l.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// inTx runs fn in a write transaction of the local file, again while
// another process holds its lock (sqlitefile.InTx).
func (l *local) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return sqlitefile.InTx(ctx, l.db, nil, fn)
}
