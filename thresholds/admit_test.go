package thresholds

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// Admit's levels offer the tool they were asked for, whatever the ranking
// and the levels in force, and they are valid, written with three
// decimals as a thresholds file holds them; every change it reports is
// a level that differs, and nothing else differs. The one tool no level
// may offer is one that matched no word of the message ranked below
// another (the noise rule: the tool before it may be offered whatever the
// levels): a matched tool, or the best, is always admitted.
func TestAdmitOffersTheTool(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	admitted, noise := 0, 0
	for i := 0; i < 3000; i++ {
		var hits []Candidate
		for _, n := range names[:rng.IntN(len(names))+1] {
			hits = append(hits, Candidate{n, rng.Float64() * rng.Float64(), rng.Float64() * 0.5})
		}
		lv := Levels{Min: round3(rng.Float64() * 0.2), Relative: []float64{0, 0.1, 0.3}[rng.IntN(3)], MaxTools: 1 + rng.IntN(4),
			MinAnswerable: round3(rng.Float64() * 0.5), Mass: []float64{0, 0.5, 0.9}[rng.IntN(3)],
			Evidence: []float64{0, 0.2, 0.4}[rng.IntN(3)]}
		lv.ColdMin = round3(lv.Min + 0.1)
		ans := rng.Float64()
		c := Context{Answerable: &ans, Tier: func(n string) registry.Tier {
			if n == "c" || n == "f" {
				return registry.Cold
			}
			return registry.Warm
		}, Unmatched: func(n string) bool { return n > "d" }}
		degraded := rng.IntN(3) == 0
		p := Policy{Levels: lv}
		if degraded && rng.IntN(2) == 0 {
			d := lv
			d.Min, d.ColdMin = 0.3, 0.4
			p.Degraded = &d
		}
		c.Degraded = degraded
		offered := p.Select(hits, c).Names()
		for _, h := range hits {
			if slices.Contains(offered, h.Name) {
				continue
			}
			q, ch, ok := p.Admit(hits, c, h.Name)
			if !ok && c.Unmatched(h.Name) && !bestOf(hits, h.Name) {
				noise++ // the noise rule, after a tool some level offers
				continue
			}
			if !ok {
				t.Fatalf("levels %+v, answerable %.3f, hits %v: %s cannot be admitted", p.For(degraded), ans, hits, h.Name)
			}
			admitted++
			if err := q.Validate(); err != nil {
				t.Fatalf("admitting %s: invalid levels: %v", h.Name, err)
			}
			// The file holds three decimals: the changed levels, so written,
			// offer it still.
			nl := q.For(degraded)
			for _, x := range ch {
				if x.To != math.Round(x.To*1000)/1000 {
					t.Fatalf("admitting %s: %s %v has more than three decimals", h.Name, x.Field, x.To)
				}
			}
			if !slices.Contains(q.Select(hits, c).Names(), h.Name) {
				t.Fatalf("levels %+v → %+v (%v), hits %v: %s still left out", p.For(degraded), nl, ch, hits, h.Name)
			}
			if len(ch) == 0 {
				t.Fatalf("admitting %s: no change reported", h.Name)
			}
			want := "policy."
			if degraded && p.Degraded != nil {
				want = "policy.degraded."
			}
			for _, x := range ch {
				if !strings.HasPrefix(x.Field, want) || x.From == x.To {
					t.Fatalf("admitting %s: change %+v (want fields under %s)", h.Name, x, want)
				}
			}
			// The changes are the whole difference: made by hand in a
			// file, they give the same levels.
			if by := applyChanges(p.For(degraded), ch); by != nl {
				t.Fatalf("admitting %s: changes %v make %+v, Admit's levels are %+v", h.Name, ch, by, nl)
			}
			if (p.Degraded == nil || !degraded) && q.Degraded != p.Degraded {
				t.Fatalf("admitting %s changed the degraded levels", h.Name)
			}
		}
	}
	if admitted < 1000 || noise < 100 {
		t.Fatalf("only %d tools admitted and %d refused as noise: the test does not exercise Admit", admitted, noise)
	}
}

