package usage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The caps keep the newest entries (by Last) and evict the oldest.
func TestCaps(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		// events i = 0..n-1, one second apart: request "r i", tool and
		// agent by i
		n           int
		tool, agent func(i int) string
		principal   func(i int) string // nil: none
		want        map[string]int     // entries kept per tool
		kept        func(i int) bool
	}{
		{
			name:  "per tool",
			opts:  Options{PerTool: 10, PerAgentTool: -1},
			n:     30,
			tool:  func(i int) string { return []string{"a", "b"}[i%3/2] }, // a: 2 of 3, b: 1 of 3
			agent: func(i int) string { return "" },
			want:  map[string]int{"a": 10, "b": 10},
			kept:  func(i int) bool { return i >= 15 || (i%3 == 2 && i >= 0) },
		},
		{
			name:  "total",
			opts:  Options{Total: 12, PerAgentTool: -1},
			n:     40,
			tool:  func(i int) string { return fmt.Sprint("t", i%4) },
			agent: func(i int) string { return "" },
			want:  map[string]int{"t0": 3, "t1": 3, "t2": 3, "t3": 3},
			kept:  func(i int) bool { return i >= 28 },
		},
		{
			name:  "per agent and tool",
			opts:  Options{PerAgentTool: 5},
			n:     40,
			tool:  func(i int) string { return "t" },
			agent: func(i int) string { return map[bool]string{true: "flood", false: "calm"}[i%8 != 0] },
			want:  map[string]int{"t": 10},
			kept:  func(i int) bool { return (i%8 == 0) || i >= 35 },
		},
		{
			// A flood of others' new entries pushes out the others' oldest,
			// never the owner's (the first four).
			name:      "the owner's entries go last",
			opts:      Options{PerTool: 6, PerAgentTool: -1},
			n:         30,
			tool:      func(i int) string { return "t" },
			agent:     func(i int) string { return "" },
			principal: func(i int) string { return map[bool]string{true: Owner, false: "mcp:flood"}[i < 4] },
			want:      map[string]int{"t": 6},
			kept:      func(i int) bool { return i < 4 || i >= 28 },
		},
		{
			name:      "the owner's entries go last in all too",
			opts:      Options{Total: 5, PerAgentTool: -1},
			n:         30,
			tool:      func(i int) string { return fmt.Sprint("t", i%3) },
			agent:     func(i int) string { return "" },
			principal: func(i int) string { return map[bool]string{true: Owner, false: fmt.Sprint("9p:a", i)}[i < 2] },
			want:      map[string]int{"t0": 2, "t1": 2, "t2": 1},
			kept:      func(i int) bool { return i < 2 || i >= 27 },
		},
		{
			name:  "no tool counts as a tool",
			opts:  Options{PerTool: 3, PerAgentTool: -1},
			n:     10,
			tool:  func(i int) string { return "" },
			agent: func(i int) string { return "" },
			want:  map[string]int{"": 3},
			kept:  func(i int) bool { return i >= 7 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			tc.opts.Now = c.now
			s := open(t, filepath.Join(t.TempDir(), "usage.db"), tc.opts)
			start := c.t
			for i := range tc.n {
				c.add(time.Second)
				ev := Event{Request: fmt.Sprint("r ", i), Tool: tc.tool(i), Agent: tc.agent(i), OK: true}
				if tc.principal != nil {
					ev.Principal = tc.principal(i)
				}
				record(t, s, ev)
			}
			got := snapshot(t, s)
			per := map[string]int{}
			for k, e := range got {
				per[k.Tool]++
				i := int(e.Last.Sub(start)/time.Second) - 1
				if !tc.kept(i) {
					t.Errorf("kept %d (%v)", i, k)
				}
			}
			if fmt.Sprint(per) != fmt.Sprint(tc.want) {
				t.Errorf("entries per tool %v, want %v", per, tc.want)
			}
			st, err := s.Stats(context.Background())
			if err != nil || st.Entries != len(got) {
				t.Errorf("stats say %d entries, snapshot %d (%v)", st.Entries, len(got), err)
			}
		})
	}
}

