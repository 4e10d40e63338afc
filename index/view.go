package index

import (
	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/internal/parallel"
)

// view is what Rank reads: the documents, their vectors and the lexicon.
// Incremental updates change it in place under Index.mu; rebuilds replace it.
type view struct {
	emb    embed.Embedder // the embedder for queries (fitted, or the base)
	st     *store         // nil until the first vector
	dim    int
	slots  []slot
	free   []int
	byName map[string]int
	rows   [][]float32 // by slot: its unit vector (the store's own slice, shared), nil without one
	qmat   []int8      // slot*dim: the rows quantised (see quant.go)
	qscale []float32   // by slot: row ≈ qmat row · qscale
	colSum []float64   // sum of the live rows (the query's background)
	nvec   int         // live rows with a vector
	// exactOnly disables the int8 scan (tests compare both paths).
	exactOnly bool
	lex       *lexicon
	short     shortTerms // per-field terms for the learned last step
	rev       uint64
	gen       uint64 // bumped by every in-place change (slot scores go stale)
	missing   int    // live documents without a vector
	err       error  // why they lack one
}

type slot struct {
	name, hash string
	live, vec  bool
	doc        *document // kept only while the vector is missing, to retry
}

func newView(emb embed.Embedder, st *store) *view {
	v := &view{emb: emb, st: st, byName: map[string]int{}, lex: newLexicon()}
	if st != nil {
		v.dim = st.dim
	}
	return v
}

// upsert puts a document (and its vector, nil if unknown) into the view.
func (v *view) upsert(d *document, vec []float32, why error) {
	v.upsertTokens(d, nil, vec, why)
}

// bulkMin is the fewest documents upsertAll tokenizes ahead.
const bulkMin = 512

// upsertAll upserts docs in order (each with its vector from vecs), as
// upsert does: the next chunk of documents is tokenized on other cores
// while the lexicon takes in the current one. Two chunks of tokens are
// held at a time, so a large catalog costs no more memory than a small one.
func (v *view) upsertAll(docs []document, vecs vecSet, why error) {
	if len(docs) < bulkMin {
		for i := range docs {
			v.upsert(&docs[i], vecs.get(docs[i].hash), why)
		}
		return
	}
	const chunk = 256
	type batch struct{ buf, lo, hi int }
	var bufs [2][]tokenized
	free := make(chan int, len(bufs))
	for b := range bufs {
		bufs[b] = make([]tokenized, chunk)
		free <- b
	}
	ready := make(chan batch)
	go func() {
		defer close(ready)
		for lo := 0; lo < len(docs); lo += chunk {
			b, hi := <-free, min(lo+chunk, len(docs))
			tk := bufs[b]
			parallel.Each(hi-lo, func(i int) { tk[i].fill(docs[lo+i].fields) })
			ready <- batch{b, lo, hi}
		}
	}()
	for bt := range ready {
		for i := bt.lo; i < bt.hi; i++ {
			v.upsertTokens(&docs[i], &bufs[bt.buf][i-bt.lo], vecs.get(docs[i].hash), why)
		}
		free <- bt.buf
	}
}

// upsertTokens is upsert with the document's fields tokenized (tk), or
// not (nil).
func (v *view) upsertTokens(d *document, tk *tokenized, vec []float32, why error) {
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
	}
	v.byName[d.name] = s
	if tk != nil {
		v.lex.addTokens(s, d.fields, tk)
	} else {
		v.lex.add(s, d.fields)
	}
	v.short.set(s, v.lex)
	sl := slot{name: d.name, hash: d.hash, live: true}
	if v.dim == 0 && vec != nil {
		v.dim = len(vec)
	}
	if vec != nil && len(vec) == v.dim {
		v.setRow(s, vec, hadVec)
		sl.vec = true
	} else {
		v.setRow(s, nil, hadVec)
		sl.doc = d
		v.missing++
		if why != nil {
			v.err = why
		}
	}
	v.slots[s] = sl
	if v.missing == 0 {
		v.err = nil
	}
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
	v.slots[s] = slot{}
	v.setRow(s, nil, hadVec)
	v.free = append(v.free, s)
	if v.missing == 0 {
		v.err = nil
	}
}
