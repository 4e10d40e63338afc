package text

import (
	"slices"
	"testing"
)

func TestStopwords(t *testing.T) {
	ix, tb := IndexStopwords(), TableStopwords()
	if ix.Len() != 62 || tb.Len() != 153 {
		t.Errorf("%d index and %d table stopwords, want 62 and 153", ix.Len(), tb.Len())
	}
	for _, w := range (S{"the", "please", "what", "i", "a"}) {
		if !ix.Has(w) || !tb.Has(w) {
			t.Errorf("%q: index %v, table %v; want both", w, ix.Has(w), tb.Has(w))
		}
	}
	for _, w := range (S{"want", "need", "tell", "thanks", "not", "no"}) {
		if ix.Has(w) || !tb.Has(w) {
			t.Errorf("%q: index %v, table %v; want the table only", w, ix.Has(w), tb.Has(w))
		}
	}
	if ix.Has("The") || ix.Has("") || ix.Has("file") {
		t.Error("stopwords are lowercase words")
	}
	// The index list is a subset of the table list.
	var only S
	for _, w := range ix.Words() {
		if !tb.Has(w) {
			only = append(only, w)
		}
	}
	if !slices.IsSorted(ix.Words()) || len(only) != 0 {
		t.Errorf("index stopwords that are not table stopwords: %q", only)
	}
}
