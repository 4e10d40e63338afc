package index

import "math"

// BM25 parameters (the usual defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// lexicon is an incremental BM25F-style index: each field's words count with
// the field's weight in the term frequency and in the document length.
// Documents live in slots shared with the dense matrix. Not safe for
// concurrent use; the Index guards it.
type lexicon struct {
	postings map[string][]posting // term → documents that contain it (any order)
	docLen   []float32            // by slot; 0 for a free slot
	docTerms [][]string           // by slot: the distinct terms, for removal
	totalLen float64
	n        int
}

// posting is one document's weighted term frequency.
type posting struct {
	slot int32
	tf   float32
}

func newLexicon() *lexicon {
	return &lexicon{postings: map[string][]posting{}}
}

// add indexes the fields of a document in slot (which must be free).
func (l *lexicon) add(slot int, fields []field) {
	for len(l.docLen) <= slot {
		l.docLen = append(l.docLen, 0)
		l.docTerms = append(l.docTerms, nil)
	}
	tf := map[string]float32{}
	var length float32
	for _, f := range fields {
		for _, t := range terms(f.text) {
			tf[t] += f.weight
			length += f.weight
		}
	}
	if length == 0 {
		length = 1 // an empty document still occupies its slot
	}
	terms := make([]string, 0, len(tf))
	for t, w := range tf {
		l.postings[t] = append(l.postings[t], posting{int32(slot), w})
		terms = append(terms, t)
	}
	l.docLen[slot] = length
	l.docTerms[slot] = terms
	l.totalLen += float64(length)
	l.n++
}

// remove drops the document in slot.
func (l *lexicon) remove(slot int) {
	if slot >= len(l.docLen) || l.docLen[slot] == 0 {
		return
	}
	for _, t := range l.docTerms[slot] {
		p := l.postings[t]
		for i := range p {
			if p[i].slot == int32(slot) { // swap-delete: order does not matter
				p[i] = p[len(p)-1]
				p = p[:len(p)-1]
				break
			}
		}
		if len(p) == 0 {
			delete(l.postings, t)
		} else {
			l.postings[t] = p
		}
	}
	l.totalLen -= float64(l.docLen[slot])
	l.docLen[slot] = 0
	l.docTerms[slot] = nil
	l.n--
}

// idf is the (non-negative, Lucene) BM25 inverse document frequency. A term
// no document contains gets the largest value: it is information the
// catalog cannot match.
func (l *lexicon) idf(term string) float64 {
	df := float64(len(l.postings[term]))
	return math.Log(1 + (float64(l.n)-df+0.5)/(df+0.5))
}

// score adds each query term's BM25 contribution (times its query weight) to
// out (indexed by slot) and returns the norm that calibrates the scores: the
// score of a document of average length that contains every query word
// exactly once. A score at or above the norm matches the whole query.
func (l *lexicon) score(query map[string]float64, out []float64) (norm float64) {
	if l.n == 0 {
		return 0
	}
	avg := l.totalLen / float64(l.n)
	for t, qw := range query {
		idf := l.idf(t)
		norm += qw * idf
		for _, p := range l.postings[t] {
			f := float64(p.tf)
			dl := float64(l.docLen[p.slot])
			out[p.slot] += qw * idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*dl/avg))
		}
	}
	return norm
}
