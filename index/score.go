package index

import (
	"math"
)

// rank scores every live document. Caller holds Index.mu for reading.
// sc (may be nil) provides reusable buffers.
func (v *view) rank(q Query, lex []float64, norm float64, qvec []float32, alpha float64, sc *rankScratch) Ranking {
	named := namedTools(q.Text, v.byName)
	if qvec != nil && v.dim == len(qvec) && q.Mode != Lexical && q.K > 0 && q.K < len(v.byName) && v.quantOK() {
		r, _ := v.rankQuant(q, lex, norm, qvec, alpha, named, sc)
		return r
	}
	var dense []float64
	if qvec != nil && v.dim == len(qvec) {
		dense = v.denseScores(qvec, sc)
	}

	// A top-k ranking keeps only the k best hits; a full one lays out all.
	var top *topHits
	var hits []Hit
	if q.K > 0 && q.K < len(v.byName) {
		top = newTopHits(q.K)
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
			top.push(h)
		} else {
			hits = append(hits, h)
		}
	}
	if top != nil {
		hits = top.sorted()
	} else {
		sortHits(hits)
	}
	return Ranking{Hits: hits, Revision: v.rev}
}

// lexScores returns the BM25 score of every slot and the calibration norm
// (of the query's terms that count: view.known).
// sc (may be nil) provides the buffer.
func (v *view) lexScores(lexQ map[string]float64, sc *rankScratch) ([]float64, float64) {
	lex := sc.lexBuf(len(v.slots))
	return lex, v.lex.score(v.known(lexQ), lex)
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

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := (*[8]float32)(a[i:i+8]), (*[8]float32)(b[i:i+8]) // no bounds checks below
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}
