package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/usage"
)

// A tool's examples (requests from its author) teach the ranking words
// its description lacks, as the usage history does.
func TestExamplesTeachTheRanking(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, meta string) {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const q = "how is my btc stash doing"
	rank := func() []string {
		eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		a, err := eng.Rank(ctx, Request{Query: q, Limit: 3, All: true})
		if err != nil {
			t.Fatal(err)
		}
		return a.Names()
	}
	tools := map[string]string{
		"price_lookup": "Look up the current price of an asset.",
		"send_mail":    "Send an email message to someone.",
		"weather":      "Current weather and forecast for a city.",
		"todo_add":     "Add an item to the todo list.",
		"git_log":      "Show the commit history of a repository.",
	}
	for n, d := range tools {
		write(n, `{"description":"`+d+`","cmd":"cat"}`)
	}
	before := rank()
	explained := func() *Explanation {
		eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		a, err := eng.Rank(ctx, Request{Query: q, Limit: 3, All: true, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		return a.Explain
	}
	if ex := explained(); ex.Usage != nil {
		t.Errorf("no examples, no history, yet the explanation says %+v", *ex.Usage)
	}
	exs := map[string]string{
		"price_lookup": `["what is btc at", "btc now", "my btc stash", "how much is btc", "btc today", "check btc", "btc value", "is btc up"]`,
		"send_mail":    `["mail bob the report", "write to alice", "email the team", "drop a note to carol", "message my boss", "send the invoice to dave"]`,
		"weather":      `["will it rain", "do i need an umbrella", "is it cold outside", "how hot is it in rome", "snow tomorrow?", "sunny this weekend?"]`,
		"todo_add":     `["remind me to buy milk", "note: call mum", "put laundry on my list", "i must pay rent", "add dentist to my tasks", "remember the keys"]`,
		"git_log":      `["what did i change yesterday", "recent commits", "who touched this last", "history of main", "last five changes", "when did we release"]`,
	}
	for n, d := range tools {
		write(n, `{"description":"`+d+`","cmd":"cat","examples":`+exs[n]+`}`)
	}
	after := rank()
	if ex := explained(); ex.Usage == nil || ex.Usage.Entries != 32 || ex.Usage.Sample == 0 {
		t.Errorf("32 examples: the explanation's usage %+v, want 32 entries and the sample the weight was chosen on", ex.Usage)
	}
	if len(after) == 0 || after[0] != "price_lookup" {
		t.Errorf("%q with examples: %v (without: %v)", q, after, before)
	}
}

// countingStore counts how the engine reads the history.
type countingStore struct {
	usage.Store
	snapshots, changes int
}

func (c *countingStore) Snapshot(ctx context.Context) ([]usage.Entry, int64, error) {
	c.snapshots++
	return c.Store.Snapshot(ctx)
}

func (c *countingStore) Changes(ctx context.Context, after int64) ([]usage.Entry, []usage.Key, int64, error) {
	c.changes++
	return c.Store.Changes(ctx, after)
}

// The engine reads the history whole once, then only what changed (and
// whole again when the store cannot tell, after a Forget); what the index
// ranks with is the store's entries each time (it ranks as an engine that
// read the store whole now).
func TestUsageFollowsChanges(t *testing.T) {
	ctx := context.Background()
	st, cs, eng := countingEngine(t)
	record := func(req, tool string) { t.Helper(); recordCall(t, st, req, tool) }
	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same := func(step string) {
		t.Helper()
		own, _, err := usage.Open(ctx, stats.Where, usage.Options{}) // the fresh engine closes it
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := New(ctx, Options{Dirs: []string{"testdata/tools"}, NoCache: true, NoThresholds: true,
			Logger: slog.New(slog.DiscardHandler), Usage: own})
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if got, want := eng.UsageFit(), fresh.UsageFit(); got != want {
			t.Errorf("%s: the engine's usage %+v, read whole now %+v", step, got, want)
		}
		for _, q := range []string{"show the git status", "how full is the disk", "find the TODO comments", "git"} {
			got, err := eng.Index().Rank(ctx, index.Query{Text: q, K: 10})
			if err != nil {
				t.Fatal(err)
			}
			want, err := fresh.Index().Rank(ctx, index.Query{Text: q, K: 10})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Hits, want.Hits) {
				t.Errorf("%s: %q ranks %+v, read whole now %+v", step, q, got.Hits, want.Hits)
			}
		}
	}
	record("show the git status", "git_status")
	record("how full is the disk", "disk_usage")
	eng.loadUsage(ctx) // New read the empty store; this may read it whole again
	snaps := cs.snapshots
	if snaps == 0 {
		t.Fatal("the history was never read whole")
	}
	if f := eng.UsageFit(); f.Entries != 2 {
		t.Errorf("after two events the index has %d entries", f.Entries)
	}
	record("find the TODO comments", "find_todos")
	record("show the git status", "git_status") // merged: a count of 2
	eng.loadUsage(ctx)
	changes := cs.changes
	if cs.snapshots != snaps || changes == 0 {
		t.Errorf("a change read %d more snapshots and %d changes, want only changes", cs.snapshots-snaps, changes)
	}
	if f := eng.UsageFit(); f.Entries != 3 {
		t.Errorf("after three requests the index has %d entries", f.Entries)
	}
	same("after changes")
	if _, err := st.Forget(ctx, usage.Filter{Tool: "disk_usage"}); err != nil {
		t.Fatal(err)
	}
	snaps, changes = cs.snapshots, cs.changes
	eng.loadUsage(ctx)
	if cs.snapshots != snaps+1 || cs.changes != changes+1 {
		t.Errorf("after a Forget: %d more snapshots and %d changes, want one of each (changes unknown, so read whole)",
			cs.snapshots-snaps, cs.changes-changes)
	}
	if f := eng.UsageFit(); f.Entries != 2 {
		t.Errorf("after forgetting a tool the index has %d entries", f.Entries)
	}
	same("after a Forget")
}

// derivedCounting is a countingStore that names its history
// (usage.Derived), as the embedded store does.
type derivedCounting struct {
	*countingStore
	d usage.Derived
}

func (c derivedCounting) DerivedPath() string { return c.d.DerivedPath() }

func (c derivedCounting) DerivedTag(ctx context.Context) (string, int64, error) {
	return c.d.DerivedTag(ctx)
}

// A start with the history unchanged since the last takes the view that
// one saved beside the store, without reading the entries, and ranks as
// it did; after a small change it reads only the change (the store's
// Changes); after a larger one it reads and builds the history whole (a
// change of the catalog too: index.TestUsageViewSaved).
func TestUsageViewAcrossStarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, _, err := usage.Open(ctx, filepath.Join(dir, "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < 12; i++ {
		for _, ev := range []usage.Event{{Request: fmt.Sprintf("how is my bitcoin doing %d", i), Tool: "git_status"},
			{Request: fmt.Sprintf("is the disk full yet %d", i), Tool: "disk_usage"}} {
			ev.OK, ev.Agent, ev.Source = true, fmt.Sprint("agent", i%3), usage.SourceAPI
			if err := st.Record(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	cache := filepath.Join(dir, "cache")
	start := func(step string, entries int) (*countingStore, index.UsageFit, index.Ranking) {
		t.Helper()
		own, _, err := usage.Open(ctx, filepath.Join(dir, "usage.db"), usage.Options{}) // the engine closes it
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingStore{Store: own}
		eng, err := New(ctx, Options{Dirs: []string{"testdata/tools"}, CacheDir: cache, NoThresholds: true,
			Logger: slog.New(slog.DiscardHandler), Usage: derivedCounting{cs, own.(usage.Derived)}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := eng.Index().Rank(ctx, index.Query{Text: "what is bitcoin worth", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		fit := eng.UsageFit()
		eng.Close() // waits for the view to be saved
		if fit.Entries != entries {
			t.Fatalf("%s: %d entries in effect, want %d", step, fit.Entries, entries)
		}
		return cs, fit, r
	}
	first, fit, r := start("first start", 24)
	if first.snapshots != 1 {
		t.Fatalf("the first start read the history %d times", first.snapshots)
	}
	if _, err := os.Stat(st.(usage.Derived).DerivedPath()); err != nil {
		t.Fatalf("no view saved: %v", err)
	}
	again, fit2, r2 := start("second start", 24)
	if again.snapshots != 0 || fit2 != fit || !reflect.DeepEqual(r, r2) {
		t.Errorf("second start: %d reads of the history, fit %+v (was %+v), ranking %+v (was %+v)", again.snapshots, fit2, fit, r2, r)
	}
	if err := st.Record(ctx, usage.Event{Request: "bitcoin price", Tool: "git_status", OK: true, Agent: "agent9", Source: usage.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	// One entry more: the saved view brought up to date with what changed
	// (no whole read); the weight as chosen.
	changed, fit3, r3 := start("after a record", 25)
	if changed.snapshots != 0 || changed.changes != 1 || fit3.Weight != fit.Weight {
		t.Errorf("after a record: %d whole reads and %d of changes (want 0 and 1), fit %+v", changed.snapshots, changed.changes, fit3)
	}
	if reflect.DeepEqual(r3, r) && fit.Weight > 0 {
		t.Error("the new entry changed nothing")
	}
	// More than a twentieth since the full build: read whole again.
	for i := 0; i < 3; i++ {
		if err := st.Record(ctx, usage.Event{Request: fmt.Sprint("disk space left ", i), Tool: "disk_usage", OK: true, Agent: "agent9", Source: usage.SourceAPI}); err != nil {
			t.Fatal(err)
		}
	}
	if whole, _, _ := start("after more records", 28); whole.snapshots != 1 {
		t.Errorf("after a twentieth more: %d whole reads, want 1", whole.snapshots)
	}
}

// A running engine's reloads (serve, mcp) go through the saved view too:
// whatever path each takes (taken, brought up to date, built whole), the
// entries in effect are the store's.
func TestUsageReloadsWithSavedView(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, _, err := usage.Open(ctx, filepath.Join(dir, "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(ctx, Options{Dirs: []string{"testdata/tools"}, CacheDir: filepath.Join(dir, "cache"), NoThresholds: true,
		Logger: slog.New(slog.DiscardHandler), Usage: st})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	record := func(req, tool string) { t.Helper(); recordCall(t, st, req, tool) }
	want := 0
	for i := 0; i < 30; i++ {
		record(fmt.Sprintf("how full is disk number %d", i), "disk_usage")
		want++
		if i%7 == 0 {
			record(fmt.Sprintf("show the git status of repo %d", i), "git_status")
			want++
		}
		eng.loadUsage(ctx)
		if got := eng.UsageFit().Entries; got != want {
			t.Fatalf("after %d entries recorded, %d in effect", want, got)
		}
	}
	if n, err := st.Forget(ctx, usage.Filter{Tool: "git_status"}); err != nil || n == 0 {
		t.Fatal(n, err)
	}
	eng.loadUsage(ctx)
	if got, w := eng.UsageFit().Entries, want-5; got != w {
		t.Errorf("after forgetting a tool: %d in effect, want %d", got, w)
	}
}

// countingEngine is an engine of testdata/tools over a new embedded
// store, which it reads through a countingStore (so as one that keeps no
// saved view); closed when t ends.
func countingEngine(t *testing.T) (usage.Store, *countingStore, *Engine) {
	t.Helper()
	ctx := context.Background()
	st, _, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st}
	eng, err := New(ctx, Options{Dirs: []string{"testdata/tools"}, NoCache: true, NoThresholds: true,
		Logger: slog.New(slog.DiscardHandler), Usage: cs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return st, cs, eng
}

// recordCall records a successful call of tool for req by agent "a".
func recordCall(t *testing.T, st usage.Store, req, tool string) {
	t.Helper()
	if err := st.Record(context.Background(), usage.Event{Request: req, Tool: tool, OK: true, Agent: "a", Source: usage.SourceAPI}); err != nil {
		t.Fatal(err)
	}
}

// A reload after a few recorded calls brings the index's view up to date
// with them, with a store that keeps no saved view (such as the
// PostgreSQL store): only the changes are read (the engine holds no
// entries: the index's view is the one copy of the history).
func TestUsageReloadInMemory(t *testing.T) {
	ctx := context.Background()
	st, cs, eng := countingEngine(t)
	tools := []string{"git_status", "disk_usage", "find_todos"}
	for i := range 60 { // a twentieth of 60 may change without a whole build
		recordCall(t, st, fmt.Sprintf("request number %d for %s", i, tools[i%3]), tools[i%3])
	}
	eng.loadUsage(ctx)
	if f := eng.UsageFit(); f.Entries != 60 {
		t.Fatalf("after 60 calls the index has %d entries", f.Entries)
	}
	snaps := cs.snapshots
	recordCall(t, st, "how much room is left on the disk", "disk_usage")
	eng.loadUsage(ctx)
	if f := eng.UsageFit(); f.Entries != 61 || cs.snapshots != snaps {
		t.Errorf("after one more call: %d entries (want 61), %d more snapshots (want 0)", f.Entries, cs.snapshots-snaps)
	}
}

// A reload that a shutdown cancels is no news: the engine says nothing
// above Debug about the history it could not read then, and warns when
// the same failure comes with its context alive.
func TestUsageReloadCancelledQuietly(t *testing.T) {
	st, cs, eng := countingEngine(t)
	recordCall(t, st, "show the git status", "git_status")
	var logged syncLog
	eng.log = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	eng.loadUsage(ctx)
	if s := logged.String(); s != "" {
		t.Errorf("a cancelled reload warned:\n%s", s)
	}
	// The same store failing with a live context is a warning.
	cs.Store.Close()
	eng.loadUsage(context.Background())
	if s := logged.String(); !strings.Contains(s, "usage history") {
		t.Errorf("a failing store did not warn (log %q)", s)
	}
}

// syncLog is a log buffer safe to write from several goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
