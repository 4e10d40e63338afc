package index

import (
	"context"
	"math"
	"testing"

	"github.com/toolsrv/toolsrv/learn"
)

func stepModel(w map[string]float64) *learn.Model {
	lin := func(names []string, w map[string]float64, b float64) learn.Linear {
		l := learn.Linear{Features: names, Mean: make([]float64, len(names)), Scale: make([]float64, len(names)), W: make([]float64, len(names)), B: b}
		for i, n := range names {
			l.Scale[i] = 1
			l.W[i] = w[n]
		}
		return l
	}
	return &learn.Model{ID: "learn/test", Embedder: "test/hash", Pool: 10,
		Cand: lin(learn.CandNames[:], w, 0), Ans: lin(learn.AnsNames[:], map[string]float64{"covAll": 4}, -2)}
}

func TestShortTermsMergeFields(t *testing.T) {
	lex := newLexicon()
	d := &document{fields: []field{{"weather now", weightName}, {"the weather forecast", weightDescription}, {"", weightKeywords}, {"city", weightArgs}, {"long prompt text", weightPrompt}}}
	lex.add(0, d.fields)
	var st shortTerms
	st.set(0, lex)
	for term, want := range map[string]uint32{"weather": 1<<fieldName | 1<<fieldDescription, "now": 1 << fieldName, "forecast": 1 << fieldDescription, "city": 1 << fieldArgs, "prompt": 0} {
		if got := st.mask(0, lex.dict[term]); got != want {
			t.Errorf("%s: mask %b, want %b", term, got, want)
		}
	}
	st.clear(0)
	if st.mask(0, lex.dict["weather"]) != 0 {
		t.Error("cleared slot still has terms")
	}
}

// TestLastStep: the model's weights decide the order, scores are
// answerability × shares, and NoLastStep (or another embedder family)
// gives the fixed fusion.
func TestLastStep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeMeta(t, dir, "forecast_tool", `{"description":"weather forecast, weather warnings and weather maps for any city","cmd":"cat"}`)
	writeMeta(t, dir, "weather", `{"description":"shows something","cmd":"cat"}`)
	writeMeta(t, dir, "calendar", `{"description":"calendar events","cmd":"cat"}`)
	cat := loadReg(t, dir).Catalog()
	q := Query{Text: "weather forecast"}
	for _, tc := range []struct {
		name    string
		model   *learn.Model
		noStep  bool
		top     string
		learned bool
	}{
		{"fixed fusion", stepModel(map[string]float64{"nameHit": 20}), true, "forecast_tool", false},
		{"name-hit model", stepModel(map[string]float64{"nameHit": 20}), false, "weather", true},
		{"score model", stepModel(map[string]float64{"score": 20}), false, "forecast_tool", true},
		{"other embedder family", func() *learn.Model {
			m := stepModel(map[string]float64{"nameHit": 20})
			m.Embedder = "builtin/v1"
			return m
		}(), false, "forecast_tool", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet(), LastStep: tc.model})
			if err := ix.Sync(ctx, cat); err != nil {
				t.Fatal(err)
			}
			qq := q
			qq.NoLastStep = tc.noStep
			r, err := ix.Rank(ctx, qq)
			if err != nil {
				t.Fatal(err)
			}
			if r.Hits[0].Name != tc.top {
				t.Fatalf("top %s, want %s (%+v)", r.Hits[0].Name, tc.top, r.Hits)
			}
			if (r.Answerable != nil) != tc.learned {
				t.Fatalf("answerable %v, want learned %v", r.Answerable, tc.learned)
			}
			if !tc.learned {
				return
			}
			var sum float64
			for i, h := range r.Hits {
				sum += h.Score
				if i > 0 && h.Score > r.Hits[i-1].Score {
					t.Fatalf("scores not best first: %+v", r.Hits)
				}
			}
			// the pool holds every tool: its scores add up to the answerability
			if math.Abs(sum-*r.Answerable) > 1e-9 {
				t.Fatalf("scores sum to %v, answerability %v", sum, *r.Answerable)
			}
			// a top-k ranking agrees with the full one
			k1, _ := ix.Rank(ctx, Query{Text: q.Text, K: 1})
			if k1.Hits[0].Name != tc.top || math.Abs(k1.Hits[0].Score-r.Hits[0].Score) > 1e-12 {
				t.Fatalf("top-1 %+v, full %+v", k1.Hits[0], r.Hits[0])
			}
		})
	}
}
