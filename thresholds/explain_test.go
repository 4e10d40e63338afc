package thresholds

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// Explain offers exactly what Select offers, in the same order, whatever
// the ranking and levels.
func TestExplainAgreesWithSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i := 0; i < 2000; i++ {
		var hits []Candidate
		for _, n := range names[:rng.IntN(len(names))+1] {
			hits = append(hits, Candidate{n, rng.Float64() * rng.Float64(), rng.Float64() * 0.5})
		}
		lv := Levels{Min: rng.Float64() * 0.2, Relative: []float64{0, 0.1, 0.3}[rng.IntN(3)], MaxTools: 1 + rng.IntN(4),
			MinAnswerable: rng.Float64() * 0.5, Mass: []float64{0, 0.5, 0.9}[rng.IntN(3)]}
		lv.ColdMin = lv.Min + 0.1
		ans := rng.Float64()
		unmatched := map[string]bool{}
		for _, n := range names {
			unmatched[n] = rng.IntN(3) == 0
		}
		c := Context{Answerable: &ans, Tier: func(n string) registry.Tier {
			if n == "c" || n == "e" {
				return registry.Cold
			}
			return registry.Warm
		}, Unmatched: func(n string) bool { return unmatched[n] }}
		p := Policy{Levels: lv}
		sel := p.Select(hits, c)
		var got []string
		ex := p.Explain(hits, c, 0)
		for _, v := range ex {
			if v.Rule == RuleOffered {
				got = append(got, v.Name)
			} else if v.Detail == "" {
				t.Fatalf("left out %s by %s with no detail", v.Name, v.Rule)
			}
		}
		if !slices.Equal(got, sel.Names()) {
			t.Fatalf("levels %+v, answerable %.3f, hits %v: Explain offers %v, Select %v", lv, ans, hits, got, sel.Names())
		}
		if len(ex) != len(hits) {
			t.Fatalf("Explain gave %d verdicts for %d hits", len(ex), len(hits))
		}
	}
}

// Each rule is named for the tool it leaves out.
func TestExplainRules(t *testing.T) {
	hits := []Candidate{{"best", 0.5, 0}, {"second", 0.3, 0}, {"cold", 0.12, 0}, {"noise", 0.04, 0}, {"tiny", 0.001, 0}}
	tier := func(n string) registry.Tier {
		if n == "cold" {
			return registry.Cold
		}
		return registry.Warm
	}
	low, high := 0.3, 0.9
	cases := []struct {
		name string
		lv   Levels
		ans  *float64
		un   func(string) bool
		want []Rule
	}{
		// A cold tool below coldMin ends the set: noise is not offered in
		// its place.
		{"min and cold", Levels{Min: 0.01, ColdMin: 0.2, MaxTools: 5}, nil, nil, []Rule{RuleOffered, RuleOffered, RuleColdMin, RuleBelowCold, RuleMin}},
		{"maxTools", Levels{Min: 0, ColdMin: 0, MaxTools: 2}, nil, nil, []Rule{RuleOffered, RuleOffered, RuleMaxTools, RuleMaxTools, RuleMaxTools}},
		{"relative", Levels{Min: 0, ColdMin: 0, Relative: 0.2, MaxTools: 5}, nil, nil, []Rule{RuleOffered, RuleOffered, RuleOffered, RuleRelative, RuleRelative}},
		{"mass", Levels{Min: 0, ColdMin: 0, MaxTools: 5, Mass: 0.85}, &high, nil, []Rule{RuleOffered, RuleOffered, RuleMass, RuleMass, RuleMass}},
		{"answerability", Levels{Min: 0, ColdMin: 0, MaxTools: 5, MinAnswerable: 0.5}, &low, nil, []Rule{RuleAnswerable, RuleAnswerable, RuleAnswerable, RuleAnswerable, RuleAnswerable}},
		// No unmatched tool pads the set, however close to the best
		// (second); a matched one after them is offered.
		{"noise", Levels{Min: 0, ColdMin: 0, MaxTools: 5}, nil, func(n string) bool { return n != "best" && n != "tiny" }, []Rule{RuleOffered, RuleNoise, RuleNoise, RuleNoise, RuleOffered}},
		// The best tool is offered even when it matched no word.
		{"noise spares the best", Levels{Min: 0, ColdMin: 0, MaxTools: 2}, nil, func(string) bool { return true }, []Rule{RuleOffered, RuleNoise, RuleNoise, RuleNoise, RuleNoise}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []Rule
			for _, v := range (Policy{Levels: tc.lv}).Explain(hits, Context{Tier: tier, Answerable: tc.ans, Unmatched: tc.un}, 0) {
				got = append(got, v.Rule)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rules %v, want %v", got, tc.want)
			}
		})
	}
}
