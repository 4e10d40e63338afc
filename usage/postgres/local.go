package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsrv/toolsrv/internal/sqlitefile"
	"github.com/toolsrv/toolsrv/usage"
)

// local is what a shared store keeps on this host, in one SQLite file
// (mode 0600, in a private directory; sqlitefile.File opens it, and sets
// it aside only when damaged): the view (the namespace's entries as last
// read from the server, and their version), so that ranking goes on from
// it when the server is down, across restarts too; and the spool, the
// events recorded while the server was down, until they are sent.
//
// The file is opened at each call that needs it: one that could not be
// opened or written (a full disk, an I/O error) is tried again at the
// next call, and what it could not take is the caller's to keep.
type local struct {
	file *sqlitefile.File
	path string
}

// localSchema is the local file's layout.
var localSchema = []string{
	`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS view (hash BLOB PRIMARY KEY, entry BLOB NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, at INTEGER NOT NULL, event BLOB NOT NULL)`,
}

// newLocal is the local file at path (nothing is opened yet). Warnings
// of later calls (a damaged file set aside) go to logger.
func newLocal(path string, now func() time.Time, logger *slog.Logger) *local {
	return &local{path: path, file: sqlitefile.New(path, sqlitefile.Options{
		Name: "the local copy of the shared usage history",
		// FULL: a commit here may be the only copy of an event (the
		// spool), so it is synced to the disk before Record returns.
		Pragmas: []string{"journal_mode(WAL)", "synchronous(FULL)", "secure_delete(ON)", "temp_store(MEMORY)"},
		Layout: func(ctx context.Context, db *sql.DB) error {
			for _, stmt := range localSchema {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			return nil
		},
		Now:    now,
		Logger: logger,
	})}
}

// open opens (making) the file now; warn gets what the user should be
// told (a directory made private, a damaged file set aside).
func (l *local) open(ctx context.Context, warn func(string)) error {
	_, err := l.file.Handle(ctx, true, warn)
	return err
}

func (l *local) Close() error { return l.file.Close() }

// storedEntry is an entry as the view keeps it.
type storedEntry struct {
	usage.Entry
}

// loadView reads the view and its version (none: empty, 0).
func (l *local) loadView(ctx context.Context) (view map[usage.Key]usage.Entry, version int64, err error) {
	err = l.file.Read(ctx, "read", func(tx *sql.Tx) error {
		view, version = map[usage.Key]usage.Entry{}, 0 // a second try starts afresh
		if tx == nil {
			return nil
		}
		err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'version'`).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT entry FROM view`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b []byte
			var e storedEntry
			if err := rows.Scan(&b); err != nil {
				return err
			}
			if err := json.Unmarshal(b, &e); err != nil {
				// A damaged cache: start from nothing (the server has it all).
				view, version = map[usage.Key]usage.Entry{}, 0
				return nil
			}
			wordingOfKey(&e.Entry) // a copy saved before the server's rows were checked
			view[e.Key] = e.Entry
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return view, version, nil
}

// saveView writes what changed in the view (everything when full).
func (l *local) saveView(ctx context.Context, full bool, changed []usage.Entry, removed []usage.Key, version int64) error {
	return l.file.Write(ctx, "save", true, func(tx *sql.Tx) error {
		if full {
			if _, err := tx.ExecContext(ctx, `DELETE FROM view`); err != nil {
				return err
			}
		}
		for _, k := range removed {
			if _, err := tx.ExecContext(ctx, `DELETE FROM view WHERE hash = ?`, k.Hash()); err != nil {
				return err
			}
		}
		for _, e := range changed {
			b, err := json.Marshal(storedEntry{e})
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO view (hash, entry) VALUES (?, ?) ON CONFLICT (hash) DO UPDATE SET entry = excluded.entry`,
				e.Key.Hash(), b); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, version)
		return err
	})
}

// errSpoolFull is spool's error when the spool holds its most events.
var errSpoolFull = errors.New("the local spool of unsent calls is full")

// spool keeps preps (spooled at their at) to send later, all or none; an
// ID spooled before is kept once. It fails (errSpoolFull) when the spool
// would hold more than max events.
func (l *local) spool(ctx context.Context, preps []pending, max int) error {
	return l.file.Write(ctx, "spool", true, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM spool`).Scan(&n); err != nil {
			return err
		}
		if n+len(preps) > max {
			return fmt.Errorf("%w (%d; %s): these calls are not recorded", errSpoolFull, n, l.path)
		}
		for _, p := range preps {
			b, err := json.Marshal(p.Event)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO spool (id, at, event) VALUES (?, ?, ?)`, p.ID, p.at.UnixNano(), b); err != nil {
				return err
			}
		}
		return nil
	})
}

// pending is an event waiting to be sent, and when it began to wait.
type pending struct {
	usage.Prepared
	at time.Time
}

// spooled are up to n of the spooled events, the oldest first.
func (l *local) spooled(ctx context.Context, n int) ([]usage.Event, error) {
	var out []usage.Event
	err := l.file.Read(ctx, "read the spool", func(tx *sql.Tx) error {
		out = nil // a second try starts afresh
		if tx == nil {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT event FROM spool ORDER BY seq LIMIT ?`, n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b []byte
			var ev usage.Event
			if err := rows.Scan(&b); err != nil {
				return err
			}
			if err := json.Unmarshal(b, &ev); err != nil {
				return fmt.Errorf("a spooled call does not decode: %w", err)
			}
			out = append(out, ev)
		}
		return rows.Err()
	})
	return out, err
}

// unspool removes the events of ids from the spool (sent).
func (l *local) unspool(ctx context.Context, ids []string) error {
	return l.file.Write(ctx, "unspool", true, func(tx *sql.Tx) error {
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
	var (
		n int64
		t time.Time
	)
	err := l.file.Read(ctx, "read the spool", func(tx *sql.Tx) error {
		n, t = 0, time.Time{}
		if tx == nil {
			return nil
		}
		var since sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT count(*), min(at) FROM spool`).Scan(&n, &since); err != nil {
			return err
		}
		if since.Valid {
			t = time.Unix(0, since.Int64)
		}
		return nil
	})
	return n, t, err
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
		k := usage.Key{Request: usage.Normalize(ev.Request), Tool: ev.Tool, Agent: ev.Agent, Principal: ev.Principal}
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
	return l.file.Exclusive(ctx, func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		return err
	})
}
