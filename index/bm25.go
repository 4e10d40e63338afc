package index

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/toolsrv/toolsrv/text"
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
	// maxTF and minDL are, by term id, at least the largest weighted term
	// frequency and at most the shortest document length among its
	// postings (0: none yet): what bounds any one posting's score
	// (termBound). A removal leaves them as they were, still bounds.
	maxTF, minDL []float32
	// gen counts the changes of the documents (add, remove); norms is the
	// length normalisation of every slot for one gen (lengthNorms).
	gen   uint64
	norms atomic.Pointer[lenNorms]

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
	l.maxTF = append(l.maxTF, 0)
	l.minDL = append(l.minDL, 0)
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
		l.maxTF[c.id] = max(l.maxTF[c.id], c.tf)
		if m := l.minDL[c.id]; m == 0 || length < m {
			l.minDL[c.id] = length
		}
	}
	l.docLen[slot] = length
	l.docTerms[slot] = ids
	l.docPos[slot] = pos
	l.totalLen += float64(length)
	l.n++
	l.gen++
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
	l.gen++
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

// termScore is one posting's BM25 contribution: qwIdf is the term's query
// weight times its IDF, f the document's weighted frequency of the term
// and norm its length normalisation (lengthNorm). Every BM25 score of the
// index is summed from it, in score's order, so scores computed two ways
// (every posting of a term, or one document's terms) are equal to the bit.
func termScore(qwIdf, f, norm float64) float64 {
	return qwIdf * f * (bm25K1 + 1) / (f + norm)
}

// lengthNorm is the part of a posting's score that depends on its
// document's length dl alone, given the mean length avg.
func lengthNorm(dl, avg float64) float64 {
	return bm25K1 * (1 - bm25B + bm25B*dl/avg)
}

// lenNorms is lengthNorm of every slot, for the lexicon's documents as of
// gen.
type lenNorms struct {
	gen  uint64
	norm []float64 // by slot
}

// lengthNorms is lengthNorm of every slot for avg, the mean length (made
// at the first scoring after the documents changed: two divisions a
// posting were a third of a ranking's lexical part). Callers hold the
// index's lock for reading at least, so gen does not change meanwhile.
func (l *lexicon) lengthNorms(avg float64) []float64 {
	if c := l.norms.Load(); c != nil && c.gen == l.gen && len(c.norm) == len(l.docLen) {
		return c.norm
	}
	c := &lenNorms{gen: l.gen, norm: make([]float64, len(l.docLen))}
	for s, dl := range l.docLen {
		c.norm[s] = lengthNorm(float64(dl), avg)
	}
	l.norms.Store(c)
	return c.norm
}

// bm25Plan is a message's terms as the lexicon scores them.
//
// A message's optional terms (text.Optional: a class such as <pct>, a
// number's digits, a phrase of stop words) only break ties: they add to a
// tool that also matches a real word of the message, at most tieShare of
// what its words gave, and they are kept out of the norm (a tool that
// holds them cannot lower another's share). Otherwise one tool author's keywords ("10 MB",
// "percentage", "how do i"), being the only tool to hold such a term,
// would get the highest IDF and take requests they share no word with.
// A message none of whose real words any tool holds ("15% of 80", "where
// is docker-compose.yml" in a catalog without "docker") has no tie to
// break: its optional terms count as words (but a tool they alone match
// is still not one that matched a word: Hit.Words).
type bm25Plan struct {
	terms []planTerm // in the order score sums them: the words, then the optional terms, each sorted
	norm  float64    // the calibration: see score
	words int        // the message's terms that are not optional and that some document holds
	avg   float64    // the mean document length
	lens  []float64  // by slot: lengthNorm
}

// planTerm is one term of a plan.
type planTerm struct {
	id    int32   // -1: no document has it (or a stopword)
	qwIdf float64 // query weight × IDF
	ub    float64 // at least any one document's score for the term (termBound)
	opt   bool    // a tie-breaker: adds only to a document a word matched
}

// plan lays out query (term → query weight) for scoring: each term's
// weight, IDF and bound, in a fixed order (float sums that depend on map
// order would make the same query score differently from one run to the
// next), and the calibration norm.
func (l *lexicon) plan(query map[string]float64) bm25Plan {
	p := bm25Plan{terms: make([]planTerm, 0, len(query))}
	if l.n == 0 {
		return p
	}
	p.avg = l.totalLen / float64(l.n)
	p.lens = l.lengthNorms(p.avg)
	keys := slices.Sorted(maps.Keys(query))
	for _, t := range keys {
		if !text.Optional(t) && l.df(t) > 0 {
			p.words++
		}
	}
	words := p.words
	add := func(t string, opt bool) {
		qw := query[t]
		idf := l.idf(t)
		pt := planTerm{id: -1, qwIdf: qw * idf, opt: opt}
		if !opt {
			p.norm += pt.qwIdf
		}
		if id, ok := l.dict[t]; ok && id >= 0 && len(l.postings[id]) > 0 {
			pt.id = id
			pt.ub = l.termBound(id, pt.qwIdf, p.avg)
		}
		p.terms = append(p.terms, pt)
	}
	for _, t := range keys {
		if !text.Optional(t) || words == 0 {
			add(t, false)
		}
	}
	if words > 0 {
		for _, t := range keys {
			if text.Optional(t) {
				add(t, true)
			}
		}
	}
	return p
}

