package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolsrv/toolsrv/usage"
)

// grantTeam makes role (with password pw) a team's: it may use the usage
// tables, bound by their row-level security to the namespace of its name
// (the SQL of docs/postgres.md).
func grantTeam(role, pw string) []string {
	return []string{
		`CREATE ROLE ` + role + ` LOGIN PASSWORD '` + pw + `'`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ` + strings.Join(Tables[1:], ", ") + ` TO ` + role,
		`GRANT SELECT ON toolsrv_usage_schema TO ` + role,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	}
}

// With one role per namespace, a team's role can neither read, add,
// change nor delete another's rows, nor open another's namespace.
func TestNamespacesAreIsolated(t *testing.T) {
	pg, admin := server(t)
	ctx := context.Background()
	open(t, admin, usage.Options{Namespace: "setup"}).Close() // lays the tables out, owned by the superuser's role
	pg.SQL(t, append(grantTeam("team_a", "pw-a"), grantTeam("team_b", "pw-b")...)...)
	urlA, urlB := pg.URL("team_a", "pw-a", "postgres"), pg.URL("team_b", "pw-b", "postgres")
	a := open(t, urlA, usage.Options{})
	b := open(t, urlB, usage.Options{})
	t0 := time.Now().Add(-time.Hour)
	if err := a.Record(ctx, events(30, t0, "a")...); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(ctx, events(30, t0, "b")...); err != nil {
		t.Fatal(err)
	}
	bBefore, _, err := b.Snapshot(ctx)
	if err != nil || len(bBefore) == 0 {
		t.Fatalf("B's entries: %d %v", len(bBefore), err)
	}
	for _, e := range bBefore {
		if !strings.HasPrefix(e.Key.Request, "b ") {
			t.Fatalf("B sees %q", e.Key.Request)
		}
	}

	// A's role opening B's namespace is refused.
	if _, _, err := usage.Open(ctx, urlA, usage.Options{Namespace: "team_b", LocalDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("team_a opening namespace team_b: %v", err)
	}

	// A's role, by hand (a leaked password), at every table.
	conn, err := pgx.Connect(ctx, urlA)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tbl := range Tables[1:] {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+tbl+` WHERE namespace <> 'team_a'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("team_a selects %d rows of others from %s (%v)", n, tbl, err)
		}
		tag, err := conn.Exec(ctx, `DELETE FROM `+tbl+` WHERE namespace = 'team_b'`)
		if err != nil || tag.RowsAffected() != 0 {
			t.Errorf("team_a deletes %d rows of team_b from %s (%v)", tag.RowsAffected(), tbl, err)
		}
		tag, err = conn.Exec(ctx, `UPDATE `+tbl+` SET namespace = 'team_a' WHERE namespace = 'team_b'`)
		if err != nil || tag.RowsAffected() != 0 {
			t.Errorf("team_a updates %d rows of team_b in %s (%v)", tag.RowsAffected(), tbl, err)
		}
	}
	inserts := map[string]string{
		"toolsrv_usage_ns":      `INSERT INTO toolsrv_usage_ns (namespace, version, horizon) VALUES ('team_c', 1, 1)`,
		"toolsrv_usage_entries": `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, count, failed, first, last, offered, version) VALUES ('team_b', '\x00', 'x', 'x', 't', 'a', 1, 0, 0, 0, '{}', 1)`,
		"toolsrv_usage_removed": `INSERT INTO toolsrv_usage_removed (namespace, version, hash, norm, tool, agent) VALUES ('team_b', 1, '\x00', 'x', 't', 'a')`,
		"toolsrv_usage_events":  `INSERT INTO toolsrv_usage_events (namespace, id, at) VALUES ('team_b', 'x', 0)`,
		"toolsrv_usage_sources": `INSERT INTO toolsrv_usage_sources (namespace, source, events) VALUES ('team_b', 'mcp', 1)`,
	}
	for tbl, ins := range inserts {
		_, err := conn.Exec(ctx, ins)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("team_a inserting into %s for another namespace: %v, want a row-level security violation", tbl, err)
		}
	}
	// Nor may it change the tables or their policies.
	for _, ddl := range []string{`ALTER TABLE toolsrv_usage_entries DISABLE ROW LEVEL SECURITY`, `DROP POLICY toolsrv_namespace ON toolsrv_usage_entries`} {
		if _, err := conn.Exec(ctx, ddl); err == nil {
			t.Errorf("team_a may %s", ddl)
		}
	}

	bAfter, _, err := b.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := same(bAfter, bBefore); d != "" {
		t.Errorf("B's entries changed: %s", d)
	}
	// B's forget leaves A's entries.
	if _, err := b.Forget(ctx, usage.Filter{All: true}); err != nil {
		t.Fatal(err)
	}
	if es, _, err := a.Snapshot(ctx); err != nil || len(es) == 0 {
		t.Errorf("A after B forgot all: %d entries, %v", len(es), err)
	}
}

// Tables laid out by a newer toolsrv are refused with an error that says
// so, and left as they are.
func TestNewerSchemaRefused(t *testing.T) {
	pg, dsn := server(t)
	open(t, dsn, usage.Options{}).Close()
	pg.SQL(t, `UPDATE toolsrv_usage_schema SET version = 99`)
	_, _, err := usage.Open(context.Background(), dsn, usage.Options{LocalDir: t.TempDir()})
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "layout 99") || !strings.Contains(err.Error(), "upgrade toolsrv") {
		t.Fatalf("Open of a newer layout: %v", err)
	}
	if strings.Contains(err.Error(), "toolsrv-test") {
		t.Errorf("the error tells the password: %v", err)
	}
	if got := strings.TrimSpace(pg.SQL(t, `SELECT version FROM toolsrv_usage_schema`)); got != "99" {
		t.Errorf("layout version changed to %s", got)
	}
}

// A team's role that may not create tables is told who should lay them
// out.
func TestLayoutNeedsTheOwner(t *testing.T) {
	pg, _ := server(t)
	pg.SQL(t, `CREATE ROLE team_a LOGIN PASSWORD 'pw-a'`, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	_, _, err := usage.Open(context.Background(), pg.URL("team_a", "pw-a", "postgres"), usage.Options{LocalDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "may not lay them out") {
		t.Fatalf("Open by a role without CREATE: %v", err)
	}
}
