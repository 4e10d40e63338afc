package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// schemaVersion is the layout below; a store of a later one is refused
// (a newer toolsrv wrote it), never changed, and one of an earlier one is
// migrated (migrate).
const schemaVersion = 2

// schema is the embedded store's layout.
//
//   - meta: the layout's version, the change counter (version), the
//     oldest version Changes can answer from (horizon), the number of
//     entries (for the total cap without counting rows).
//   - entries: one row per key; rec is the whole entry (see encodeEntry),
//     hash is a hash of its key, and tool, agent, principal, last (Unix
//     ns) and version are copies of its fields for the queries that select
//     by them: the caps (by tool and agent, by last use), Changes (by
//     version), Forget.
//   - removed: keys removed by eviction or expiry, with the version that
//     removed them, for Changes; the oldest are dropped beyond
//     maxTombstones (raising the horizon), and Forget drops them all.
//   - seen: the IDs of recorded events, in the order recorded, to skip a
//     repeat.
//   - sources: events recorded per source.
var schema = []string{
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE entries (
		id INTEGER PRIMARY KEY,
		hash BLOB NOT NULL UNIQUE,
		tool TEXT NOT NULL,
		agent TEXT NOT NULL,
		last INTEGER NOT NULL,
		version INTEGER NOT NULL,
		rec BLOB NOT NULL,
		principal TEXT NOT NULL DEFAULT '')`,
	`CREATE INDEX entries_tool ON entries (tool, agent, last)`,
	`CREATE INDEX entries_principal ON entries (principal)`,
	`CREATE INDEX entries_last ON entries (last)`,
	`CREATE INDEX entries_version ON entries (version)`,
	`CREATE TABLE removed (
		seq INTEGER PRIMARY KEY,
		version INTEGER NOT NULL,
		hash BLOB NOT NULL,
		norm TEXT NOT NULL,
		tool TEXT NOT NULL,
		agent TEXT NOT NULL,
		principal TEXT NOT NULL DEFAULT '')`,
	`CREATE INDEX removed_version ON removed (version)`,
	`CREATE TABLE seen (id TEXT NOT NULL UNIQUE, at INTEGER NOT NULL)`,
	`CREATE TABLE sources (source TEXT PRIMARY KEY, events INTEGER NOT NULL) WITHOUT ROWID`,
}

// maxTombstones is how many removed keys the store remembers for Changes.
const maxTombstones = 10_000

// errNewerSchema is a store written by a later toolsrv.
var errNewerSchema = errors.New("the usage store was written by a newer toolsrv")

// ensureSchema lays out a new store (an empty file) and checks an existing
// one's layout version. base is a new store's first version.
func ensureSchema(ctx context.Context, db *sql.DB, base int64) error {
	v, err := layoutVersion(ctx, db)
	if err != nil || v == schemaVersion {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("%w (layout %d; this one knows %d): use that toolsrv, or another --usage-db", errNewerSchema, v, schemaVersion)
	}
	if v > 0 {
		return migrate(ctx, db)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Another process may have laid it out since.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'meta'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return tx.Rollback()
	}
	for _, s := range schema {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("laying out the usage store: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('schema', ?), ('version', ?), ('horizon', ?), ('entries', 0)`,
		schemaVersion, base, base); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate brings a store of an earlier layout to schemaVersion, in one
// transaction (BEGIN IMMEDIATE: another process migrating waits, then
// finds it done).
//
// 1 → 2, principals: every entry gets the principal Legacy(its agent)
// (see Legacy for why not the owner's), its record rewritten in the new
// format and its key's hash computed anew (the hash covers the
// principal). The removed keys are dropped and the horizon raised: a
// reader of the old layout takes the history whole again (ErrResnapshot);
// a view derived from the old layout is of another format, which its
// reader does not take.
func migrate(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	var v int64
	if err := conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		done = true
		_, err := conn.ExecContext(ctx, `COMMIT`)
		return err
	}
	if v != 1 {
		return fmt.Errorf("the usage store has layout %d, which no toolsrv wrote: %w", v, errDamaged)
	}
	for _, stmt := range []string{
		`ALTER TABLE entries ADD COLUMN principal TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE removed ADD COLUMN principal TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX entries_principal ON entries (principal)`,
		`DELETE FROM removed`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrating the usage store to layout %d: %w", schemaVersion, err)
		}
	}
	type row struct {
		id  int64
		rec []byte
	}
	var rows []row
	rs, err := conn.QueryContext(ctx, `SELECT id, rec FROM entries`)
	if err != nil {
		return err
	}
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.id, &r.rec); err != nil {
			rs.Close()
			return err
		}
		rows = append(rows, r)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	var buf []byte
	for _, r := range rows {
		var e Entry
		failed, err := decodeEntry(r.rec, &e, nil)
		if err != nil {
			return err
		}
		e.Key.Principal = Legacy(e.Key.Agent)
		buf = encodeEntry(buf[:0], &e, failed)
		if _, err := conn.ExecContext(ctx, `UPDATE entries SET hash = ?, principal = ?, rec = ? WHERE id = ?`,
			e.Key.Hash(), e.Key.Principal, buf, r.id); err != nil {
			return fmt.Errorf("migrating the usage store to layout %d: %w", schemaVersion, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `UPDATE meta SET value = value + 1 WHERE key = 'version'`); err != nil {
		return err
	}
	for _, stmt := range []string{
		`UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'version') WHERE key = 'horizon'`,
		`UPDATE meta SET value = 2 WHERE key = 'schema'`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	done = true
	_, err = conn.ExecContext(ctx, `COMMIT`)
	return err
}

// layoutVersion is the store's layout version, 0 for an empty file.
func layoutVersion(ctx context.Context, db *sql.DB) (int64, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'meta'`).Scan(&n); err != nil || n == 0 {
		return 0, err
	}
	var v int64
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("the usage store has no layout version: %w", errDamaged)
	}
	return v, err
}

// metaValue reads a counter of meta.
func metaValue(ctx context.Context, q querier, key string) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	return v, err
}

// setMeta writes a counter of meta.
func setMeta(ctx context.Context, tx *sql.Tx, key string, v int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = ?`, v, key)
	return err
}

// addMeta adds d to a counter of meta.
func addMeta(ctx context.Context, tx *sql.Tx, key string, d int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE meta SET value = value + ? WHERE key = ?`, d, key)
	return err
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
