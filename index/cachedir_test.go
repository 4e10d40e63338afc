package index

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The index's files are readable by this user only: 0600 in a directory
// that is created 0700, or made 0700 (saying so) when others could enter
// it.
func TestCacheIsPrivate(t *testing.T) {
	ctx := context.Background()
	reg := loadReg(t, copyTools(t))
	for _, tc := range []struct {
		name   string
		mode   os.FileMode // 0: missing
		logged bool
	}{
		{"missing", 0, false},
		{"readable by others", 0o755, true},
		{"writable by the group", 0o775, true},
		{"private", 0o700, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			if tc.mode != 0 {
				if err := os.Mkdir(cache, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(cache, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err := ix.Sync(ctx, reg.Catalog()); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(cache)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("the cache directory is %v, want 0700", fi.Mode().Perm())
			}
			if got := strings.Contains(log.String(), "private"); got != tc.logged {
				t.Errorf("logged that it was made private: %v, want %v\n%s", got, tc.logged, log.String())
			}
			files, _ := filepath.Glob(filepath.Join(cache, "*"))
			var kinds []string
			for _, f := range files {
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, filepath.Ext(f))
				if fi.Mode().Perm() != 0o600 {
					t.Errorf("%s is %v, want 0600", filepath.Base(f), fi.Mode().Perm())
				}
			}
			if strings.Join(kinds, " ") != ".gob .lex .chromem" && strings.Join(kinds, " ") != ".chromem .gob .lex" {
				t.Errorf("cache files %v, want the index, the lexical cache and the vector library", files)
			}
		})
	}
}

// A cache directory of another user is not used: the index keeps no
// cache and says why.
func TestCacheOfAnotherUser(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "cache")
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
	ix := New(newHashEmbedder(64), Options{CacheDir: foreign, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := ix.Sync(context.Background(), loadReg(t, copyTools(t)).Catalog()); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(foreign, "*index-*")); len(files) != 0 {
		t.Errorf("wrote %v in another user's directory", files)
	}
	if !strings.Contains(log.String(), "refused") || !strings.Contains(log.String(), "belongs to uid") {
		t.Errorf("no word of the refusal:\n%s", log.String())
	}
	if c := ix.Stats().Cache; c != "" {
		t.Errorf("cache file %q, want none", c)
	}
}

// Opening the cache removes the temporary file a killed writer left (kill
// -9 between its creation and its rename), and leaves a live writer's
// alone, in this process or another (it holds the file's lock), and one
// just created (its writer may not have locked it yet).
func TestStaleTemporaryFilesRemovedAtOpen(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-fileio.StaleAfter - time.Minute)
	tmp := func(name string, age time.Time) string {
		p := filepath.Join(cache, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{7}, 5<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	killed := tmp(".index-0123456789abcdef.gob.1234567.tmp", old)
	killedLex := tmp(".index-0123456789abcdef.lex.7654321.tmp", old)
	live := tmp(".index-fedcba9876543210.gob.2345678.tmp", old)
	fresh := tmp(".index-fedcba9876543210.lex.3456789.tmp", time.Now())
	f, err := os.OpenFile(live, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	ix.Preload(context.Background(), []string{t.TempDir()})
	for _, p := range []string{killed, killedLex} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range []string{live, fresh} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
