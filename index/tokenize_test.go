package index

import (
	"slices"
	"testing"
)

// The index's analysis is text.Index (tested there); these are the two
// views the index uses: tokens keep stopwords (the lexicon maps them to -1),
// terms drop them.
func TestTokensAndTerms(t *testing.T) {
	if got := tokens("What are the files of v2Data?"); !slices.Equal(got, []string{"what", "are", "the", "file", "of", "v2data"}) {
		t.Errorf("tokens = %q", got)
	}
	if got := terms("What are the files of v2Data?"); !slices.Equal(got, []string{"file", "v2data"}) {
		t.Errorf("terms = %q", got)
	}
	l := newLexicon()
	for _, w := range []string{"the", "what", "please"} {
		if id, ok := l.dict[w]; !ok || id != -1 {
			t.Errorf("lexicon[%q] = %d, %v; want the stopword id -1", w, id, ok)
		}
	}
}
