package embedding

import (
	"context"
	"slices"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/text"
)

// expansionTable has "car" and "automobile" on the same row and every other
// term orthogonal to them, so car's only close neighbour is automobile.
func expansionEmbedder(t *testing.T) *builtin.Embedder {
	t.Helper()
	words := []string{"car", "automobile", "rental", "hire", "weather", "forecast", "city"}
	var vocab []string
	for _, w := range words {
		vocab = append(vocab, text.Table().Terms(w)...)
	}
	slices.Sort(vocab)
	const dim = 8
	tb := &builtin.Table{Dim: dim, Vocab: vocab, Prior: make([]float32, len(vocab)), Vectors: make([]float32, len(vocab)*dim)}
	for i, v := range vocab {
		tb.Prior[i] = 1
		switch v {
		case text.Table().Terms("car")[0], text.Table().Terms("automobile")[0]:
			tb.Row(i)[0] = 1
		default:
			tb.Row(i)[1+i%(dim-1)] = 1
		}
	}
	e, err := builtin.FromTable(tb, builtin.Options{ID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExpansionReachesSynonym(t *testing.T) {
	e := expansionEmbedder(t)
	tools := []*registry.Tool{
		{Name: "rent", Description: "Automobile rental in any city"},
		{Name: "sky", Description: "Weather forecast for a city"},
		{Name: "other", Description: "Nothing related at all"},
	}
	b := newBM25(tools)
	x := newExpander(e, b, 3)
	for _, tc := range []struct {
		name       string
		o          Expansion
		wantWeight float64 // of "automobile" in the expanded query
	}{
		{"off", Expansion{}, 0},
		{"k1", Expansion{K: 1, Weight: 0.4}, 0.4},
		{"half", Expansion{K: 2, Weight: 0.5}, 0.5},
		{"mincos above", Expansion{K: 1, Weight: 0.4, MinCos: 1.5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := x.weights("car hire", tc.o)
			if w["car"] != 1 || w["hire"] != 1 {
				t.Fatalf("own words lost: %v", w)
			}
			if got := w["automobile"]; got < tc.wantWeight-1e-6 || got > tc.wantWeight+1e-6 {
				t.Fatalf("automobile weight %v, want %v (query %v)", got, tc.wantWeight, w)
			}
			s := b.weightedScores(w)
			if tc.wantWeight > 0 && !(s[0] > s[1] && s[0] > 0) {
				t.Fatalf("scores %v: the automobile tool should lead", s)
			}
			if tc.wantWeight == 0 && s[0] != 0 {
				t.Fatalf("scores %v: nothing should match car hire", s)
			}
		})
	}
	// Variants adds the catalog's inflections of a query word at weight 1.
	if w := x.weights("rentals", Expansion{}); w["rental"] != 0 {
		t.Fatalf("without Variants, rentals matched rental: %v", w)
	}
	if w := x.weights("rentals", Expansion{Variants: true}); w["rental"] != 1 || w["rentals"] != 1 {
		t.Fatalf("with Variants, weights %v, want rental and rentals at 1", w)
	}
	// Weight 1 and no expansion reproduce the reference BM25 exactly.
	if got, want := b.weightedScores(x.weights("weather in the city", Expansion{})), b.scores("weather in the city"); !slices.Equal(got, want) {
		t.Fatalf("weighted %v != reference %v", got, want)
	}
}

func TestEvaluateExpandedModes(t *testing.T) {
	e := expansionEmbedder(t)
	c := &Corpus{Name: "toy", Tools: []*registry.Tool{
		{Name: "rent", Description: "Automobile rental in any city"},
		{Name: "sky", Description: "Weather forecast for a city"},
	}, Queries: []eval.Query{{ID: "1", Text: "car hire", Relevant: []string{"rent"}}}}
	o := Expansion{K: 1, Weight: 0.5}
	r, err := EvaluateExpanded(context.Background(), c, e, map[string]Fusion{"hybrid": MinMax(0.5)}, []Expansion{o})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Modes["bm25 "+o.Name()][0]; m.R1 != 1 {
		t.Fatalf("expanded BM25 R@1 = %v, want 1 (modes %v)", m.R1, r.Modes)
	}
	if _, ok := r.Modes["hybrid "+o.Name()]; !ok {
		t.Fatalf("no expanded hybrid mode in %v", r.Modes)
	}
	if _, err := EvaluateExpanded(context.Background(), c, notBuiltin{e}, nil, []Expansion{o}); err == nil {
		t.Fatal("expansion with a non-builtin embedder did not fail")
	}
}

// notBuiltin hides the concrete type of an embedder.
type notBuiltin struct{ *builtin.Embedder }
