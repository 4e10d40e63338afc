package usage

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsrv/toolsrv/internal/sqlitefile"
)

// A store of layout 1 (testdata/layout1.db, written by the toolsrv before
// principals: four events of three agents) is migrated when opened: every
// entry kept with its calls, its principal Legacy(its agent); a reader of
// the old layout's versions is told to take the history whole again; new
// events of the same request by another principal are entries of their
// own; forgetting by principal works on the migrated entries.
func TestMigrateLayout1(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/layout1.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "usage.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	oldVersion := layoutMeta(t, path, "version")
	s := open(t, path, Options{Retention: -1})
	got := snapshot(t, s)
	want := map[Key]struct{ count, failed int64 }{
		{"show git status", "git_status", "claude", "legacy:claude"}:       {3, 0},
		{"what changed in my repo", "git_diff", "claude", "legacy:claude"}: {1, 1},
		{"show git status", "git_status", "", "legacy:"}:                   {1, 0},
		{"tell me a joke", "", "coder", "legacy:coder"}:                    {1, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("after the migration: %d entries, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		e, ok := got[k]
		if !ok || e.Count != w.count || e.Failed != w.failed {
			t.Errorf("entry %+v: %+v (present %v), want %d calls, %d failed", k, e, ok, w.count, w.failed)
		}
	}
	if _, _, _, err := s.Changes(ctx, oldVersion); !errors.Is(err, ErrResnapshot) {
		t.Errorf("Changes after the old layout's version: %v, want ErrResnapshot", err)
	}
	if v := layoutMeta(t, path, "schema"); v != schemaVersion {
		t.Errorf("layout %d after opening, want %d", v, schemaVersion)
	}
	// An event of a migrated entry's request, tool and agent by the owner
	// is the owner's entry, not the legacy one's.
	record(t, s, Event{Request: "show git status", Tool: "git_status", Agent: "claude", Principal: Owner, OK: true})
	got = snapshot(t, s)
	if got[Key{"show git status", "git_status", "claude", Owner}].Count != 1 || got[Key{"show git status", "git_status", "claude", "legacy:claude"}].Count != 3 {
		t.Fatalf("the owner's event merged into a legacy entry: %v", got)
	}
	n, err := s.Forget(ctx, Filter{Principal: "legacy:claude"})
	if err != nil || n != 2 {
		t.Fatalf("Forget legacy:claude: %d, %v; want 2", n, err)
	}
	if got = snapshot(t, s); len(got) != 3 {
		t.Fatalf("after forgetting legacy:claude: %v", got)
	}
	s.Close()
	// Opened again: nothing to migrate, the same entries.
	s = open(t, path, Options{Retention: -1})
	if got2 := snapshot(t, s); len(got2) != 3 {
		t.Fatalf("reopened: %v", got2)
	}
}

// layoutMeta reads a counter of a store's meta table directly.
func layoutMeta(t *testing.T, path, key string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", sqlitefile.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int64
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
