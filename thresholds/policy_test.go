package thresholds

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

func TestSelect(t *testing.T) {
	base := Policy{Levels: Levels{Min: 0.4, ColdMin: 0.6, Relative: 0.5, MaxTools: 3}}
	tiers := map[string]registry.Tier{"frost": registry.Cold, "fire": registry.Hot, "ice": registry.Cold}
	tier := func(n string) registry.Tier { return tiers[n] }
	tests := []struct {
		name     string
		policy   Policy
		hits     []Candidate
		ctx      Context
		want     []string
		why      []Why
		noneFits bool
		reason   string
	}{
		{
			name: "min score",
			hits: []Candidate{{"a", 0.9, 0}, {"b", 0.5, 0}, {"c", 0.39, 0}},
			want: []string{"a", "b"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "unsorted input is sorted, ties by name",
			hits: []Candidate{{"b", 0.6, 0}, {"c", 0.8, 0}, {"a", 0.6, 0}},
			want: []string{"c", "a", "b"}, why: []Why{ByScore, ByScore, ByScore},
		},
		{
			name: "relative cut drops tools far below the best",
			hits: []Candidate{{"a", 0.95, 0}, {"b", 0.47, 0}, {"c", 0.45, 0}},
			want: []string{"a"}, why: []Why{ByScore},
		},
		{
			name:   "relative cut at exactly the fraction keeps the tool",
			policy: Policy{Levels: Levels{Min: 0.1, ColdMin: 0.1, Relative: 0.5, MaxTools: 5}},
			hits:   []Candidate{{"a", 0.8, 0}, {"b", 0.4, 0}, {"c", 0.3999, 0}},
			want:   []string{"a", "b"}, why: []Why{ByScore, ByScore},
		},
		{
			name:   "relative 0 disables the cut",
			policy: Policy{Levels: Levels{Min: 0.1, ColdMin: 0.1, Relative: 0, MaxTools: 5}},
			hits:   []Candidate{{"a", 0.99, 0}, {"b", 0.11, 0}},
			want:   []string{"a", "b"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "max count",
			hits: []Candidate{{"a", 0.9, 0}, {"b", 0.85, 0}, {"c", 0.8, 0}, {"d", 0.79, 0}, {"e", 0.7, 0}},
			want: []string{"a", "b", "c"}, why: []Why{ByScore, ByScore, ByScore},
		},
		{
			name: "a cold tool below the stricter min ends the set: no worse tool in its place",
			hits: []Candidate{{"a", 0.7, 0}, {"frost", 0.55, 0}, {"b", 0.5, 0}},
			ctx:  Context{Tier: tier},
			want: []string{"a"}, why: []Why{ByScore},
		},
		{
			name: "cold tool above the stricter min is offered",
			hits: []Candidate{{"frost", 0.65, 0}, {"a", 0.5, 0}},
			ctx:  Context{Tier: tier},
			want: []string{"frost", "a"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "the best tool is offered whatever the cold min, and the tools after it as usual",
			hits: []Candidate{{"ice", 0.58, 0}, {"a", 0.56, 0}, {"frost", 0.5, 0}, {"b", 0.45, 0}},
			ctx:  Context{Tier: tier},
			want: []string{"ice", "a"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "nothing clears: no tool fits, never the least bad",
			hits: []Candidate{{"a", 0.39, 0}, {"b", 0.2, 0}, {"c", 0.1, 0}},
			want: []string{}, why: []Why{},
			noneFits: true, reason: "no tool fits: best score 0.390 < min 0.400",
		},
		{
			name: "only a cold tool clears min: it is the best, so it is offered",
			hits: []Candidate{{"frost", 0.5, 0}, {"a", 0.2, 0}},
			ctx:  Context{Tier: tier},
			want: []string{"frost"}, why: []Why{ByScore},
		},
		{
			name: "a tool that matched no word of the message never pads the set",
			hits: []Candidate{{"a", 0.9, 0}, {"b", 0.85, 0}, {"c", 0.8, 0}, {"d", 0.79, 0}},
			ctx:  Context{Unmatched: func(n string) bool { return n == "b" || n == "c" }},
			want: []string{"a", "d"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "the best tool is offered alone when it and the rest matched no word",
			hits: []Candidate{{"a", 0.9, 0}, {"b", 0.85, 0}, {"c", 0.8, 0}},
			ctx:  Context{Unmatched: func(string) bool { return true }},
			want: []string{"a"}, why: []Why{ByScore},
		},
		{
			name: "empty ranking: no tool fits",
			want: []string{}, why: []Why{},
			noneFits: true, reason: "nothing was ranked",
		},
		{
			name: "hot tools always offered, after ranked ones, on top of max",
			hits: []Candidate{{"a", 0.9, 0}, {"b", 0.85, 0}, {"c", 0.8, 0}, {"fire", 0.05, 0}},
			ctx:  Context{Tier: tier, Hot: []string{"fire", "unranked"}},
			want: []string{"a", "b", "c", "fire", "unranked"}, why: []Why{ByScore, ByScore, ByScore, ByTier, ByTier},
		},
		{
			name: "hot tools offered even when no tool fits, and no tool fits is still said",
			hits: []Candidate{{"a", 0.1, 0}},
			ctx:  Context{Hot: []string{"fire"}},
			want: []string{"fire"}, why: []Why{ByTier},
			noneFits: true, reason: "1 hot tool(s) offered",
		},
		{
			name: "a hot tool that clears by score is listed once, as ranked",
			hits: []Candidate{{"fire", 0.9, 0}, {"a", 0.8, 0}},
			ctx:  Context{Hot: []string{"fire"}},
			want: []string{"fire", "a"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "duplicate hits are offered once",
			hits: []Candidate{{"a", 0.9, 0}, {"a", 0.9, 0}, {"b", 0.8, 0}},
			want: []string{"a", "b"}, why: []Why{ByScore, ByScore},
		},
		{
			name: "degraded ranking uses the degraded levels",
			policy: Policy{Levels: Levels{Min: 0.4, ColdMin: 0.6, Relative: 0.5, MaxTools: 3},
				Degraded: &Levels{Min: 0.7, ColdMin: 0.8, Relative: 0.5, MaxTools: 1}},
			hits: []Candidate{{"a", 0.75, 0}, {"b", 0.72, 0}, {"c", 0.5, 0}},
			ctx:  Context{Degraded: true},
			want: []string{"a"}, why: []Why{ByScore},
		},
		{
			name: "degraded ranking without degraded levels uses the normal ones",
			hits: []Candidate{{"a", 0.75, 0}, {"b", 0.72, 0}, {"c", 0.5, 0}},
			ctx:  Context{Degraded: true},
			want: []string{"a", "b", "c"}, why: []Why{ByScore, ByScore, ByScore},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			if p.MaxTools == 0 {
				p = base
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("test policy invalid: %v", err)
			}
			sel := p.Select(tc.hits, tc.ctx)
			if got := sel.Names(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("offered %v, want %v (reason %q)", got, tc.want, sel.Reason)
			}
			for i, o := range sel.Tools {
				if o.Why != tc.why[i] {
					t.Errorf("%s offered because %q, want %q", o.Name, o.Why, tc.why[i])
				}
			}
			if sel.NoToolFits != tc.noneFits {
				t.Errorf("NoToolFits = %v, want %v (reason %q)", sel.NoToolFits, tc.noneFits, sel.Reason)
			}
			if tc.reason != "" && !strings.Contains(sel.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", sel.Reason, tc.reason)
			}
			if sel.Degraded != tc.ctx.Degraded {
				t.Errorf("Degraded = %v, want %v", sel.Degraded, tc.ctx.Degraded)
			}
		})
	}
}

func TestLevelsValidate(t *testing.T) {
	tests := []struct {
		name string
		l    Levels
		bad  string
	}{
		{"ok", Levels{Min: 0.3, ColdMin: 0.3, Relative: 0.5, MaxTools: 1}, ""},
		{"cold below min", Levels{Min: 0.5, ColdMin: 0.4, Relative: 0.5, MaxTools: 3}, "coldMin"},
		{"min above one", Levels{Min: 1.5, ColdMin: 1.5, MaxTools: 3}, "within [0,1]"},
		{"negative relative", Levels{Min: 0.1, ColdMin: 0.1, Relative: -0.1, MaxTools: 3}, "relative"},
		{"no tools", Levels{Min: 0.1, ColdMin: 0.1, MaxTools: 0}, "maxTools"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Validate()
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.bad)
			}
		})
	}
}

func TestApplyUsesRankingDegraded(t *testing.T) {
	p := Policy{Levels: Levels{Min: 0.3, ColdMin: 0.3, Relative: 0, MaxTools: 5},
		Degraded: &Levels{Min: 0.8, ColdMin: 0.8, Relative: 0, MaxTools: 5}}
	r := index.Ranking{Hits: []index.Hit{{Name: "a", Score: 0.9, Lexical: 0.5, Words: true}, {Name: "b", Score: 0.5, Lexical: 0.2, Words: true}}}
	if got := p.Apply(r, nil, nil).Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("normal ranking offered %v", got)
	}
	r.Degraded = true
	if got := p.Apply(r, nil, nil).Names(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("degraded ranking offered %v, want the stricter degraded levels", got)
	}
}

// BenchmarkSelect: the policy on a top-50 ranking (it runs on every rank).
func BenchmarkSelect(b *testing.B) {
	hits := make([]Candidate, 50)
	for i := range hits {
		hits[i] = Candidate{Name: "tool" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Score: 1 - float64(i)/60}
	}
	p := Policy{Levels: Levels{Min: 0.3, ColdMin: 0.4, Relative: 0.5, MaxTools: 5}}
	c := Context{Hot: []string{"shell"}}
	b.ReportAllocs()
	for b.Loop() {
		p.Select(hits, c)
	}
}

// TestSelectLearned: version 2 levels on learned scores (answerability ×
// share): the answerability cut says "no tool fits", the mass decides how
// many tools, a ranking without answerability ignores both.
func TestSelectLearned(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	hits := []Candidate{{"a", 0.5, 0}, {"b", 0.3, 0}, {"c", 0.1, 0}, {"d", 0.05, 0}}
	cold := func(n string) registry.Tier {
		if n == "b" {
			return registry.Cold
		}
		return registry.Warm
	}
	for _, tc := range []struct {
		name   string
		lv     Levels
		ans    *float64
		tier   func(string) registry.Tier
		want   []string
		none   bool
		reason string
	}{
		{"answerable below the cut", Levels{MinAnswerable: 0.7, Mass: 1, MaxTools: 3, ColdMin: 0}, f(0.6), nil, nil, true, "answerability 0.600 < 0.700"},
		{"a clear winner is offered alone", Levels{MinAnswerable: 0.5, Mass: 0.5, MaxTools: 3}, f(0.95), nil, []string{"a"}, false, "answerability 0.950"},
		{"more mass, more tools", Levels{MinAnswerable: 0.5, Mass: 0.9, MaxTools: 3}, f(0.95), nil, []string{"a", "b", "c"}, false, ""},
		{"max tools caps the mass", Levels{MinAnswerable: 0.5, Mass: 1, MaxTools: 2}, f(0.95), nil, []string{"a", "b"}, false, ""},
		{"cold tool below coldMin ends the set", Levels{MinAnswerable: 0.5, Mass: 0.9, MaxTools: 3, ColdMin: 0.4}, f(0.95), cold, []string{"a"}, false, ""},
		{"no answerability: mass and cut ignored", Levels{Min: 0.2, ColdMin: 0.2, MinAnswerable: 0.99, Mass: 0.1, MaxTools: 3}, nil, nil, []string{"a", "b"}, false, "cleared min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.lv.Validate(); err != nil {
				t.Fatal(err)
			}
			s := Policy{Levels: tc.lv}.Select(hits, Context{Answerable: tc.ans, Tier: tc.tier})
			if !slices.Equal(s.Names(), tc.want) || s.NoToolFits != tc.none {
				t.Fatalf("offered %v (none %v), want %v (none %v): %s", s.Names(), s.NoToolFits, tc.want, tc.none, s.Reason)
			}
			if !strings.Contains(s.Reason, tc.reason) {
				t.Fatalf("reason %q lacks %q", s.Reason, tc.reason)
			}
		})
	}
	if err := (Levels{MinAnswerable: 1.5, MaxTools: 1}).Validate(); err == nil {
		t.Error("minAnswerable 1.5 validated")
	}
}

