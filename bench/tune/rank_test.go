package tune

import (
	"context"
	"log/slog"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/thresholds"
)

// Rank over a real registry, index and the built-in embedder:
// abstention queries never see their relevant tools, answerable ones do,
// and both modes rank every query.
func TestRankForTuning(t *testing.T) {
	c, err := eval.LoadCorpus("../testdata/topics")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	split := Split{HeldOut: 0.3, Abstain: 0.4}
	steps := 0
	hyb, lex, err := Rank(context.Background(), emb, []*eval.Corpus{c}, RankOptions{Split: split, Lexical: true, Logger: slog.New(slog.DiscardHandler), Step: func() { steps++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(hyb) != len(c.Queries) || len(lex) != len(c.Queries) || steps != len(c.Queries) {
		t.Fatalf("%d hybrid and %d lexical rankings, %d steps for %d queries", len(hyb), len(lex), steps, len(c.Queries))
	}
	abstain := 0
	for i, q := range hyb {
		if q.Abstain != split.IsAbstain(q.ID) || q.HeldOut != split.IsHeldOut(q.ID) || q.Corpus != c.Name {
			t.Errorf("%s: abstain %v, held out %v, corpus %q: not the split's", q.ID, q.Abstain, q.HeldOut, q.Corpus)
		}
		for _, rk := range [][]string{names(q.Hits), names(lex[i].Hits)} {
			has := contains(rk, q.Relevant[0])
			if q.Abstain && has {
				t.Errorf("abstention query %s still ranks its relevant tool %s", q.ID, q.Relevant[0])
			}
			if !q.Abstain && !has {
				t.Errorf("query %s does not rank its relevant tool %s at all: %v", q.ID, q.Relevant[0], rk)
			}
		}
		if q.Abstain {
			abstain++
		}
		for j := 1; j < len(q.Hits); j++ {
			if q.Hits[j].Score > q.Hits[j-1].Score {
				t.Fatalf("%s: hits not best first: %v", q.ID, q.Hits)
			}
		}
	}
	if abstain == 0 || abstain == len(hyb) {
		t.Fatalf("%d of %d queries are abstention queries; the test corpus should have both kinds", abstain, len(hyb))
	}
}

func names(hs []thresholds.Candidate) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
