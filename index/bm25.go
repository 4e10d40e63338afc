package index

import (
	"maps"
	"math"
	"slices"
	"strings"
)

// BM25 parameters (the usual defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// lexicon is an incremental BM25F-style index: each field's words count with
// the field's weight in the term frequency and in the document length.
// Documents live in slots shared with the dense matrix. Terms are interned
// (a term is hashed once per occurrence while indexing, and a document keeps
// only the ids of its terms), so indexing is linear in the number of words.
// Not safe for concurrent use; the Index guards it.
type lexicon struct {
	dict     map[string]int32 // term → id; stopwords map to -1
	terms    []string         // by term id: the term (for the lexical cache, lexcache.go)
	postings [][]posting      // by term id: documents that contain it (any order)
	docLen   []float32        // by slot; 0 for a free slot
	docTerms [][]int32        // by slot: the distinct term ids, for removal
	docPos   [][]int32        // by slot: where in each term's postings the slot is
	totalLen float64
	n        int

	// scratch for add (reused between documents)
	tk  tokenized
	pos []int32 // by term id: 1 + index in cur while a document is added
	cur []termTF
	// short holds, after add, id<<4 | 1<<field for every term of the
	// document's first numShortFields fields (the learned last step's
	// per-field matches, laststep.go), unsorted and with repeats.
	short []uint32
}

type termTF struct {
	id int32
	tf float32
}

// posting is one document's weighted term frequency.
type posting struct {
	slot int32
	tf   float32
}

func newLexicon() *lexicon {
	stop := stopwords()
	l := &lexicon{dict: make(map[string]int32, stop.Len())}
	for _, w := range stop.Words() {
		l.dict[w] = -1
	}
	return l
}

// termID returns the id of an index term, adding it if new.
func (l *lexicon) termID(t string) int32 {
	if id, ok := l.dict[t]; ok {
		return id
	}
	t = strings.Clone(t) // t may point into a document's text
	id := int32(len(l.postings))
	l.dict[t] = id
	l.terms = append(l.terms, t)
	l.postings = append(l.postings, nil)
	l.pos = append(l.pos, 0)
	return id
}

// termIDBytes is termID for a term held in bytes (no copy unless new).
func (l *lexicon) termIDBytes(t []byte) int32 {
	if id, ok := l.dict[string(t)]; ok {
		return id
	}
	return l.termID(string(t))
}

// add indexes the fields of a document in slot (which must be free). Each
// word costs one lookup in the term dictionary; its frequency accumulates
// in a per-term array slot, not a per-document map.
func (l *lexicon) add(slot int, fields []field) {
	l.tk.fill(fields)
	l.addTokens(slot, fields, &l.tk)
}

// tokenized is a document's fields as tokens, made ahead (see upsertAll).
type tokenized struct {
	toks []string // every field's tokens, in field order
	ends []int    // by field: the end of its tokens in toks
}

// fill tokenizes fields into tk, reusing its buffers.
func (tk *tokenized) fill(fields []field) {
	tk.toks, tk.ends = tk.toks[:0], tk.ends[:0]
	for fi, f := range fields {
		tk.toks = appendTokens(tk.toks, f.text, fi)
		tk.ends = append(tk.ends, len(tk.toks))
	}
}

// addTokens is add with the fields already tokenized. Fields of weight 0
// (matched per field only, for the learned last step's features) are read
// after the others, so that their terms are interned after the document's
// weighted terms, as a restart from the lexical cache interns them
// (lexApply.add: the entry's terms, then its short-field terms).
func (l *lexicon) addTokens(slot int, fields []field, tk *tokenized) {
	cur := l.cur[:0]
	l.short = l.short[:0]
	var length float32
	for _, weighted := range []bool{true, false} {
		start := 0
		for fi, f := range fields {
			toks := tk.toks[start:tk.ends[fi]]
			start = tk.ends[fi]
			if (f.weight > 0) != weighted {
				continue
			}
			for _, t := range toks {
				id := l.termID(t)
				if id < 0 { // stopword
					continue
				}
				if fi < numShortFields {
					l.short = append(l.short, uint32(id)<<4|1<<fi)
				}
				if !weighted {
					continue
				}
				if p := l.pos[id]; p > 0 {
					cur[p-1].tf += f.weight
				} else {
					cur = append(cur, termTF{id, f.weight})
					l.pos[id] = int32(len(cur))
				}
				length += f.weight
			}
		}
	}
	l.cur = cur
	l.place(slot, length)
}

// place records the document in l.cur (its distinct terms with their
// frequencies, in order of first occurrence) and of the given length in
// slot, and resets the per-term scratch.
func (l *lexicon) place(slot int, length float32) {
	for len(l.docLen) <= slot {
		l.docLen = append(l.docLen, 0)
		l.docTerms = append(l.docTerms, nil)
		l.docPos = append(l.docPos, nil)
	}
	cur := l.cur
	if length == 0 {
		length = 1 // an empty document still occupies its slot
	}
	buf := make([]int32, 2*len(cur)) // ids and positions in one allocation
	ids, pos := buf[:len(cur):len(cur)], buf[len(cur):]
	for i, c := range cur {
		pos[i] = int32(len(l.postings[c.id]))
		l.postings[c.id] = append(l.postings[c.id], posting{int32(slot), c.tf})
		ids[i] = c.id
		l.pos[c.id] = 0
	}
	l.docLen[slot] = length
	l.docTerms[slot] = ids
	l.docPos[slot] = pos
	l.totalLen += float64(length)
	l.n++
}

// remove drops the document in slot. Each of its postings is swap-deleted
// at its known position (the moved posting's owner learns its new place),
// so removing a document costs its own terms, not the length of their
// posting lists.
func (l *lexicon) remove(slot int) {
	if slot >= len(l.docLen) || l.docLen[slot] == 0 {
		return
	}
	for i, id := range l.docTerms[slot] {
		p := l.postings[id]
		at, last := l.docPos[slot][i], int32(len(p)-1)
		if at != last {
			moved := p[last]
			p[at] = moved
			owner := l.docTerms[moved.slot]
			for j := range owner {
				if owner[j] == id {
					l.docPos[moved.slot][j] = at
					break
				}
			}
		}
		l.postings[id] = p[:last]
	}
	l.totalLen -= float64(l.docLen[slot])
	l.docLen[slot] = 0
	l.docTerms[slot] = nil
	l.docPos[slot] = nil
	l.n--
}

// df is the number of documents containing term.
func (l *lexicon) df(term string) int {
	if id, ok := l.dict[term]; ok && id >= 0 {
		return len(l.postings[id])
	}
	return 0
}

// idf is the (non-negative, Lucene) BM25 inverse document frequency. A term
// no document contains gets the largest value: it is information the
// catalog cannot match.
func (l *lexicon) idf(term string) float64 {
	df := float64(l.df(term))
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
	// In a fixed order: float sums that depend on map order would make the
	// same query score differently from one run to the next.
	for _, t := range slices.Sorted(maps.Keys(query)) {
		qw := query[t]
		idf := l.idf(t)
		norm += qw * idf
		id, ok := l.dict[t]
		if !ok || id < 0 {
			continue
		}
		for _, p := range l.postings[id] {
			f := float64(p.tf)
			dl := float64(l.docLen[p.slot])
			out[p.slot] += qw * idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*dl/avg))
		}
	}
	return norm
}
