package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolsrv/toolsrv/usage"
)

// schemaVersion is the newest layout this toolsrv knows: migrations[i]
// brings a database from layout i to i+1. A database at a later layout
// was laid out by a newer toolsrv: it is refused, never changed.
const schemaVersion = 2

// migrations lay out the tables, one step per layout version. Every table
// holds a namespace column, and row-level security ties it to the role
// (see doc.go): the role owning the tables (the one that laid them out)
// is not bound by the policies, a role granted access to them is.
var migrations = [][]string{
	// 1: the first layout.
	append([]string{
		`CREATE TABLE toolsrv_usage_ns (
			namespace text PRIMARY KEY,
			version bigint NOT NULL,
			horizon bigint NOT NULL,
			entries bigint NOT NULL DEFAULT 0,
			pruned bigint NOT NULL DEFAULT 0)`,
		`CREATE TABLE toolsrv_usage_entries (
			namespace text NOT NULL,
			hash bytea NOT NULL,
			norm text NOT NULL,
			text text NOT NULL,
			tool text NOT NULL,
			agent text NOT NULL,
			count bigint NOT NULL,
			failed bigint NOT NULL,
			first bigint NOT NULL,
			last bigint NOT NULL,
			offered text[] NOT NULL,
			version bigint NOT NULL,
			id bigserial NOT NULL,
			PRIMARY KEY (namespace, hash))`,
		`CREATE INDEX toolsrv_usage_entries_version ON toolsrv_usage_entries (namespace, version)`,
		`CREATE INDEX toolsrv_usage_entries_tool ON toolsrv_usage_entries (namespace, tool, agent, last)`,
		`CREATE INDEX toolsrv_usage_entries_last ON toolsrv_usage_entries (namespace, last)`,
		`CREATE TABLE toolsrv_usage_removed (
			seq bigserial PRIMARY KEY,
			namespace text NOT NULL,
			version bigint NOT NULL,
			hash bytea NOT NULL,
			norm text NOT NULL,
			tool text NOT NULL,
			agent text NOT NULL)`,
		`CREATE INDEX toolsrv_usage_removed_version ON toolsrv_usage_removed (namespace, version)`,
		`CREATE TABLE toolsrv_usage_events (
			namespace text NOT NULL,
			id text NOT NULL,
			at bigint NOT NULL,
			seq bigserial NOT NULL,
			PRIMARY KEY (namespace, id))`,
		`CREATE INDEX toolsrv_usage_events_seq ON toolsrv_usage_events (namespace, seq)`,
		`CREATE TABLE toolsrv_usage_sources (
			namespace text NOT NULL,
			source text NOT NULL,
			events bigint NOT NULL,
			PRIMARY KEY (namespace, source))`,
	}, rls("toolsrv_usage_ns", "toolsrv_usage_entries", "toolsrv_usage_removed", "toolsrv_usage_events", "toolsrv_usage_sources")...),
	// 2: principals (who recorded an entry, principal.go) and the seal of
	// an instance's own entries. Existing entries get the principal
	// legacy:AGENT (usage.Legacy says why) and their key's hash anew
	// (rehash); removed keys are dropped and every namespace's horizon
	// raised, so that readers take their history whole again.
	{
		`ALTER TABLE toolsrv_usage_entries ADD COLUMN principal text NOT NULL DEFAULT '', ADD COLUMN seal text NOT NULL DEFAULT ''`,
		`ALTER TABLE toolsrv_usage_removed ADD COLUMN principal text NOT NULL DEFAULT '', ADD COLUMN seal text NOT NULL DEFAULT ''`,
		`UPDATE toolsrv_usage_entries SET principal = 'legacy:' || agent`,
		`DELETE FROM toolsrv_usage_removed`,
		`UPDATE toolsrv_usage_ns SET version = version + 1, horizon = version + 1`,
	},
}

// migrationCode are the steps of a migration that SQL alone cannot take,
// by the layout they bring a database to, run after its statements.
var migrationCode = map[int]func(ctx context.Context, tx pgx.Tx) error{
	2: rehash,
}