// words reports whether the document in slot s has one of p's terms that
// is not optional: whether it matched a real word of the message. mark
// is as docScore's.
func (l *lexicon) words(p *bm25Plan, s int, mark []int32) bool {
	for _, id := range l.docTerms[s] {
		if k := mark[id]; k > 0 && !p.terms[k-1].opt {
			return true
		}
	}
	return false
}

// termBound is at least the score termScore gives any document for term
// id: the score is increasing in the frequency and decreasing in the
// length, so the largest frequency with the shortest length bounds it
// (rounded up, for safety).
func (l *lexicon) termBound(id int32, qwIdf, avg float64) float64 {
	return termScore(qwIdf, float64(l.maxTF[id]), lengthNorm(float64(l.minDL[id]), avg)) * (1 + 1e-9)
}

// score adds each query term's BM25 contribution (times its query weight) to
// out (indexed by slot) and returns the norm that calibrates the scores: the
// score of a document of average length that contains every query word
// exactly once. A score at or above the norm matches the whole query.
func (l *lexicon) score(query map[string]float64, out []float64) (norm float64) {
	p := l.plan(query)
	l.scoreAll(&p, out)
	return p.norm
}

// scoreAll adds the score of every posting of p's terms to out.
// out must be 0 where it has no score yet: the optional terms add only
// where the words (summed first) left a score, at most tieShare of it
// (tieBreak).
func (l *lexicon) scoreAll(p *bm25Plan, out []float64) {
	var ties []slotScore
	for _, t := range p.terms {
		if t.id < 0 {
			continue
		}
		for _, q := range l.postings[t.id] {
			sc := termScore(t.qwIdf, float64(q.tf), p.lens[q.slot])
			switch {
			case !t.opt:
				out[q.slot] += sc
			case out[q.slot] > 0:
				ties = append(ties, slotScore{q.slot, sc})
			}
		}
	}
	if len(ties) == 0 {
		return
	}
	// Each slot's optional scores summed in the plan's order, as docScore
	// sums them.
	slices.SortStableFunc(ties, func(a, b slotScore) int { return cmp.Compare(a.slot, b.slot) })
	for i := 0; i < len(ties); {
		s, sum := ties[i].slot, 0.0
		for ; i < len(ties) && ties[i].slot == s; i++ {
			sum += ties[i].score
		}
		out[s] = tieBreak(out[s], sum)
	}
}

// slotScore is a slot's score for one term.
type slotScore struct {
	slot  int32
	score float64
}

// tieShare bounds what the optional terms add to a tool's score, as a
// share of what its words gave: they reorder tools whose words matched
// about as well, never one whose words matched half as well above one
// whose words matched fully. Measured: any share from 0 to 2 ranks the
// training catalogs' held-out requests alike but for two of 4,613
// (learn/MODEL.md).
const tieShare = 0.5

// tieBreak is a score made of words and optional terms: words, the
// optional terms' sum opt added (at most tieShare of words) where a word
// matched.
func tieBreak(words, opt float64) float64 {
	if words <= 0 {
		return words
	}
	return words + min(opt, tieShare*words)
}

// addScores adds the score of every posting of t (a term of p, not
// optional) to out,
// appends to touched each slot out had no score for yet (0), and returns
// it.
func (l *lexicon) addScores(p *bm25Plan, t planTerm, out []float64, touched []int32) []int32 {
	for _, q := range l.postings[t.id] {
		if out[q.slot] == 0 {
			touched = append(touched, q.slot)
		}
		out[q.slot] += termScore(t.qwIdf, float64(q.tf), p.lens[q.slot])
	}
	return touched
}

// docScore is the BM25 score of the document in slot s for p's terms,
// summed in the order score sums them (so equal to what score gives it,
// to the bit), from the document's own terms rather than the terms'
// postings. mark (by term id) holds 1 + each of p's terms' place in p, as
// p.mark sets it; tf is scratch of len(p.terms), all zero, which it
// leaves so.
func (l *lexicon) docScore(p *bm25Plan, s int, mark []int32, tf []float32) float64 {
	pos := l.docPos[s]
	for i, id := range l.docTerms[s] {
		if k := mark[id]; k > 0 {
			tf[k-1] = l.postings[id][pos[i]].tf
		}
	}
	var sum, opt float64
	norm := p.lens[s]
	for i, t := range p.terms {
		if f := tf[i]; f > 0 {
			if t.opt {
				opt += termScore(t.qwIdf, float64(f), norm)
			} else {
				sum += termScore(t.qwIdf, float64(f), norm)
			}
			tf[i] = 0
		}
	}
	if opt > 0 {
		return tieBreak(sum, opt)
	}
	return sum
}

// mark sets mark[id] to 1 + the place in p of each of p's terms the
// lexicon has (mark: by term id, all zero), for docScore; unmark clears
// them again.
func (p *bm25Plan) mark(mark []int32) {
	for i, t := range p.terms {
		if t.id >= 0 {
			mark[t.id] = int32(i + 1)
		}
	}
}

func (p *bm25Plan) unmark(mark []int32) {
	for _, t := range p.terms {
		if t.id >= 0 {
			mark[t.id] = 0
		}
	}
}
