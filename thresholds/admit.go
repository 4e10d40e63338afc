package thresholds

import (
	"math"
)

// Change is one level of a thresholds file changed: Field is its path in
// the file ("policy.coldMin", "policy.degraded.min"), From the value in
// force and To the one that would do.
type Change struct {
	Field string  `json:"field"`
	From  float64 `json:"from"`
	To    float64 `json:"to"`
}

// admitSteps bounds how many times Admit changes a level besides
// maxTools (which it raises by one per tool it lets through before the
// one admitted).
const admitSteps = 16

// Admit finds levels under which Select would offer the ranked tool name
// from hits in context c: starting from the levels in force, it changes
// the level of the rule that leaves the tool out (Explain's verdict) just
// enough to let it through, and again for the next rule that does, until
// the tool is offered. It returns the policy with those levels and the
// changes made, or false when no change of the levels offers it: the name
// is not ranked or is repeated, the levels would not be valid, or a rule
// leaves it out that no level controls (noise: a tool that matched no word
// of the message, after another tool is offered). A tool below a cold
// tool that coldMin leaves out (belowColdMin) is let through by lowering
// coldMin to that tool's score. The changes are exact: a score is
// compared with a level rounded down to three decimals (up for mass), so
// the file's value, written with three decimals, still lets it through.
// Only the tools ranked up to name matter (walk decides in score order).
func (p Policy) Admit(hits []Candidate, c Context, name string) (Policy, []Change, bool) {
	orig := p.For(c.Degraded)
	prefix := "policy."
	if c.Degraded && p.Degraded != nil {
		prefix = "policy.degraded."
	}
	lv := orig
	for range admitSteps + len(hits) {
		q := p.with(c.Degraded, lv)
		vs := q.Explain(hits, c, 0)
		at := -1
		for i, v := range vs {
			if v.Name == name {
				at = i
				break
			}
		}
		if at < 0 {
			return p, nil, false
		}
		v := vs[at]
		best := vs[0].Score
		prev := lv
		switch v.Rule {
		case RuleOffered:
			if lv.Validate() != nil {
				return p, nil, false
			}
			return q, changes(prefix, orig, lv), true
		case RuleAnswerable:
			if c.Answerable == nil {
				return p, nil, false
			}
			lv.MinAnswerable = below(*c.Answerable, lv.MinAnswerable)
		case RuleMaxTools:
			lv.MaxTools++
		case RuleMin:
			lv.Min = below(v.Score, lv.Min)
		case RuleEvidence:
			lv.Evidence = below(denseOf(hits, name), lv.Evidence)
		case RuleColdMin:
			lv.ColdMin = math.Max(lv.Min, below(v.Score, lv.ColdMin))
		case RuleBelowCold:
			// A cold tool above it was left out by coldMin, which ends the
			// set: coldMin comes down to that tool's score first.
			cold := -1
			for i, u := range vs[:at] {
				if u.Rule == RuleColdMin {
					cold = i
				}
			}
			if cold < 0 {
				return p, nil, false
			}
			lv.ColdMin = math.Max(lv.Min, below(vs[cold].Score, lv.ColdMin))
		case RuleRelative:
			if best <= 0 {
				return p, nil, false
			}
			lv.Relative = below(v.Score/best, lv.Relative)
		case RuleMass:
			if c.Answerable == nil || *c.Answerable <= 0 {
				lv.Mass = 0 // no mass covers less than nothing: off
				break
			}
			covered := 0.0
			for _, u := range vs[:at] {
				if u.Rule == RuleOffered {
					covered += u.Score
				}
			}
			lv.Mass = above(covered / *c.Answerable, lv.Mass)
			if lv.Mass > 1 {
				lv.Mass = 0 // off: no mass within [0,1] covers less
			}
		default: // RuleRepeated, or a rule no level controls: RuleNoise (a
			// tool that matched no word of the message is never offered
			// after another)
			return p, nil, false
		}
		if lv == prev {
			return p, nil, false
		}
	}
	return p, nil, false
}

// denseOf is the embedding score of the ranked tool name (its first
// place).
func denseOf(hits []Candidate, name string) float64 {
	for _, h := range hits {
		if h.Name == name {
			return h.Dense
		}
	}
	return 0
}

// with is p with lv in force for rankings that are degraded or not.
func (p Policy) with(degraded bool, lv Levels) Policy {
	if degraded && p.Degraded != nil {
		d := lv
		p.Degraded = &d
		return p
	}
	p.Levels = lv
	return p
}

// below is x rounded down to three decimals, and below old when that is
// not (a score equal to a level already clears it: below old would only
// be reached if the comparison failed for rounding).
func below(x, old float64) float64 {
	v := math.Floor(x*1000) / 1000
	if v > x {
		v -= 0.001
	}
	if v >= old {
		v = old - 0.001
	}
	return math.Max(0, round3(v))
}

// above is x rounded up to three decimals, strictly above x and old.
func above(x, old float64) float64 {
	v := math.Ceil(x*1000) / 1000
	if v <= x {
		v += 0.001
	}
	if v <= old {
		v = old + 0.001
	}
	return round3(v)
}

// round3 drops the binary noise of a three-decimal value.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// changes lists the levels that differ between from and to, as fields of
// the thresholds file under prefix.
func changes(prefix string, from, to Levels) []Change {
	var out []Change
	for _, f := range []struct {
		name     string
		from, to float64
	}{
		{"minAnswerable", from.MinAnswerable, to.MinAnswerable},
		{"maxTools", float64(from.MaxTools), float64(to.MaxTools)},
		{"min", from.Min, to.Min},
		{"relative", from.Relative, to.Relative},
		{"mass", from.Mass, to.Mass},
		{"evidence", from.Evidence, to.Evidence},
		{"coldMin", from.ColdMin, to.ColdMin},
	} {
		if f.from != f.to {
			out = append(out, Change{Field: prefix + f.name, From: f.from, To: f.to})
		}
	}
	return out
}
