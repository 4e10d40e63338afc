package registry

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The known-schemas file and the catalog snapshot are 0600 in a directory
// made 0700 (with a word in the log) when others could enter it, and the
// temporary file a killed writer left there is removed.
func TestCachesArePrivate(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "limited", `{"description":"limited","cmd":"/bin/sh","args":{"type":"object","properties":{"n":{"type":"integer"}}}}`, false)
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(cache, ".catalog.snap.8675309.tmp")
	if err := os.WriteFile(stale, []byte("half a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	r := New(Options{Dirs: []string{dir}, SchemaCache: filepath.Join(cache, "schemas.known"), CatalogCache: filepath.Join(cache, "catalog.snap"),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	// The tool file counts as old enough for the snapshot (its racy rule).
	r.now = func() time.Time { return time.Now().Add(time.Minute) }
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"schemas.known", "catalog.snap"} {
		fi, err := os.Stat(filepath.Join(cache, name))
		for deadline := time.Now().Add(safetyNet); err != nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			fi, err = os.Stat(filepath.Join(cache, name))
		}
		if err != nil {
			t.Fatalf("%s was never written: %v", name, err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", name, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(cache); fi.Mode().Perm() != 0o700 {
		t.Errorf("the cache directory is %v, want 0700", fi.Mode().Perm())
	}
	if n := strings.Count(log.String(), "private"); n != 1 {
		t.Errorf("said %d times that it made the directory private, want once:\n%s", n, log.String())
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed writer's temporary file is still there (%v)", err)
	}
}

// A cache directory of another user holds neither file, and the log says
// why.
func TestCachesOfAnotherUser(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "plain", `{"description":"plain","cmd":"/bin/sh"}`, false)
	foreign := filepath.Join(t.TempDir(), "cache")
	if os.Geteuid() == 0 {
		if err := os.Mkdir(foreign, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	} else {
		foreign = "/" // root's, and not ours
	}
	var log bytes.Buffer
	r := New(Options{Dirs: []string{dir}, SchemaCache: filepath.Join(foreign, "schemas.known"), CatalogCache: filepath.Join(foreign, "catalog.snap"),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // what a save in the background would take
	for _, name := range []string{"schemas.known", "catalog.snap"} {
		if _, err := os.Stat(filepath.Join(foreign, name)); err == nil {
			t.Errorf("wrote %s in another user's directory", name)
		}
	}
	if n := strings.Count(log.String(), "refused"); n != 1 || !strings.Contains(log.String(), "belongs to uid") {
		t.Errorf("said %d times that the directory is refused, want once:\n%s", n, log.String())
	}
}
