package tune

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/toolsrv/toolsrv/thresholds"
)

// The sweep's fast path must offer exactly what the real policy offers.
func TestFastSelectMatchesPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		hits := make([]thresholds.Candidate, rng.IntN(TopHits+1))
		s := 1.0
		for j := range hits {
			s -= rng.Float64() * 0.2
			if s < 0 {
				s = 0
			}
			hits[j] = thresholds.Candidate{Name: fmt.Sprintf("t%02d", j), Score: s, Dense: rng.Float64() * 0.5}
		}
		unmatched := make([]bool, len(hits))
		for j := range unmatched {
			unmatched[j] = rng.IntN(3) == 0
		}
		min := float64(rng.IntN(100)) / 100
		l := thresholds.Levels{Min: min, ColdMin: min, Relative: float64(rng.IntN(11)) / 10, MaxTools: 1 + rng.IntN(8), Evidence: float64(rng.IntN(5)) / 10}
		sel := thresholds.Policy{Levels: l}.Select(hits, thresholds.Context{Unmatched: func(name string) bool {
			for j, h := range hits {
				if h.Name == name {
					return unmatched[j]
				}
			}
			return false
		}})
		mask, n := fastSelect(hits, unmatched, l, nil)
		want := make([]string, 0, n)
		for j, h := range hits {
			if mask&(1<<j) != 0 {
				want = append(want, h.Name)
			}
		}
		if len(want) != n {
			t.Fatalf("fastSelect counts %d, its mask holds %d", n, len(want))
		}
		if got := sel.Names(); !reflect.DeepEqual(got, want) {
			t.Fatalf("levels %+v on %v: policy offers %v, sweep counts %v", l, hits, got, want)
		}
		if sel.NoToolFits != (n == 0) {
			t.Fatalf("NoToolFits %v with %d offered", sel.NoToolFits, n)
		}
	}
}

func TestSplitIsStableAndProportional(t *testing.T) {
	s := Split{HeldOut: 0.3, Abstain: 0.2}
	// The split of a query depends on its ID alone, and must not change
	// between versions (tuning runs and their held-out figures are
	// reproducible): the first 40 decisions, as recorded.
	const wantHeld, wantAbstain = "0010100010001000000000001100100010000001", "1000000100000010000000000110110010000000"
	var gotHeld, gotAbstain []byte
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("q-%d", i)
		gotHeld = append(gotHeld, "01"[b2i(s.IsHeldOut(id))])
		gotAbstain = append(gotAbstain, "01"[b2i(s.IsAbstain(id))])
	}
	if string(gotHeld) != wantHeld || string(gotAbstain) != wantAbstain {
		t.Fatalf("the split changed:\nheld out %s, want %s\nabstain  %s, want %s", gotHeld, wantHeld, gotAbstain, wantAbstain)
	}
	held, abst := 0, 0
	for i := 0; i < 10000; i++ {
		id := fmt.Sprintf("q-%d", i)
		if s.IsHeldOut(id) {
			held++
		}
		if s.IsAbstain(id) {
			abst++
		}
	}
	if held < 2800 || held > 3200 || abst < 1800 || abst > 2200 {
		t.Fatalf("held out %d, abstain %d of 10000; want about 3000 and 2000", held, abst)
	}
	if !(Split{HeldOut: 1}).IsHeldOut("x") || (Split{}).IsHeldOut("x") {
		t.Fatal("shares 0 and 1 are not respected")
	}
}

func TestEvaluateFigures(t *testing.T) {
	c := func(n string, s float64) thresholds.Candidate { return thresholds.Candidate{Name: n, Score: s} }
	qs := []Query{
		{Corpus: "x", ID: "1", Relevant: []string{"a"}, Hits: []thresholds.Candidate{c("a", 0.9), c("b", 0.8), c("c", 0.2)}},
		{Corpus: "x", ID: "2", Relevant: []string{"a", "c"}, Hits: []thresholds.Candidate{c("b", 0.7), c("a", 0.6), c("c", 0.1)}},
		{Corpus: "x", ID: "3", Relevant: []string{"z"}, Hits: []thresholds.Candidate{c("b", 0.3)}},
		{Corpus: "x", ID: "4", Abstain: true, Relevant: []string{"z"}, Hits: []thresholds.Candidate{c("b", 0.2)}},
		{Corpus: "x", ID: "5", Abstain: true, Relevant: []string{"z"}, Hits: []thresholds.Candidate{c("b", 0.9)}},
	}
	f := Evaluate(qs, thresholds.Levels{Min: 0.5, ColdMin: 0.5, Relative: 0, MaxTools: 5})["x"]
	// q1 offers a,b (recall 1, precision .5); q2 offers b,a (recall .5,
	// precision .5); q3 offers nothing (recall 0, said none wrongly);
	// q4 says none (right); q5 offers b (wrong).
	want := thresholds.Figures{Queries: 3, Abstain: 2, Recall: 0.5, Precision: 0.5, Offered: 4.0 / 3, AbstainRecall: 0.5, AbstainPrecision: 0.5,
		Hit: 2.0 / 3, Accuracy: 3.0 / 5}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("figures %+v\nwant    %+v", f, want)
	}
}

