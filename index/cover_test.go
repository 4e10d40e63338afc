package index

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/registry"
)

// TestCoverAllMatchesPostings checks the last step's coverage features
// (coverAll, which looks each candidate's words up among the query's)
// against their definition, a walk of the query words' postings, to the
// bit, for pools of tools that have the query's words and tools that do
// not, on the tools and requests of train/data/tldr.
func TestCoverAllMatchesPostings(t *testing.T) {
	ctx := context.Background()
	tools, requests := tldrData(t)
	dir := t.TempDir()
	for _, x := range tools[:800] {
		meta, _ := json.Marshal(map[string]any{"description": x.Description, "cmd": "cat"})
		writeMeta(t, dir, x.Name, string(meta))
	}
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: quiet()})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ix := New(emb, Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	v := ix.v
	r := rand.New(rand.NewPCG(3, 4))
	covered := 0
	for _, text := range requests[:200] {
		var qf [learn.NumAns]float64
		qts, inv := v.queryWords(v.lexQueryOf(ix.lexicalQuery(Query{Text: text})), &qf)
		// A pool of 30: tools with the query's words, and others.
		var slots []int
		seen := map[int]bool{}
		for _, qt := range qts {
			if qt.id < 0 {
				continue
			}
			for _, p := range v.lex.postings[qt.id] {
				if s := int(p.slot); len(slots) < 20 && !seen[s] {
					seen[s] = true
					slots = append(slots, s)
				}
			}
		}
		for len(slots) < 30 {
			s := r.IntN(len(v.slots))
			if v.slots[s].live && !seen[s] {
				seen[s] = true
				slots = append(slots, s)
			}
		}
		got := make([][learn.NumCand]float64, len(slots))
		v.coverAll(got, slots, qts, inv)
		want := make([][learn.NumCand]float64, len(slots))
		at := map[int]int{}
		for i, s := range slots {
			at[s] = i
		}
		opt := make([]float64, len(slots))
		for _, qt := range qts {
			if qt.id < 0 {
				continue
			}
			for _, p := range v.lex.postings[qt.id] {
				if i, ok := at[int(p.slot)]; ok {
					if qt.opt {
						opt[i] += qt.w * inv
						continue
					}
					want[i][learn.CandCovAll] += qt.w * inv
					if qt.rare {
						want[i][learn.CandRare] = 1
					}
				}
			}
		}
		for i := range slots {
			if opt[i] > 0 { // a tie-breaker: beside a word, at most tieShare of it
				want[i][learn.CandCovAll] = tieBreak(want[i][learn.CandCovAll], opt[i])
			}
			if got[i] != want[i] {
				t.Fatalf("%q, tool %s: coverage %v rare %v, want %v %v", text, v.slots[slots[i]].name,
					got[i][learn.CandCovAll], got[i][learn.CandRare], want[i][learn.CandCovAll], want[i][learn.CandRare])
			}
			if want[i][learn.CandCovAll] > 0 {
				covered++
			}
		}
	}
	if covered < 1000 {
		t.Fatalf("only %d candidates had a query word: the test tests little", covered)
	}
}
