package index

import (
	"math"

	"github.com/toolsrv/toolsrv/internal/vec"
)

// rank ranks v's tools for q, whose lexical side is lx: by exact pruning
// when lx allows it (prune.go), else by scoring every tool (rankAll); both
// give the same hits. Caller holds Index.mu for reading.
func (v *view) rank(q Query, lx *lexical, qvec []float32, alpha float64) Ranking {
	named := namedTools(q.Text, v.byName)
	if lx.pruned {
		if r, ok := v.rankPruned(q, lx, qvec, alpha, named); ok {
			v.markWords(&lx.plan, r.Hits, lx.sc)
			return r
		}
		lx.complete(v)
	}
	r := v.rankAll(q, lx.all, lx.plan.norm, qvec, alpha, named, lx.sc)
	v.markWords(&lx.plan, r.Hits, lx.sc)
	return r
}

// markWords sets Words on the hits that matched a real word of the
// message (a term of p that is not optional; a class, a number or a
// phrase of stop words alone is no evidence: bm25Plan).
func (v *view) markWords(p *bm25Plan, hits []Hit, sc *rankScratch) {
	if p.words == 0 {
		return
	}
	opt := false
	for _, t := range p.terms {
		opt = opt || t.opt && t.id >= 0
	}
	if !opt { // a lexical score is a word's
		for i := range hits {
			hits[i].Words = hits[i].Lexical > 0
		}
		return
	}
	if sc == nil {
		sc = new(rankScratch)
	}
	mark := sc.markBuf(len(v.lex.postings))
	p.mark(mark)
	defer p.unmark(mark)
	for i := range hits {
		if hits[i].Lexical > 0 {
			hits[i].Words = v.lex.words(p, v.byName[hits[i].Name], mark)
		}
	}
}

// complete gives lx every slot's lexical score (all), for rankAll.
func (lx *lexical) complete(v *view) {
	lx.release()
	lx.all = lx.sc.lexBuf(len(v.slots))
	v.lex.scoreAll(&lx.plan, lx.all)
}

// rankAll scores every live document: lex is every slot's BM25 score and
// norm its calibration. Caller holds Index.mu for reading.
func (v *view) rankAll(q Query, lex []float64, norm float64, qvec []float32, alpha float64, named map[string]bool, sc *rankScratch) Ranking {
	var dense []float64
	if qvec != nil && v.dim == len(qvec) {
		dense = v.denseScores(qvec, sc)
	}

	// A top-k ranking keeps only the k best hits; a full one lays out all.
	var top *vec.Best[Hit]
	var hits []Hit
	if q.K > 0 && q.K < len(v.byName) {
		top = vec.NewBest(q.K, better)
	} else {
		hits = make([]Hit, 0, len(v.byName))
	}
	checkNamed := len(named) > 0
	for s := range v.slots {
		sl := &v.slots[s]
		if !sl.live || (q.Allow != nil && !q.Allow(sl.name)) {
			continue
		}
		h := Hit{Name: sl.name}
		if norm > 0 {
			h.Lexical = math.Min(1, lex[s]/norm)
		}
		if dense != nil {
			h.Dense = dense[s]
		}
		switch {
		case dense == nil || q.Mode == Lexical:
			h.Score = h.Lexical
		case q.Mode == Dense:
			h.Score = h.Dense
		default:
			h.Score = alpha*h.Lexical + (1-alpha)*h.Dense
		}
		if checkNamed && named[sl.name] {
			h.Named, h.Score = true, 1
		}
		if top != nil {
			top.Push(h)
		} else {
			hits = append(hits, h)
		}
	}
	if top != nil {
		hits = top.Sorted(func(a, b Hit) int { return compareHits(&a, &b) })
	} else {
		sortHits(hits)
	}
	return Ranking{Hits: hits, Revision: v.rev}
}

// denseScores returns, per slot, the calibrated dense score: the cosine
// above the query's background (its mean cosine to all tools), rescaled so
// that a cosine of 1 gives 1 and the background or below gives 0.
func (v *view) denseScores(q []float32, sc *rankScratch) []float64 {
	n := len(v.slots)
	cos := sc.denseBuf(n)
	bg, ok := v.background(q)
	span := 1 - bg
	if !ok || span <= 0 {
		return cos
	}
	parallelRows(n, v.dim, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			if sl := &v.slots[s]; !sl.live || !sl.vec {
				continue
			}
			cos[s] = calibrate(float64(dot(q, v.rows[s])), bg, span)
		}
	})
	return cos
}

// dot is the float32 dot product every exact score is computed with
// (vec.Dot).
func dot(a, b []float32) float32 { return vec.Dot(a, b) }

// rankScratch holds one ranking's per-tool buffers, reused between
// queries (Index.scratch) so that a query at 100k tools does not allocate
// and clear megabytes. lexBuf and denseBuf accept a nil receiver (fresh
// buffers).
type rankScratch struct {
	lex, dense []float64
	// the pruned ranking's (prune.go): acc, mark and tf are all zero
	// between rankings (their users clear what they set)
	acc     []float64
	touched []int32
	mark    []int32
	tf      []float32
	floors  []*vec.Floor
	cands   [][]cand
	dots    [][]int32
	pass    [][]int32
	// rescored is how many tools the last pruned ranking scored exactly.
	rescored int
}

// lexBuf and denseBuf return the buffer resized to n zeros (a new slice if
// sc is nil).
func (sc *rankScratch) lexBuf(n int) []float64 {
	if sc == nil {
		return make([]float64, n)
	}
	sc.lex = growZero(sc.lex[:0], n)
	return sc.lex
}

func (sc *rankScratch) denseBuf(n int) []float64 {
	if sc == nil {
		return make([]float64, n)
	}
	sc.dense = growZero(sc.dense[:0], n)
	return sc.dense
}

// accBuf, markBuf and tfBuf return their buffer, all zeros, at least n long.
func (sc *rankScratch) accBuf(n int) []float64 {
	sc.acc = growZero(sc.acc, n)
	return sc.acc
}

func (sc *rankScratch) markBuf(n int) []int32 {
	sc.mark = growZero(sc.mark, n)
	return sc.mark
}

func (sc *rankScratch) tfBuf(n int) []float32 {
	sc.tf = growZero(sc.tf, n)
	return sc.tf
}

// parts readies the buffers of p parts of a scan for the best k: each an
// empty floor, an empty candidate list and room for a chunk's dot products.
func (sc *rankScratch) parts(p, k int) {
	for len(sc.floors) < p {
		sc.floors = append(sc.floors, vec.NewFloor(k))
		sc.cands = append(sc.cands, nil)
		sc.dots = append(sc.dots, make([]int32, pruneChunk))
		sc.pass = append(sc.pass, make([]int32, 0, pruneChunk))
	}
	for i := range p {
		sc.floors[i].Reset(k)
		sc.cands[i] = sc.cands[i][:0]
	}
}

// floor is part p's floor (after parts).
func (sc *rankScratch) floor(p int) *vec.Floor { return sc.floors[p] }