// rehash gives every entry the hash of its key (usage.Key.Hash: the
// principal is part of it). It runs as the role owning the tables (only
// it may alter them), which row-level security does not bind: every
// namespace's entries.
func rehash(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT namespace, hash, norm, tool, agent, principal FROM toolsrv_usage_entries`)
	if err != nil {
		return err
	}
	type row struct {
		ns   string
		hash []byte
		k    usage.Key
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.ns, &r.hash, &r.k.Request, &r.k.Tool, &r.k.Agent, &r.k.Principal); err != nil {
			rows.Close()
			return err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var b pgx.Batch
	for _, r := range all {
		b.Queue(`UPDATE toolsrv_usage_entries SET hash = $3 WHERE namespace = $1 AND hash = $2`, r.ns, r.hash, r.k.Hash())
	}
	return tx.SendBatch(ctx, &b).Close()
}

// Tables are the tables toolsrv lays out (for the grants of doc.go and
// the docs).
var Tables = []string{"toolsrv_usage_schema", "toolsrv_usage_ns", "toolsrv_usage_entries",
	"toolsrv_usage_removed", "toolsrv_usage_events", "toolsrv_usage_sources"}

// rls turns on row-level security for tables: a role that does not own
// them sees, adds, changes and deletes the rows of the namespace of its
// own name only.
func rls(tables ...string) []string {
	var out []string
	for _, t := range tables {
		out = append(out, `ALTER TABLE `+t+` ENABLE ROW LEVEL SECURITY`,
			`CREATE POLICY toolsrv_namespace ON `+t+`
			USING (namespace = current_user) WITH CHECK (namespace = current_user)`)
	}
	return out
}

// schemaLock is the advisory lock migrations hold, so that instances
// starting at once lay the tables out once.
const schemaLock = 0x746f6f6c737276 // "toolsrv"

// ErrNewerSchema is a database laid out by a newer toolsrv.
var ErrNewerSchema = errors.New("the PostgreSQL usage tables were laid out by a newer toolsrv")

// schemaError is an error of the layout: not the server being down.
type schemaError struct{ err error }

func (e schemaError) Error() string { return e.err.Error() }
func (e schemaError) Unwrap() error { return e.err }

// ensureSchema lays out the tables, or migrates them to schemaVersion, or
// checks that they are at it. It fails with ErrNewerSchema for a later
// layout and says what to do when this role may not create tables.
func ensureSchema(ctx context.Context, conn interface {
	Begin(context.Context) (pgx.Tx, error)
}, user string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	v, err := layoutVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v == schemaVersion {
		return tx.Commit(ctx)
	}
	if v > schemaVersion {
		return schemaError{fmt.Errorf("%w (layout %d; this toolsrv knows up to %d): upgrade toolsrv on this host, or point --usage-db at another database", ErrNewerSchema, v, schemaVersion)}
	}
	// Another instance may be laying them out: wait for it, then look again.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLock)); err != nil {
		return err
	}
	if v, err = layoutVersion(ctx, tx); err != nil || v == schemaVersion {
		if err == nil {
			err = tx.Commit(ctx)
		}
		return err
	}
	if v > schemaVersion {
		return schemaError{fmt.Errorf("%w (layout %d; this toolsrv knows up to %d)", ErrNewerSchema, v, schemaVersion)}
	}
	if v == 0 {
		if _, err := tx.Exec(ctx, `CREATE TABLE toolsrv_usage_schema (version integer NOT NULL)`); err != nil {
			return migrateError(err, user)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO toolsrv_usage_schema (version) VALUES (0)`); err != nil {
			return err
		}
	}
	for ; v < schemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return migrateError(err, user)
			}
		}
		if code := migrationCode[v+1]; code != nil {
			if err := code(ctx, tx); err != nil {
				return migrateError(err, user)
			}
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE toolsrv_usage_schema SET version = $1`, schemaVersion); err != nil {
		return migrateError(err, user)
	}
	return tx.Commit(ctx)
}

// layoutVersion is the tables' layout version, 0 when there are none.
func layoutVersion(ctx context.Context, tx pgx.Tx) (int, error) {
	var exists bool
	// pg_class read in the statement's snapshot (not the session's
	// catalog cache, which may not show a table another session just
	// made).
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relname = 'toolsrv_usage_schema' AND n.nspname = current_schema())`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := tx.QueryRow(ctx, `SELECT version FROM toolsrv_usage_schema`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, schemaError{errors.New("the PostgreSQL usage tables have no layout version (toolsrv_usage_schema is empty): restore it or drop the toolsrv_usage_* tables")}
	}
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return 0, schemaError{fmt.Errorf("this role may not read the usage tables' layout (toolsrv_usage_schema): grant it the usage tables, see docs/postgres.md: %w", err)}
		}
	}
	return v, err
}

// migrateError explains a failed migration; a role that may not create
// tables is told who should.
func migrateError(err error, user string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return schemaError{fmt.Errorf("the PostgreSQL usage tables are missing or older than this toolsrv, and role %s may not lay them out (%s): run any toolsrv usage command once as the role that should own them (see docs/postgres.md)", user, pe.Message)}
	}
	return schemaError{fmt.Errorf("laying out the PostgreSQL usage tables: %w", err)}
}
