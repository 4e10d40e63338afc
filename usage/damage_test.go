package usage

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A damaged store is set aside (PATH.damaged-TIME, its log with it) with
// a warning, and a new one is used. Open finds a damaged header or layout;
// damage further in it finds with Options.Check, and the first call that
// reads it finds it otherwise.
func TestDamagedStoreSetAside(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		check  bool // with Options.Check
	}{
		{"header", func(t *testing.T, path string) { overwrite(t, path, 0, []byte("not a database at all!")) }, false},
		{"layout", func(t *testing.T, path string) { overwrite(t, path, 100, bytes.Repeat([]byte{0xa5}, 4000)) }, false},
		{"pages", garblePages, true},
		{"pages found in use", garblePages, false},
		{"pages wiped", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			overwrite(t, path, 4096, bytes.Repeat([]byte{0xa5}, int(fi.Size())-4096))
		}, false},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 50); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "usage.db")
			s := open(t, path, Options{})
			var evs []Event
			for i := range 200 {
				evs = append(evs, Event{Request: fmt.Sprintf("request number %d", i), Tool: fmt.Sprintf("t%d", i%7), OK: true})
			}
			record(t, s, evs...)
			s.Close()
			tc.damage(t, path)
			derived := path + derivedSuffix // what a reader derived: set aside with it, removed
			if err := os.WriteFile(derived, []byte("request number 3"), 0o600); err != nil {
				t.Fatal(err)
			}

			var logged bytes.Buffer
			s2, warns, err := Open(ctx, path, Options{Check: tc.check, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if strings.HasSuffix(tc.name, "found in use") {
				if len(warns) != 0 {
					t.Fatalf("warnings: %q", warns)
				}
				// The first read finds it.
				if got := snapshot(t, s2); len(got) != 0 {
					t.Fatalf("snapshot of a damaged store: %d entries", len(got))
				}
				warns = []string{logged.String()}
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "damaged") || !strings.Contains(warns[0], path+".damaged-") {
				t.Fatalf("warnings: %q", warns)
			}
			aside := damagedCopies(path)
			if len(aside) != 1 {
				t.Fatalf("set aside: %v", aside)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("the damaged store is still in place: %v", err)
			}
			if _, err := os.Stat(derived); !os.IsNotExist(err) {
				t.Errorf("what was derived from the damaged store is still there: %v", err)
			}
			// A new store is used.
			if got := snapshot(t, s2); len(got) != 0 {
				t.Fatalf("new store holds %d", len(got))
			}
			record(t, s2, Event{Request: "after", Tool: "t", OK: true})
			if got := snapshot(t, open(t, path, Options{})); len(got) != 1 {
				t.Fatalf("new store holds %v", got)
			}
		})
	}
}

// A store another process set aside and replaced, or damaged after this
// one opened it, is let go at the next call, and the call goes on with
// the store now at the path (a damaged one is set aside, with a word in
// the log).
func TestStoreReplacedWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	var logged bytes.Buffer
	s := open(t, path, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	record(t, s, Event{Request: "before", Tool: "t", OK: true})
	// Another process set it aside.
	if err := os.Rename(path, path+".damaged-x"); err != nil {
		t.Fatal(err)
	}
	os.Rename(path+"-wal", path+".damaged-x-wal")
	os.Remove(path + "-shm")
	if got := snapshot(t, s); len(got) != 0 {
		t.Fatalf("the store set aside is still read: %v", got)
	}
	// Another process makes a new one, which is then damaged.
	other := open(t, path, Options{})
	record(t, other, Event{Request: "other", Tool: "t", OK: true})
	other.Close()
	if got := snapshot(t, s); len(got) != 1 {
		t.Fatalf("the new store is not read: %v", got)
	}
	// Replaced by a damaged one.
	if err := os.WriteFile(path+".tmp", []byte("garbage garbage garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	record(t, s, Event{Request: "later", Tool: "t", OK: true})
	if !strings.Contains(logged.String(), "damaged") {
		t.Errorf("log: %s", logged.String())
	}
	if got := snapshot(t, s); len(got) != 1 {
		t.Fatalf("%v", got)
	}
}

// garblePages garbles every page but the first (the layout): the
// tables' and indexes' pages.
func garblePages(t *testing.T, path string) {
	fi, _ := os.Stat(path)
	for off := int64(4096); off < fi.Size(); off += 4096 {
		overwrite(t, path, off+100, bytes.Repeat([]byte{0xa5}, 300))
	}
}

// overwrite writes b into the file at path at off.
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
