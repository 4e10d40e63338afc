package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/usage"
)

// rankEvents are requests whose words the tools' descriptions lack, for
// the example tools, as a team's agents might call them.
func rankEvents() []usage.Event {
	phrasings := map[string][]string{
		"calc":       {"what is six times seven", "crunch these numbers", "how much is 17 percent of 230", "sum up 4 and 5", "divide the bill by three"},
		"git_log":    {"what did we ship yesterday", "recent commits please", "who touched this last", "history of main", "last five changes"},
		"file_grep":  {"where do we mention the token", "find every TODO", "which files say deprecated", "hunt for the word panic", "spot usages of foo"},
		"file_read":  {"show me the readme", "open the config", "print the makefile", "what's inside notes.txt", "dump the license"},
		"git_diff":   {"what did i change", "unstaged edits", "compare my work to head", "what's different now", "pending modifications"},
		"file_write": {"save this text to a file", "put hello in out.txt", "store the notes", "create a file with this", "write the summary down"},
	}
	var evs []usage.Event
	t0 := time.Now().Add(-24 * time.Hour)
	i := 0
	for tool, ps := range phrasings {
		for _, p := range ps {
			for rep := 0; rep < 3; rep++ {
				evs = append(evs, usage.Event{Request: p, Tool: tool, Agent: fmt.Sprintf("agent%d", rep), OK: rep != 2,
					Time: t0.Add(time.Duration(i) * time.Minute), ID: fmt.Sprint("r", i)})
				i++
			}
		}
	}
	return evs
}

// The ranking learns the same from the shared store as from the embedded
// one, given the same events, in one installation (one key: the same
// judged samples): the same tools in the same order, the same scores.
func TestRankingSameAsEmbedded(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	pg := open(t, dsn, usage.Options{LocalDir: dir})
	file := open(t, dir+"/usage.db", usage.Options{})
	evs := rankEvents()
	for _, s := range []usage.Store{pg, file} {
		if err := s.Record(ctx, evs...); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := pg.(usage.Keyed).Secret("p"), file.(usage.Keyed).Secret("p"); a == nil || !bytes.Equal(a, b) {
		t.Fatal("one installation's two stores give two secrets")
	}
	withPG, withFile := newEngine(t, pg), newEngine(t, file)
	if f, g := withPG.UsageFit(), withFile.UsageFit(); f.Entries == 0 || f != g {
		t.Fatalf("usage fit: shared %+v, embedded %+v", f, g)
	}
	for _, q := range []string{"what is nine times eight", "recent commits on the branch", "find every FIXME", "show me the changelog",
		"what did i change today", "save the list to a file", "who touched the parser last", "crunch 3 and 4"} {
		a, err := withPG.Rank(ctx, rankReq(q))
		if err != nil {
			t.Fatal(err)
		}
		b, err := withFile.Rank(ctx, rankReq(q))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Names(), b.Names()) {
			t.Errorf("%q: shared %v, embedded %v", q, a.Names(), b.Names())
			continue
		}
		for i := range a.Tools {
			if a.Tools[i].Score != b.Tools[i].Score {
				t.Errorf("%q: %s scores %v shared, %v embedded", q, a.Tools[i].Name, a.Tools[i].Score, b.Tools[i].Score)
			}
		}
	}
}

func rankReq(q string) engine.Request { return engine.Request{Query: q, Limit: 5, All: true} }
