package usage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestForget(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    Filter
		gone func(e Event) bool
	}{
		{"tool", Filter{Tool: "grep"}, func(e Event) bool { return e.Tool == "grep" }},
		{"agent", Filter{Agent: "bob"}, func(e Event) bool { return e.Agent == "bob" }},
		{"tool and agent", Filter{Tool: "grep", Agent: "bob"}, func(e Event) bool { return e.Tool == "grep" && e.Agent == "bob" }},
		{"before", Filter{Before: newClock().t.Add(-36 * time.Hour)}, func(e Event) bool { return e.Time.Before(newClock().t.Add(-36 * time.Hour)) }},
		{"all", Filter{All: true}, func(Event) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{Now: c.now})
			var evs []Event
			for i := range 24 {
				evs = append(evs, Event{Request: fmt.Sprint("request ", i), Tool: []string{"grep", "ls", ""}[i%3],
					Agent: []string{"bob", "alice"}[i%2], Time: c.t.Add(-time.Duration(i) * 3 * time.Hour), OK: true})
			}
			record(t, s, evs...)
			// What a reader derived from the entries goes with them: the
			// derived file, those named after it (the vectors), a killed
			// writer's temporary file; not the store's other files.
			derived := s.(Derived).DerivedPath()
			dir, name := filepath.Split(derived)
			family := []string{derived, derived + ".builtin_v1.vec", filepath.Join(dir, "."+name+".123.tmp"), filepath.Join(dir, "."+name+".builtin_v1.vec.456.tmp")}
			for _, p := range append(family, filepath.Join(dir, "notes.txt")) {
				if err := os.WriteFile(p, []byte("request 3"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want := map[Key]bool{}
			for _, e := range evs {
				if !tc.gone(e) {
					want[Key{Normalize(e.Request), e.Tool, e.Agent, e.Principal}] = true
				}
			}
			n, err := s.Forget(ctx, tc.f)
			if err != nil || n != len(evs)-len(want) {
				t.Fatalf("forgot %d (want %d): %v", n, len(evs)-len(want), err)
			}
			for _, p := range family {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s, derived, is still there after Forget: %v", filepath.Base(p), err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
				t.Errorf("Forget removed a file that is not the store's: %v", err)
			}
			got := snapshot(t, s)
			if len(got) != len(want) {
				t.Fatalf("kept %d, want %d", len(got), len(want))
			}
			for k := range got {
				if !want[k] {
					t.Errorf("kept %v", k)
				}
			}
			st, _ := s.Stats(ctx)
			if st.Entries != len(want) {
				t.Errorf("stats: %d entries", st.Entries)
			}
			// What Forget removed does not come back through Changes.
			if _, _, _, err := s.Changes(ctx, 0); err != ErrResnapshot {
				t.Errorf("changes from before forget: %v", err)
			}
		})
	}
	s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{})
	for _, f := range []Filter{{}, {All: true, Tool: "x"}} {
		if _, err := s.Forget(ctx, f); err == nil {
			t.Errorf("Forget(%+v) accepted", f)
		}
	}
}

// After Forget, the requests it removed are nowhere on disk: not in the
// store's free pages, not in its write-ahead log, not in a damaged copy
// set aside (Forget All). Another process has the store open meanwhile.
func TestForgetLeavesNothingOnDisk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "usage.db")
	secret := func(tool string, i int) string { return fmt.Sprintf("zebra-%s-%04d tell nobody", tool, i) }
	// A damaged store set aside earlier, holding a request.
	old := open(t, path, Options{})
	record(t, old, Event{Request: secret("old", 1), Tool: "old", OK: true})
	old.Close()
	overwrite(t, path, 0, []byte("damaged damaged damaged"))
	s, warns, err := Open(ctx, path, Options{PerAgentTool: -1})
	if err != nil || len(warns) != 1 {
		t.Fatal(warns, err)
	}
	defer s.Close()
	other := open(t, path, Options{}) // another process, reading
	for i := range 200 {
		record(t, s, Event{Request: secret("grep", i), Tool: "grep", OK: true})
		record(t, s, Event{Request: secret("ls", i), Tool: "ls", OK: true})
	}
	if got := snapshot(t, other); len(got) != 400 {
		t.Fatalf("%d entries", len(got))
	}
	if !onDisk(t, dir, "zebra-grep") || !onDisk(t, dir, "zebra-old") {
		t.Fatal("the requests are not on disk to begin with: the test is wrong")
	}
	if _, err := s.Forget(ctx, Filter{Tool: "grep"}); err != nil {
		t.Fatal(err)
	}
	if onDisk(t, dir, "zebra-grep") {
		t.Error("a forgotten tool's request is still on disk")
	}
	if !onDisk(t, dir, "zebra-ls") {
		t.Error("the other tool's requests are gone too")
	}
	record(t, s, Event{Request: secret("cat", 1), Tool: "cat", OK: true})
	snapshot(t, other)
	if _, err := s.Forget(ctx, Filter{All: true}); err != nil {
		t.Fatal(err)
	}
	if onDisk(t, dir, "zebra") {
		t.Error("a request is still on disk after Forget All")
	}
	if got := snapshot(t, other); len(got) != 0 {
		t.Errorf("the other process still sees %d entries", len(got))
	}
	// The store goes on.
	record(t, s, Event{Request: "after", Tool: "t", OK: true})
	if got := snapshot(t, other); len(got) != 1 {
		t.Errorf("%v", got)
	}
}

// onDisk reports whether any file in dir holds s.
func onDisk(t *testing.T, dir, s string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) || bytes.Contains(b, []byte(strings.ToLower(s))) {
			t.Logf("%s holds %q", e.Name(), s)
			found = true
		}
	}
	return found
}