func TestSweepMeetsObjective(t *testing.T) {
	// Relevant tools score around 0.7, others below 0.5, and abstention
	// queries' best remaining tool is low: the sweep must find a minimum
	// between the two that keeps recall and abstains.
	rng := rand.New(rand.NewPCG(3, 4))
	var qs []Query
	split := Split{HeldOut: 0.3, Abstain: 0.25}
	for i := 0; i < 600; i++ {
		id := fmt.Sprintf("q%d", i)
		q := Query{Corpus: []string{"x", "y"}[i%2], ID: id, Relevant: []string{"good"}, HeldOut: split.IsHeldOut(id), Abstain: split.IsAbstain(id)}
		if !q.Abstain {
			q.Hits = append(q.Hits, thresholds.Candidate{Name: "good", Score: 0.65 + 0.1*rng.Float64()})
		}
		for j := 0; j < 5; j++ {
			q.Hits = append(q.Hits, thresholds.Candidate{Name: fmt.Sprintf("bad%d", j), Score: 0.4 * rng.Float64()})
		}
		sortHits(q.Hits)
		qs = append(qs, q)
	}
	obj := Objective{MaxOffered: 2, MinAbstain: 0.9}
	calls := 0
	res := Sweep(qs, DefaultGrid(), obj, func(done, total int) { calls++ })
	if calls != len(DefaultGrid().Min)*len(DefaultGrid().Relative)*len(DefaultGrid().MaxTools) {
		t.Errorf("progress called %d times", calls)
	}
	if !res.Feasible {
		t.Fatalf("no feasible setting found; chosen %+v", res.Chosen)
	}
	m := MacroFigures(res.HeldOut)
	if m.Recall < 0.99 || m.AbstainRecall < 0.8 || m.Offered > 2 {
		t.Fatalf("held-out figures %+v with levels %+v", m, res.Chosen.Levels)
	}
	if l := res.Chosen.Levels; l.Min < 0.3 || l.Min > 0.65 {
		t.Fatalf("chosen min %.2f is not between the bad and good scores", l.Min)
	}
	if len(res.Curve("min")) != len(DefaultGrid().Min) || len(res.Curve("relative")) != len(DefaultGrid().Relative) {
		t.Fatalf("curves have %d and %d points", len(res.Curve("min")), len(res.Curve("relative")))
	}
}

func sortHits(h []thresholds.Candidate) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && h[j].Score > h[j-1].Score; j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Of the settings within the tolerance of the best accuracy, the sweep
// takes the one offering fewest tools among those that hit as often: it
// does not buy fewer tools by saying "no tool fits" to answerable queries
// (here minAnswerable 0.6 would: as accurate within 0.01, 1.7 tools
// instead of 2, but a sixth of the answerable queries missed).
func TestToleranceKeepsHits(t *testing.T) {
	c := func(n string, s float64) thresholds.Candidate { return thresholds.Candidate{Name: n, Score: s} }
	high, low := 0.9, 0.5
	var qs []Query
	for i := range 100 {
		qs = append(qs, Query{Corpus: "x", ID: fmt.Sprintf("a%d", i), Relevant: []string{"good"}, Answerable: &high,
			Hits: []thresholds.Candidate{c("good", 0.8), c("other", 0.1)}})
	}
	for i := range 21 {
		qs = append(qs, Query{Corpus: "x", ID: fmt.Sprintf("b%d", i), Relevant: []string{"good"}, Answerable: &low,
			Hits: []thresholds.Candidate{c("good", 0.4), c("other", 0.3)}})
	}
	for i := range 20 {
		qs = append(qs, Query{Corpus: "x", ID: fmt.Sprintf("c%d", i), Relevant: []string{"good"}, Abstain: true, Answerable: &low,
			Hits: []thresholds.Candidate{c("other", 0.4), c("more", 0.3)}})
	}
	g := Grid{Min: []float64{0}, Relative: []float64{0}, MaxTools: []int{2}, MinAnswerable: []float64{0, 0.6}, Mass: []float64{1, 0.8}}
	res := Sweep(qs, g, Objective{MaxOffered: 3, Accuracy: true, Tolerance: 0.01}, nil)
	if got := res.Chosen.Levels; got.MinAnswerable != 0 || got.Mass != 0.8 {
		t.Fatalf("chosen %+v (hit %.3f, %.2f tools); want minAnswerable 0 and mass 0.8: as many hits, fewer tools", got, res.Chosen.Macro.Hit, res.Chosen.Macro.Offered)
	}
	if res.Chosen.Macro.Hit != 1 {
		t.Errorf("chosen hit %.3f, want 1", res.Chosen.Macro.Hit)
	}
	// Without the tolerance, the most accurate setting.
	res = Sweep(qs, g, Objective{MaxOffered: 3, Accuracy: true}, nil)
	if got := res.Chosen.Levels; got.MinAnswerable != 0 {
		t.Fatalf("without tolerance: chosen %+v", got)
	}
}
