package index

import (
	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/internal/parallel"
	"github.com/toolsrv/toolsrv/internal/vec"
)

// view is what Rank reads: the documents, their vectors and the lexicon.
// Incremental updates change it in place under Index.mu; rebuilds replace it.
type view struct {
	emb     embed.Embedder // the embedder for queries (fitted, or the base)
	st      *store         // nil until the first vector
	dim     int
	slots   []slot
	state   []slotState // by slot: what the pruned scan needs of it (prune.go)
	free    []int
	byName  map[string]int
	rows    [][]float32 // by slot: its unit vector (the store's own slice, shared), nil without one
	q4      *vec.Rows   // by slot: the rows at 4 bits (see quant.go); nil until the first vector
	q8      []int8      // slot*dim: the rows at 8 bits (see quant.go)
	q8scale []float32   // by slot: row ≈ q8 row · q8scale
	colSum  []float64   // sum of the live rows (the query's background)
	nvec    int         // live rows with a vector
	lex     *lexicon
	short   shortTerms // per-field terms for the learned last step
	rev     uint64
	gen     uint64 // bumped by every in-place change (slot scores go stale)
	missing int    // live documents without a vector
	err     error  // why they lack one
	// pruneFrom is the catalog size from which top-k rankings are pruned
	// (pruneMinRows; tests prune small catalogs too).
	pruneFrom int
}

type slot struct {
	name, hash string
	lex        lexKey // the document's lexical cache key (lexcache.go)
	tool       string // the tool's Hash (the document memo's key, with name)
	live, vec  bool
	doc        *document // kept only while the vector is missing, to retry
}

func newView(emb embed.Embedder, st *store) *view {
	v := &view{emb: emb, st: st, byName: map[string]int{}, lex: newLexicon(), pruneFrom: pruneMinRows}
	if st != nil {
		v.dim = st.dim
	}
	return v
}

// ahead is what upsertAll makes of a document on other cores: its tokens
// (unless its lexical entry is cached) and its 4-bit and 8-bit rows.
type ahead struct {
	tk        tokenized
	tokenized bool
	enc       vec.Row4
	encoded   bool   // enc holds the document's vector
	q         []int8 // empty when the document has no vector
	qscale    float32
}

// make fills a for d, whose vector is row (nil: none) and its int8 row q
// with scale qs, when the store has it (nil: quantized here).
func (a *ahead) make(d *document, row []float32, q []int8, qs float32, lx *lexApply) {
	if a.tokenized = !lx.has(d.lexKey); a.tokenized {
		d.need()
		a.tk.fill(d.fields)
	}
	if a.encoded = row != nil; a.encoded {
		vec.Encode4(&a.enc, row)
	}
	a.q = growZero(a.q[:0], len(row))
	switch {
	case row == nil:
	case len(q) == len(row):
		copy(a.q, q)
		a.qscale = qs
	default:
		a.qscale = quantizeRow(a.q, row)
	}
}

// rows are the rows made ahead: the 4-bit one (nil for none) and the
// int8 one (nil unless it has dim values).
func (a *ahead) rows(dim int) (*vec.Row4, []int8, float32) {
	if a == nil || !a.encoded {
		return nil, nil, 0
	}
	if dim == 0 || len(a.q) != dim {
		return &a.enc, nil, 0
	}
	return &a.enc, a.q, a.qscale
}

// bulkMin is the fewest documents upsertAll tokenizes ahead.
const bulkMin = 512

