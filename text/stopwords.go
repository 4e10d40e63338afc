package text

import (
	"slices"
	"strings"
)

// Stopwords is a read-only set of lowercase words that an Analyzer drops.
type Stopwords struct {
	set map[string]struct{}
}

// Has reports whether w is in the set.
func (s *Stopwords) Has(w string) bool {
	_, ok := s.set[w]
	return ok
}

// Words returns the words of the set, sorted.
func (s *Stopwords) Words() []string {
	out := make([]string, 0, len(s.set))
	for w := range s.set {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// Len is the number of words in the set.
func (s *Stopwords) Len() int { return len(s.set) }

func newStopwords(words string) *Stopwords {
	s := &Stopwords{set: map[string]struct{}{}}
	for _, w := range strings.Fields(words) {
		s.set[w] = struct{}{}
	}
	return s
}

// The sets are built once and never changed.
var (
	indexStopwords = newStopwords(`a an and are as at be but by can could do does for from
		had has have how i if in into is it its me my of on or our please should so some
		than that the their them then there these they this to was we were what when where
		which who why will with would you your like`)

	tableStopwords = newStopwords(`
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves also may might must shall us
let lets please want wants like need needs tell know via etc eg ie yes okay ok hi hello
thanks thank`)
)

// IndexStopwords are the lexical index's stopwords: English function words
// (and "please"), which carry no information about which tool fits but do
// match short documents, and "like" ("like grep"). 62 words.
func IndexStopwords() *Stopwords { return indexStopwords }

// TableStopwords are the built-in embedder's stopwords: English function
// words and request filler ("please", "want", "need", "tell"): 153 words,
// the 62 of IndexStopwords among them.
// The shipped table was trained with this list: changing it means
// retraining the table.
func TableStopwords() *Stopwords { return tableStopwords }
