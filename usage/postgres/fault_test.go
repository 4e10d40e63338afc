package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/usage"
)

// rankWith ranks q with an engine over the example tools and store s (the
// engine owns s: closing it closes s).
func newEngine(t *testing.T, s usage.Store) *engine.Engine {
	t.Helper()
	eng, err := engine.New(context.Background(), engine.Options{Dirs: []string{"../../examples/tools"}, NoCache: true, NoThresholds: true,
		Usage: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng
}

func rank(t *testing.T, eng *engine.Engine, q string) []string {
	t.Helper()
	a, err := eng.Rank(context.Background(), engine.Request{Query: q, Limit: 5, All: true})
	if err != nil {
		t.Fatalf("rank %q: %v", q, err)
	}
	return a.Names()
}

// waitFor waits (up to a minute) until ok, failing t with what otherwise.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The server stopped for a while (30 s; 3 s with -short) while events
// are recorded: Record never fails (events go to the local spool, shown
// by Stats), an instance started meanwhile ranks from its local copy,
// ranking answers throughout; once the server is back every event is on
// it exactly once.
func TestServerDown(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	down := 30 * time.Second
	if testing.Short() {
		down = 3 * time.Second
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	a := open(t, dsn, usage.Options{LocalDir: dirA})
	ref := open(t, t.TempDir()+"/usage.db", usage.Options{})
	t0 := time.Now().Add(-time.Hour)
	evs := events(300, t0, "before")
	for _, s := range []usage.Store{a, ref} {
		if err := s.Record(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	// B reads the history (its local copy made), and stops. Its clock
	// stands still: what it reads of A is first read then.
	read := time.Now().Truncate(time.Second)
	clockB := func() time.Time { return read }
	b := open(t, dsn, usage.Options{LocalDir: dirB, Now: clockB})
	seen, _, err := b.Snapshot(ctx)
	if err != nil || len(seen) == 0 {
		t.Fatalf("Snapshot: %d entries, %v", len(seen), err)
	}
	b.Close()

	pg.Stop(t)
	// B again, with the server down: it opens, with a warning, and
	// ranks from its local copy.
	b2, warns, err := usage.Open(ctx, dsn, usage.Options{LocalDir: dirB, Now: clockB})
	if err != nil || len(warns) == 0 {
		t.Fatalf("Open with the server down: %v, warnings %q", err, warns)
	}
	if got, _, err := b2.Snapshot(ctx); err != nil || same(got, seen) != "" {
		t.Fatalf("Snapshot from the local copy: %v, %s", err, same(got, seen))
	}
	eng := newEngine(t, b2)
	// The history ranked with is the local copy's, not none (a one-off
	// rank reads it whole with the server down).
	if fit := eng.UsageFit(); fit.Entries == 0 {
		t.Fatalf("ranking with the server down uses no history (the local copy holds %d entries)", len(seen))
	}
	const q = "before request 3 about things"
	want := rank(t, eng, q)
	if len(want) == 0 {
		t.Fatal("no answer")
	}
	n := 0
	for end := time.Now().Add(down); time.Now().Before(end); n++ {
		ev := events(1, t0.Add(time.Duration(n)*time.Millisecond), fmt.Sprint("down", n))[0]
		ev.ID = ""
		if err := a.Record(ctx, ev); err != nil {
			t.Fatalf("Record with the server down: %v", err)
		}
		if err := ref.Record(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if n%10 == 0 {
			if got := rank(t, eng, q); !slices.Equal(got, want) {
				t.Fatalf("ranking with the server down: %v, before %v", got, want)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	st, err := a.Stats(ctx)
	if err != nil || st.Pending != int64(n) || st.PendingSince.IsZero() {
		t.Fatalf("Stats with the server down: %+v %v, want %d pending", st, err, n)
	}
	if _, err := a.Forget(ctx, usage.Filter{All: true}); err == nil {
		t.Error("Forget with the server down did not fail")
	}

	pg.Start(t)
	waitFor(t, "the spool sent", func() bool {
		st, err := a.Stats(ctx)
		return err == nil && st.Pending == 0
	})
	got, _, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want2, _, _ := ref.Snapshot(ctx)
	if d := same(got, want2); d != "" {
		t.Errorf("after the outage: %s", d)
	}
	st, _ = a.Stats(ctx)
	if st.Sources["mcp"] != int64(300+n) {
		t.Errorf("%d events on the server, want %d (each once)", st.Sources["mcp"], 300+n)
	}
	t.Logf("%d events recorded while the server was down for %v", n, down)
	// B's view follows.
	waitFor(t, "B's view", func() bool {
		got, _, err := b2.Snapshot(ctx)
		return err == nil && same(got, seenFrom(want2, a, read)) == ""
	})
}

// An event sent whose removal from the spool was lost (a crash in
// between) is sent again and skipped: counted once.
func TestSpoolSentTwiceCountsOnce(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	s := open(t, dsn, usage.Options{})
	evs := events(50, time.Now().Add(-time.Hour), "x")
	if err := s.Record(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	st := s.(*store)
	now := time.Now()
	var preps []pending
	for _, ev := range evs {
		p, err := usage.Prepare(ev, now)
		if err != nil {
			t.Fatal(err)
		}
		preps = append(preps, pending{Prepared: p, at: now})
	}
	if err := st.local.spool(ctx, preps, maxSpool); err != nil {
		t.Fatal(err)
	}
	st.flush(ctx)
	stats, err := s.Stats(ctx)
	if err != nil || stats.Pending != 0 || stats.Sources["mcp"] != 50 {
		t.Fatalf("%+v %v: want 50 events, none pending", stats, err)
	}
}

// A local file SQLite cannot read is set aside, with a warning, and a new
// one made: the store opens.
func TestDamagedLocalCopy(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dsn, usage.Options{LocalDir: dir})
	if err := s.Record(ctx, events(10, time.Now().Add(-time.Hour), "x")...); err != nil {
		t.Fatal(err)
	}
	s.Snapshot(ctx)
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(files) != 1 {
		t.Fatalf("local files %v", files)
	}
	if err := os.WriteFile(files[0], bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(files[0] + "-wal")
	os.Remove(files[0] + "-shm")
	s2, warns, err := usage.Open(ctx, dsn, usage.Options{LocalDir: dir})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "set aside") {
		t.Fatalf("Open with a damaged local copy: %v, warnings %q", err, warns)
	}
	defer s2.Close()
	if es, _, err := s2.Snapshot(ctx); err != nil || len(es) == 0 {
		t.Errorf("Snapshot: %d entries, %v", len(es), err)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new local copy: %v %v", fi, err)
	}
}

// The spool is bounded: events beyond it are refused, all of a Record or
// none, and what it holds is kept.
func TestSpoolBounded(t *testing.T) {
	ctx := context.Background()
	l := newLocal(filepath.Join(t.TempDir(), "local.db"), time.Now, nil)
	if err := l.open(ctx, func(string) {}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.Now()
	prep := func(evs []usage.Event) []pending {
		var out []pending
		for _, ev := range evs {
			p, err := usage.Prepare(ev, now)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pending{Prepared: p, at: now})
		}
		return out
	}
	if err := l.spool(ctx, prep(events(4, now.Add(-time.Hour), "a")), 5); err != nil {
		t.Fatal(err)
	}
	if err := l.spool(ctx, prep(events(2, now.Add(-time.Hour), "b")), 5); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("spooling past the bound: %v", err)
	}
	if n, since, err := l.pending(ctx); err != nil || n != 4 || !since.Equal(time.Unix(0, now.UnixNano())) {
		t.Errorf("pending %d since %v (%v), want 4 since %v", n, since, err, now)
	}
	// A repeated ID is kept once.
	if err := l.spool(ctx, prep(events(4, now.Add(-time.Hour), "a")[:1]), 5); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := l.pending(ctx); n != 4 {
		t.Errorf("pending %d after a repeat, want 4", n)
	}
}