// upsertAll upserts docs in order (each with its vector from vecs), as
// upsert does: the next chunk of documents is tokenized on other cores
// while the lexicon takes in the current one. Two chunks of tokens are
// held at a time, so a large catalog costs no more memory than a small one.
// A document that has an entry in lx (the lexical cache, nil for none) is
// not tokenized. It returns how many documents were.
func (v *view) upsertAll(docs []document, vecs vecSet, why error, lx *lexApply) (fresh int) {
	count := func(tokenized bool) {
		if tokenized {
			fresh++
		}
	}
	if len(docs) < bulkMin {
		for i := range docs {
			count(v.upsertAhead(&docs[i], nil, vecs.get(docs[i].hash), why, lx))
		}
		return fresh
	}
	const chunk = 256
	type batch struct{ buf, lo, hi int }
	var bufs [2][]ahead
	free := make(chan int, len(bufs))
	for b := range bufs {
		bufs[b] = make([]ahead, chunk)
		free <- b
	}
	ready := make(chan batch)
	go func() {
		defer close(ready)
		for lo := 0; lo < len(docs); lo += chunk {
			b, hi := <-free, min(lo+chunk, len(docs))
			buf := bufs[b]
			parallel.Each(hi-lo, func(i int) {
				d := &docs[lo+i]
				q, qs := vecs.quant(d.hash)
				buf[i].make(d, vecs.get(d.hash), q, qs, lx)
			})
			ready <- batch{b, lo, hi}
		}
	}()
	for bt := range ready {
		for i := bt.lo; i < bt.hi; i++ {
			count(v.upsertAhead(&docs[i], &bufs[bt.buf][i-bt.lo], vecs.get(docs[i].hash), why, lx))
		}
		free <- bt.buf
	}
	return fresh
}

// upsertAhead is upsert with what was made ahead for the document (a, or
// nil), and its lexical entry taken from lx when lx has one. It says
// whether the document was tokenized.
func (v *view) upsertAhead(d *document, a *ahead, vec []float32, why error, lx *lexApply) (tokenized bool) {
	v.gen++
	s, ok := v.byName[d.name]
	hadVec := ok && v.slots[s].vec
	if ok {
		v.lex.remove(s)
		if !v.slots[s].vec {
			v.missing--
		}
	} else if n := len(v.free); n > 0 {
		s, v.free = v.free[n-1], v.free[:n-1]
	} else {
		s = len(v.slots)
		v.slots = append(v.slots, slot{})
		v.state = append(v.state, 0)
	}
	v.byName[d.name] = s
	switch {
	case lx.add(v.lex, s, d.lexKey):
	case a != nil && a.tokenized:
		v.lex.addTokens(s, d.fields, &a.tk)
		tokenized = true
	default:
		d.need()
		v.lex.add(s, d.fields)
		tokenized = true
	}
	v.short.set(s, v.lex)
	sl := slot{name: d.name, hash: d.hash, lex: d.lexKey, tool: d.toolHash, live: true}
	if v.dim == 0 && vec != nil {
		v.dim = len(vec)
	}
	if vec != nil && len(vec) == v.dim {
		enc, q, qs := a.rows(v.dim)
		v.setRowEncoded(s, vec, hadVec, enc, q, qs)
		sl.vec = true
	} else {
		v.setRow(s, nil, hadVec)
		sl.doc = d
		v.missing++
		if why != nil {
			v.err = why
		}
	}
	v.setSlot(s, sl)
	if v.missing == 0 {
		v.err = nil
	}
	return tokenized
}

// remove drops a document from the view.
func (v *view) remove(name string) {
	v.gen++
	s, ok := v.byName[name]
	if !ok {
		return
	}
	hadVec := v.slots[s].vec
	if !hadVec {
		v.missing--
	}
	v.lex.remove(s)
	v.short.clear(s)
	delete(v.byName, name)
	v.setSlot(s, slot{})
	v.setRow(s, nil, hadVec)
	v.free = append(v.free, s)
	if v.missing == 0 {
		v.err = nil
	}
}

// unused keeps the hashes no live document of v has: two tools with the
// same text share one stored vector, which the removal of one of them
// must leave to the other.
func (v *view) unused(hashes []string) []string {
	if len(hashes) == 0 {
		return hashes
	}
	set := make(map[string]bool, len(hashes))
	for _, h := range hashes {
		set[h] = true
	}
	for i := range v.slots {
		if v.slots[i].live && set[v.slots[i].hash] {
			delete(set, v.slots[i].hash)
		}
	}
	out := hashes[:0]
	for _, h := range hashes {
		if set[h] {
			out = append(out, h)
			delete(set, h) // once each
		}
	}
	return out
}
