package vec

// Reach is the test a pruned scan puts each row to, after Dots: whether a
// score made of the row's cosine with the query and a number of its own
// (acc) may reach a threshold m. With u the row's upper cosine (Upper),
// the score is at most
//
//	WA·min(1, (acc + RA)·KA) + WB·min(1, max(0, (u + RB)·KB))
//
// (the index's hybrid score: a lexical part from acc, the partial BM25
// sum, and a dense part from the cosine). The weights must be at least 0.
type Reach struct {
	WA, RA, KA float64
	WB, RB, KB float64
}

// Reaching appends to out (and returns) the indices lo+j of the rows
// lo…lo+len(dots)−1 whose bound reaches m, given their integer dot
// products with q (Dots) and their acc; it reads the rows' scales and
// errors as Upper does. A row whose bound is m or above is never left out
// (rounding: the assembly may round differently from Go, within a few
// units in the last place, which the bounds' margins cover).
func (r *Rows) Reaching(q *Query, c *Reach, lo int, dots []int32, acc []float64, m float64, out []int32) []int32 {
	n := min(len(dots), len(acc))
	j := 0
	if haveAVX512 && n >= 8 {
		if cap(out)-len(out) < n {
			grown := make([]int32, len(out), len(out)+n)
			copy(grown, out)
			out = grown
		}
		k := n &^ 7
		p := reachParams{a: q.scale, b: q.f + q.norm, c0: q.f + boundMargin, wa: c.WA, ra: c.RA, ka: c.KA,
			wb: c.WB, rb: c.RB, kb: c.KB, m: m, base: int32(lo)}
		var dst *int32
		if cap(out) > len(out) {
			dst = &out[:len(out)+1][len(out)]
		}
		got := reachAVX512(&dots[0], &r.scale[lo], &r.err[lo], &acc[0], k, &p, dst)
		out = out[:len(out)+got]
		j = k
	}
	a, b, c0 := q.scale, q.f+q.norm, q.f+boundMargin
	for ; j < n; j++ {
		u := float64(dots[j])*a*float64(r.scale[lo+j]) + b*float64(r.err[lo+j]) + c0
		if reachBound(c, acc[j], u) >= m {
			out = append(out, int32(lo+j))
		}
	}
	return out
}

// reachBound is Reach's bound of a row whose acc is x and upper cosine u.
func reachBound(c *Reach, x, u float64) float64 {
	la := min(1, (x+c.RA)*c.KA)
	lb := (u + c.RB) * c.KB
	if lb < 0 {
		lb = 0
	} else if lb > 1 {
		lb = 1
	}
	return c.WA*la + c.WB*lb
}

// reachParams are reachAVX512's constants, in the order it reads them.
type reachParams struct {
	a, b, c0   float64 // u = d·a·scale + b·err + c0
	wa, ra, ka float64
	wb, rb, kb float64
	m          float64
	base       int32 // the index of the first row
}
