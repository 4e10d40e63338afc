package usage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The derived tag and version name the history: the same until it
// changes, another after a Record, a Forget, or a new file at the path; a
// new file removes what was derived from the old one.
func TestDerivedTag(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "usage.db")
	s := open(t, path, Options{})
	d := s.(Derived)
	if tag, _, err := d.DerivedTag(ctx); err != nil || tag != "" {
		t.Fatalf("no store yet: tag %q, %v", tag, err)
	}
	seen := map[string]string{}
	tagged := func(step string) string {
		t.Helper()
		tag, v, err := d.DerivedTag(ctx)
		if err != nil || tag == "" {
			t.Fatalf("%s: tag %q, %v", step, tag, err)
		}
		if cur, _ := s.Version(ctx); cur != v {
			t.Errorf("%s: tag's version %d, store's %d", step, v, cur)
		}
		if again, v2, _ := d.DerivedTag(ctx); again != tag || v2 != v {
			t.Errorf("%s: %q %d, then %q %d with no change", step, tag, v, again, v2)
		}
		named := fmt.Sprint(tag, " ", v)
		if prev, ok := seen[named]; ok {
			t.Errorf("%s: %s as after %s", step, named, prev)
		}
		seen[named] = step
		return named
	}
	record(t, s, Event{Request: "show git status", Tool: "git", OK: true})
	tagged("record")
	record(t, s, Event{Request: "list files", Tool: "ls", OK: true})
	tagged("another record")
	if _, err := s.Forget(ctx, Filter{Tool: "ls"}); err != nil {
		t.Fatal(err)
	}
	tagged("forget")

	// Removed by hand, and made again: a new file, which is not what the
	// derived file was made from.
	if err := os.WriteFile(d.DerivedPath(), []byte("show git status"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Remove(p)
	}
	record(t, s, Event{Request: "show git status", Tool: "git", OK: true})
	// (The new file may get the old one's inode and version: what was
	// derived from the old one is gone, so nothing can match it.)
	if tag, _, err := d.DerivedTag(ctx); err != nil || tag == "" {
		t.Errorf("new file: tag %q, %v", tag, err)
	}
	if _, err := os.Stat(d.DerivedPath()); !os.IsNotExist(err) {
		t.Errorf("a new store kept the old store's derived file: %v", err)
	}
}