// The evidence rule: a tool that matched no word of the message needs an
// embedding score of at least evidence to be offered, even as the best;
// a tool with a matched word is offered in its place, and a weak best
// with nothing matched is "no tool fits".
func TestSelectEvidence(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name      string
		hits      []Candidate
		unmatched []string
		evidence  float64
		want      []string
		reason    string
	}{
		{"a weak best that matched nothing", []Candidate{{"a", 0.37, 0.05}, {"b", 0.13, 0.02}}, []string{"a", "b"}, 0.2, nil,
			"no tool matched a word of the message, and the best one's embedding score 0.050 < evidence 0.200"},
		{"a close one is offered", []Candidate{{"a", 0.37, 0.35}, {"b", 0.13, 0.02}}, []string{"a", "b"}, 0.2, []string{"a"}, ""},
		{"a matched tool comes in its place", []Candidate{{"a", 0.37, 0.05}, {"b", 0.13, 0.02}}, []string{"a"}, 0.2, []string{"b"}, ""},
		{"a matched best needs no embedding score", []Candidate{{"a", 0.37, 0.05}}, nil, 0.2, []string{"a"}, ""},
		{"off at 0", []Candidate{{"a", 0.37, 0.05}, {"b", 0.13, 0.02}}, []string{"a", "b"}, 0, []string{"a"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lv := Levels{MinAnswerable: 0.5, Mass: 0.9, MaxTools: 3, Evidence: tc.evidence}
			c := Context{Answerable: f(0.7), Unmatched: func(n string) bool { return slices.Contains(tc.unmatched, n) }}
			s := Policy{Levels: lv}.Select(tc.hits, c)
			if !slices.Equal(s.Names(), tc.want) || s.NoToolFits != (len(tc.want) == 0) {
				t.Fatalf("offered %v (none %v), want %v: %s", s.Names(), s.NoToolFits, tc.want, s.Reason)
			}
			if !strings.Contains(s.Reason, tc.reason) {
				t.Fatalf("reason %q lacks %q", s.Reason, tc.reason)
			}
			if vs := (Policy{Levels: lv}).Explain(tc.hits, c, 0); len(tc.want) == 0 && vs[0].Rule != RuleEvidence {
				t.Errorf("Explain: %+v, want the best left out by %s", vs[0], RuleEvidence)
			}
		})
	}
	if err := (Levels{Evidence: 1.5, MaxTools: 1}).Validate(); err == nil {
		t.Error("evidence 1.5 validated")
	}
}
