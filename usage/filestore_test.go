package usage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// open opens the store at path, failing the test on an error or a
// warning, and closes it at the end of the test.
func open(t *testing.T, path string, opts Options) Store {
	t.Helper()
	s, warns, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Fatalf("warnings: %q", warns)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// record records evs, failing the test on an error.
func record(t *testing.T, s Store, evs ...Event) {
	t.Helper()
	if err := s.Record(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
}

// snapshot is the store's entries by key.
func snapshot(t *testing.T, s Store) map[Key]Entry {
	t.Helper()
	es, _, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[Key]Entry, len(es))
	for _, e := range es {
		if _, dup := m[e.Key]; dup {
			t.Fatalf("key %v twice", e.Key)
		}
		m[e.Key] = e
	}
	return m
}

// clock is a settable Options.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time                { return c.t }
func (c *clock) add(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

// Nothing is made until the first Record: then the directory is made
// 0700 and the store 0600 (its log and index too).
func TestCreatedOnFirstRecord(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state", "toolsrv")
	path := filepath.Join(dir, "usage.db")
	s := open(t, path, Options{})
	es, v, err := s.Snapshot(ctx)
	if err != nil || len(es) != 0 || v != 0 {
		t.Fatalf("snapshot of no store: %v, %d, %v", es, v, err)
	}
	if _, _, _, err := s.Changes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Forget(ctx, Filter{All: true}); n != 0 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := s.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatalf("reading made something: %v", err)
	}
	record(t, s, Event{Request: "list my files", Tool: "ls", OK: true})
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v, %v", fi.Mode(), err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v", p, fi.Mode(), err)
		}
	}
	if got := snapshot(t, s); len(got) != 1 {
		t.Fatalf("%v", got)
	}
	// Another handle sees it.
	if got := snapshot(t, open(t, path, Options{})); len(got) != 1 {
		t.Fatalf("%v", got)
	}
}

// A store readable by others is made private, with a warning; a directory
// of others is refused.
func TestStoreMadePrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolsrv", "usage.db")
	record(t, open(t, path, Options{}), Event{Request: "x", Tool: "t"})
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	s, warns, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(warns) != 2 || !strings.Contains(warns[0], "0700") || !strings.Contains(warns[1], "0600, was 0644") {
		t.Errorf("warnings: %q", warns)
	}
	for _, p := range []string{filepath.Dir(path), path} {
		if fi, _ := os.Stat(p); fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v", p, fi.Mode())
		}
	}
	// A shared directory (sticky, world-writable) is not made private:
	// the store is refused there.
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777|os.ModeSticky)
	s2, _, err := Open(ctx, filepath.Join(shared, "usage.db"), Options{})
	if err != nil {
		t.Fatal(err) // nothing there yet: Open makes nothing
	}
	defer s2.Close()
	if err := s2.Record(ctx, Event{Request: "x", Tool: "t"}); err == nil || !strings.Contains(err.Error(), "shared") {
		t.Fatalf("record in a shared directory: %v", err)
	}
}

// Identical requests (case, spacing) for the same tool by the same agent
// are one entry; the latest text and offered list are kept; events with
// an ID seen before are skipped.
func TestIdenticalRequestsMerged(t *testing.T) {
	c := newClock()
	s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{Now: c.now})
	t0 := c.t
	evs := []Event{
		{Request: "Show git  status", Tool: "git_status", OK: true, Agent: "a", Time: t0.Add(-3 * time.Minute), Offered: []string{"git_status"}},
		{Request: "  show GIT status ", Tool: "git_status", OK: false, Agent: "a", Time: t0.Add(-time.Minute), Offered: []string{"git_status", "ls"}},
		{Request: "show git\tstatus", Tool: "git_status", OK: true, Agent: "a", Time: t0.Add(-2 * time.Minute)},
		{Request: "show git status", Tool: "git_status", OK: true, Agent: "b"},
		{Request: "show git status", Tool: "", OK: true, Agent: "a"},
	}
	record(t, s, evs...)
	for i, ev := range evs {
		if len(ev.ID) != 32 {
			t.Errorf("event %d: ID %q not set", i, ev.ID)
		}
	}
	got := snapshot(t, s)
	k := Key{Request: "show git status", Tool: "git_status", Agent: "a"}
	e := got[k]
	if len(got) != 3 || e.Count != 3 || e.Failed != 1 || !e.First.Equal(t0.Add(-3*time.Minute)) || !e.Last.Equal(t0.Add(-time.Minute)) ||
		e.Text != "  show GIT status " || strings.Join(e.Offered, ",") != "git_status,ls" {
		t.Fatalf("%d entries; %+v", len(got), e)
	}
	// The same events again (a retry): nothing changes.
	v, _ := s.Version(context.Background())
	record(t, s, evs...)
	if got := snapshot(t, s); got[k].Count != 3 {
		t.Fatalf("a repeated ID counted: %+v", got[k])
	}
	if v2, _ := s.Version(context.Background()); v2 != v {
		t.Errorf("version moved %d -> %d on repeated IDs", v, v2)
	}
	// Count stands for several calls.
	record(t, s, Event{Request: "show git status", Tool: "git_status", Agent: "a", Count: 5, OK: false})
	if e := snapshot(t, s)[k]; e.Count != 8 || e.Failed != 6 {
		t.Fatalf("%+v", e)
	}
}

// An invalid event fails the whole Record.
func TestRecordRejects(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{})
	for _, ev := range []Event{
		{Request: " \t\n", Tool: "x"},
		{Request: "x", Source: "smtp"},
		{Request: "x", Count: -1},
		{Request: "x", ID: strings.Repeat("a", 65)},
	} {
		err := s.Record(context.Background(), Event{Request: "fine", Tool: "t"}, ev)
		if err == nil {
			t.Errorf("%+v recorded", ev)
		}
	}
	if got := snapshot(t, s); len(got) != 0 {
		t.Errorf("recorded %v", got)
	}
}