// An entry not used for Retention is dropped: at Open, and at Record.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	path := filepath.Join(t.TempDir(), "usage.db")
	opts := Options{Retention: 10 * 24 * time.Hour, Now: c.now}
	s := open(t, path, opts)
	record(t, s,
		Event{Request: "old", Tool: "t", Time: c.t.Add(-9 * 24 * time.Hour)},
		Event{Request: "older than kept", Tool: "t", Time: c.t.Add(-11 * 24 * time.Hour)},
		Event{Request: "new", Tool: "t"},
	)
	if got := snapshot(t, s); len(got) != 2 {
		t.Fatalf("an event older than the retention was kept: %v", got)
	}
	s.Close()
	c.add(2 * 24 * time.Hour)
	// At Open: "old" is now 11 days old.
	s = open(t, path, opts)
	got := snapshot(t, s)
	if _, ok := got[Key{Request: "new", Tool: "t"}]; len(got) != 1 || !ok {
		t.Fatalf("after open: %v", got)
	}
	// At Record, in a process that stays up.
	c.add(9 * 24 * time.Hour)
	record(t, s, Event{Request: "newest", Tool: "u"})
	got = snapshot(t, s)
	if _, ok := got[Key{Request: "newest", Tool: "u"}]; len(got) != 1 || !ok {
		t.Fatalf("after record: %v", got)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Entries != 1 || st.Sources[SourceAPI] != 4 {
		t.Fatalf("%+v %v", st, err)
	}
	// No retention: kept for ever.
	forever := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{Retention: -1, Now: c.now})
	record(t, forever, Event{Request: "ancient", Tool: "t", Time: c.t.Add(-5 * 365 * 24 * time.Hour)})
	if got := snapshot(t, forever); len(got) != 1 {
		t.Fatalf("%v", got)
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(ok bool, n int64, at time.Duration, text string) prepared {
		return prepared{Event: Event{Request: text, OK: ok, Time: t0.Add(at)}, count: n}
	}
	for _, tc := range []struct {
		name          string
		max           int
		evs           []prepared
		count, failed int64
		text          string
	}{
		{"one", 10, []prepared{ev(true, 1, 0, "a")}, 1, 0, "a"},
		{"failed", 10, []prepared{ev(false, 1, 0, "a"), ev(true, 1, time.Second, "b")}, 2, 1, "b"},
		{"older event keeps the latest text", 10, []prepared{ev(true, 1, time.Second, "b"), ev(false, 1, 0, "a")}, 2, 1, "b"},
		{"count", 10, []prepared{ev(false, 4, 0, "a"), ev(true, 3, 0, "a")}, 7, 4, "a"},
		{"saturates", 10, []prepared{ev(true, 8, 0, "a"), ev(false, 5, 0, "a")}, 10, 4, "a"},
		{"saturated failures fade", 10, []prepared{ev(false, 10, 0, "a"), ev(true, 40, 0, "a")}, 10, 0, "a"},
		{"saturated takes failures in", 10, []prepared{ev(true, 10, 0, "a"), ev(false, 40, 0, "a")}, 10, 10, "a"},
		{"saturated half", 10, []prepared{ev(true, 10, 0, "a"), ev(false, 1, 0, "a"), ev(true, 1, 0, "a"), ev(false, 1, 0, "a")}, 10, 2, "a"},
		{"no bound", -1, []prepared{ev(true, 1000, 0, "a"), ev(false, 5, 0, "a")}, 1005, 5, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Entry
			var failed int64
			for _, p := range tc.evs {
				merge(&e, &failed, p, tc.max)
			}
			if e.Count != tc.count || e.Failed != tc.failed || e.Text != tc.text {
				t.Errorf("count %d failed %d text %q, want %d %d %q", e.Count, e.Failed, e.Text, tc.count, tc.failed, tc.text)
			}
			if e.Failed < 0 || e.Failed > e.Count {
				t.Errorf("failed %d of %d", e.Failed, e.Count)
			}
		})
	}
}

// One agent repeating a request counts at most MaxCount.
func TestCountSaturates(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{MaxCount: 5})
	for range 12 {
		record(t, s, Event{Request: "loop", Tool: "t", Agent: "looping", OK: true})
	}
	record(t, s, Event{Request: "loop", Tool: "t", Agent: "other", OK: true})
	got := snapshot(t, s)
	if got[Key{"loop", "t", "looping", ""}].Count != 5 || got[Key{"loop", "t", "other", ""}].Count != 1 {
		t.Fatalf("%v", got)
	}
}
