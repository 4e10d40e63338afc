package eval

import (
	"math"
	"testing"
)

func TestMean(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{0.25}, 0.25},
		{"equal weight", []float64{1, 0, 0.5}, 0.5},
		{"undefined left out", []float64{nan, 1, 0}, 0.5},
		{"all undefined", []float64{nan, nan}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Mean(c.xs, func(x *float64) float64 { return *x }); got != c.want {
				t.Errorf("Mean(%v) = %v, want %v", c.xs, got, c.want)
			}
		})
	}
}

func TestMeanSumsInOrder(t *testing.T) {
	// The same values in the same order give the same bits as a plain sum
	// divided by the count (the figures of the shipped files were made so).
	xs := []float64{0.1, 0.2, 0.3, 1e-17, 0.7}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	if got, want := Mean(xs, func(x *float64) float64 { return *x }), sum/float64(len(xs)); got != want {
		t.Errorf("Mean = %v, want %v", got, want)
	}
}

func TestMacroOffers(t *testing.T) {
	ms := []OfferMetrics{
		{Answerable: 10, Abstain: 2, NoToolFits: 1, Hit: 0.8, Offered: 2, Accuracy: 0.75, AbstainRecall: 0.5, AbstainPrecision: 1},
		{Answerable: 5, Hit: 0.4, Offered: 3, Accuracy: 0.4},             // no abstain requests, never said
		{Answerable: 5, Abstain: 1, Hit: 0.6, Offered: 1, Accuracy: 0.5}, // abstain requests, never said
	}
	m := MacroOffers(ms)
	want := OfferMetrics{Corpus: "macro", Answerable: 20, Abstain: 3, NoToolFits: 1,
		Hit: (0.8 + 0.4 + 0.6) / 3, Offered: 2, Accuracy: (0.75 + 0.4 + 0.5) / 3,
		AbstainRecall: 0.5 / 2, AbstainPrecision: 1}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"hit", m.Hit, want.Hit}, {"offered", m.Offered, want.Offered}, {"accuracy", m.Accuracy, want.Accuracy},
		{"abstain recall", m.AbstainRecall, want.AbstainRecall}, {"abstain precision", m.AbstainPrecision, want.AbstainPrecision}} {
		if math.Abs(f.got-f.want) > 1e-12 {
			t.Errorf("MacroOffers %s = %v, want %v", f.name, f.got, f.want)
		}
	}
	m.Hit, m.Offered, m.Accuracy, m.AbstainRecall, m.AbstainPrecision = want.Hit, want.Offered, want.Accuracy, want.AbstainRecall, want.AbstainPrecision
	if m != want {
		t.Errorf("MacroOffers counts %+v, want %+v", m, want)
	}
}

func TestLoadCorpora(t *testing.T) {
	root := t.TempDir()
	writeCorpus(t, root, "b", `{"id":"1","query":"q","relevant":["t"]}`)
	writeCorpus(t, root, "a", `{"id":"1","query":"r","relevant":[]}`)
	cs, err := LoadCorpora([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "a" || cs[1].Name != "b" || cs[1].Queries[0].Text != "q" {
		t.Fatalf("LoadCorpora = %+v", cs)
	}
	bad := writeCorpus(t, t.TempDir(), "c", `{"id":"1"}`)
	if _, err := LoadCorpora([]string{bad}); err == nil {
		t.Error("a corpus that does not load: no error")
	}
}