// bestOf reports whether name scores highest of hits (ties by name, as
// Select orders them).
func bestOf(hits []Candidate, name string) bool {
	for _, h := range hits {
		if h.Name != name && before(h, Candidate{name, scoreOf(hits, name), 0}) {
			return false
		}
	}
	return true
}

func scoreOf(hits []Candidate, name string) float64 {
	for _, h := range hits {
		if h.Name == name {
			return h.Score
		}
	}
	return math.NaN()
}

// Each rule is lifted by the level that controls it, to the tool's own
// number: the smallest change, with the exact value.
func TestAdmitChanges(t *testing.T) {
	hits := []Candidate{{"best", 0.5, 0.2501}, {"second", 0.3125, 0}, {"cold", 0.1234, 0}, {"tiny", 0.0015, 0}}
	tier := func(n string) registry.Tier {
		if n == "cold" {
			return registry.Cold
		}
		return registry.Warm
	}
	low, high := 0.6431, 0.9
	cases := []struct {
		name string
		lv   Levels
		ans  *float64
		tool string
		want []Change
	}{
		{"coldMin", Levels{Min: 0.01, ColdMin: 0.15, MaxTools: 5}, nil, "cold", []Change{{"policy.coldMin", 0.15, 0.123}}},
		{"min", Levels{Min: 0.01, ColdMin: 0.01, MaxTools: 5}, nil, "tiny", []Change{{"policy.min", 0.01, 0.001}}},
		{"belowColdMin", Levels{Min: 0.001, ColdMin: 0.15, MaxTools: 5}, nil, "tiny", []Change{{"policy.coldMin", 0.15, 0.123}}},
		{"evidence", Levels{MaxTools: 5, Evidence: 0.3}, nil, "best", []Change{{"policy.evidence", 0.3, 0.25}}},
		{"maxTools", Levels{MaxTools: 1}, nil, "cold", []Change{{"policy.maxTools", 1, 3}}},
		{"relative", Levels{Relative: 0.7, MaxTools: 5}, nil, "second", []Change{{"policy.relative", 0.7, 0.625}}},
		{"mass", Levels{MaxTools: 5, Mass: 0.5}, &high, "second", []Change{{"policy.mass", 0.5, 0.556}}},
		{"answerability and maxTools", Levels{MaxTools: 1, MinAnswerable: 0.68}, &low, "second",
			[]Change{{"policy.minAnswerable", 0.68, 0.643}, {"policy.maxTools", 1, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unmatched := func(n string) bool { return n == "best" && tc.name == "evidence" }
			_, got, ok := Policy{Levels: tc.lv}.Admit(hits, Context{Tier: tier, Answerable: tc.ans, Unmatched: unmatched}, tc.tool)
			if !ok || !slices.Equal(got, tc.want) {
				t.Errorf("Admit %s: %v %v, want %v", tc.tool, got, ok, tc.want)
			}
		})
	}
	// A name the ranking lacks, or one offered twice, cannot be admitted.
	p := Policy{Levels: Levels{MaxTools: 5}}
	if _, _, ok := p.Admit(hits, Context{}, "absent"); ok {
		t.Error("admitted a tool that is not ranked")
	}
	twice := append([]Candidate{{"best", 0.5, 0}}, hits...)
	if _, _, ok := p.Admit(twice, Context{}, "best"); !ok {
		t.Error("a repeated name: its first place is offered and admitting it changes nothing, which is still an admission")
	}
}

// applyChanges makes the changes to lv as a hand edit of the file would.
func applyChanges(lv Levels, ch []Change) Levels {
	for _, c := range ch {
		field := c.Field[strings.LastIndexByte(c.Field, '.')+1:]
		switch field {
		case "min":
			lv.Min = c.To
		case "coldMin":
			lv.ColdMin = c.To
		case "relative":
			lv.Relative = c.To
		case "maxTools":
			lv.MaxTools = int(c.To)
		case "minAnswerable":
			lv.MinAnswerable = c.To
		case "mass":
			lv.Mass = c.To
		case "evidence":
			lv.Evidence = c.To
		default:
			panic("unknown field " + c.Field)
		}
	}
	return lv
}
