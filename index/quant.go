package index

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// The dense scan at large catalogs is bounded by memory traffic: at 100k
// tools × 256 dims the float32 matrix is 100 MB, read once per query. The
// view therefore keeps, beside the float32 matrix, an int8 copy with one
// scale per row (row ≈ qmat·qscale, 4× less to read). A top-k ranking scans
// the int8 copy with a vectorised kernel, bounds each tool's score from
// below and above with the quantisation error, and re-scores exactly (from
// the float32 rows, with the very same arithmetic as the exact path) every
// tool whose upper bound reaches the k-th best lower bound. The tools and
// scores it returns are therefore those of the exact path: the bound is
// rigorous, not a heuristic over "the top few hundred". A full ranking
// (K = 0) scores every tool exactly.

// quantMinRows is the catalog size from which the int8 scan is used for a
// top-k ranking; below it the exact scan is as fast.
const quantMinRows = 2048

// dotsI8Go is the portable kernel: out[r] = Σ q[i]·m[r·len(q)+i].
func dotsI8Go(q []int16, m []int8, out []int32) {
	dim := len(q)
	for r := range out {
		row := m[r*dim : (r+1)*dim]
		var s int32
		for i, x := range q {
			s += int32(x) * int32(row[i])
		}
		out[r] = s
	}
}

// quantizeRow writes the int8 version of vec into dst and returns its scale
// (max |vec| / 127; 0 for a zero row).
func quantizeRow(dst []int8, vec []float32) float32 {
	var mx float32
	for _, x := range vec {
		mx = max(mx, float32(math.Abs(float64(x))))
	}
	if mx == 0 {
		clear(dst)
		return 0
	}
	scale := mx / 127
	inv := 127 / float64(mx)
	for i, x := range vec {
		dst[i] = int8(max(-127, min(127, math.Round(float64(x)*inv))))
	}
	return scale
}

// rowScaleOK says whether x can be the scale quantizeRow gave a unit
// vector (at most 1/127, with room for rounding; 0: no vector): a scale
// read from a file is checked, so that a damaged one cannot make a dot
// product of any size.
func rowScaleOK(x float32) bool { return x >= 0 && x <= 1.001/127 }

// quantQuery is a query vector quantised to int16 for the kernel.
type quantQuery struct {
	q     []int16
	scale float64 // q ≈ q̂·scale
	l1    float64 // Σ|q_i| of the float query
}

// quantizeQuery scales q so that |q̂_i| ≤ qmax, where qmax keeps every
// int32 sum of dim products of int8 rows exact (no overflow).
func quantizeQuery(q []float32) quantQuery {
	qmax := min(32767, float64(math.MaxInt32)/(127*float64(len(q))))
	qmax = math.Floor(qmax)
	var mx, l1 float64
	for _, x := range q {
		a := math.Abs(float64(x))
		mx = max(mx, a)
		l1 += a
	}
	out := quantQuery{q: make([]int16, len(q)), l1: l1}
	if mx == 0 {
		return out
	}
	out.scale = mx / qmax
	for i, x := range q {
		out.q[i] = int16(max(-qmax, min(qmax, math.Round(float64(x)/out.scale))))
	}
	return out
}

// errBound bounds |approximate cosine − exact float32 cosine| for a row of
// scale rs:
//
//	q·m = qs·rs·Σq̂m̂ + rs·Σ e_q,i·m̂_i + Σ q_i·e_m,i
//
// with |e_q| ≤ qs/2, |m̂| ≤ 127, |e_m| ≤ rs/2, so the error is at most
// rs·(qs·127·dim + ‖q‖₁)/2; plus the float32 rounding of the exact dot
// product itself (≤ dim·2⁻²³ for unit vectors, doubled for safety).
func (qq quantQuery) errBound(rs float32, dim int) float64 {
	return float64(rs)*(qq.scale*127*float64(dim)+qq.l1)/2 + float64(dim)*0x1p-22
}

// quantOK says whether the int8 scan can serve this view.
func (v *view) quantOK() bool {
	return haveInt8Kernel && !v.exactOnly && v.dim > 0 && v.dim%32 == 0 &&
		len(v.qmat) >= len(v.slots)*v.dim && len(v.slots) >= quantMinRows
}

// setRow stores a unit vector (or, with nil, none) as slot s's row and its
// int8 copy, and keeps the column sums of the live rows (for the query's
// background) current. hadVec says whether the slot held a vector before.
// The row is vec itself, not a copy: vec is the store's (read-only) vector.
func (v *view) setRow(s int, vec []float32, hadVec bool) {
	v.setRowQuantized(s, vec, hadVec, nil, 0)
}

// setRowQuantized is setRow given vec quantized ahead (q and scale; q nil:
// quantize it here; see upsertAll).
func (v *view) setRowQuantized(s int, vec []float32, hadVec bool, q []int8, scale float32) {
	if v.dim == 0 {
		return
	}
	v.rows = growZero(v.rows, len(v.slots))
	v.qmat = growZero(v.qmat, len(v.slots)*v.dim)
	v.qscale = growZero(v.qscale, len(v.slots))
	if v.colSum == nil {
		v.colSum = make([]float64, v.dim)
	}
	if hadVec {
		for i, x := range v.rows[s] {
			v.colSum[i] -= float64(x)
		}
		v.nvec--
	}
	if vec == nil {
		v.rows[s] = nil
		clear(v.qmat[s*v.dim : (s+1)*v.dim])
		v.qscale[s] = 0
		return
	}
	v.rows[s] = vec
	for i, x := range vec {
		v.colSum[i] += float64(x)
	}
	v.nvec++
	if q != nil {
		copy(v.qmat[s*v.dim:(s+1)*v.dim], q)
		v.qscale[s] = scale
		return
	}
	v.qscale[s] = quantizeRow(v.qmat[s*v.dim:(s+1)*v.dim], vec)
}

// growZero extends s to length n with zeros, doubling the capacity when it
// must grow (so filling a view row by row is linear).
func growZero[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	s = slices.Grow(s, n-len(s))
	old := len(s)
	s = s[:n]
	clear(s[old:])
	return s
}

// reserve sizes a new view for n documents.
func (v *view) reserve(n int) {
	v.slots = make([]slot, 0, n)
	v.byName = make(map[string]int, n)
	if v.dim > 0 {
		v.rows = make([][]float32, 0, n)
		v.qmat = make([]int8, 0, n*v.dim)
		v.qscale = make([]float32, 0, n)
	}
}

// rankScratch holds one ranking's per-tool buffers, reused between
// queries (Index.scratch) so that a query at 100k tools does not allocate
// and clear megabytes. Methods accept a nil receiver (fresh buffers).
type rankScratch struct {
	lex, dense []float64
	dots       []int32
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

// background is the query's mean cosine to the live tools with a vector:
// q·(Σ rows)/count, exact and O(dim).
func (v *view) background(q []float32) (bg float64, ok bool) {
	if v.nvec <= 0 || len(v.colSum) != len(q) {
		return 0, false
	}
	var s float64
	for i, x := range q {
		s += float64(x) * v.colSum[i]
	}
	return s / float64(v.nvec), true
}

// calibrate maps a cosine to the dense score: above the background,
// rescaled so that 1 gives 1.
func calibrate(c, bg, span float64) float64 {
	return math.Max(0, math.Min(1, (c-bg)/span))
}

// parallelRows runs f over [0,n) in up to GOMAXPROCS contiguous parts once
// n·dim is big enough for goroutines to pay.
func parallelRows(n, dim int, f func(lo, hi int)) {
	parts := 1
	if n*dim >= 1<<18 {
		parts = min(runtime.GOMAXPROCS(0), max(1, n*dim>>17))
	}
	if parts <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}

// rankQuant is rank for a top-k hybrid or dense ranking with a query vector
// over a quantised view (see the comment at the top of this file). Caller
// holds Index.mu for reading.
//
// It also returns how many tools were re-scored exactly.
func (v *view) rankQuant(q Query, lex []float64, norm float64, qvec []float32, alpha float64, named map[string]bool, sc *rankScratch) (Ranking, int) {
	n := len(v.slots)
	bg, _ := v.background(qvec)
	span := 1 - bg
	qq := quantizeQuery(qvec)

	var dots []int32
	if sc == nil {
		dots = make([]int32, n)
	} else {
		sc.dots = slices.Grow(sc.dots[:0], n)[:n]
		dots = sc.dots
	}
	parallelRows(n, v.dim, func(lo, hi int) {
		dotsI8(qq.q, v.qmat[lo*v.dim:hi*v.dim], dots[lo:hi])
	})

	// Bounds of every eligible tool's score: the exact path's arithmetic on
	// the cosine's lower and upper bounds (every step is monotone; the
	// cosine bounds' slack errC dwarfs the rounding of (x−bg)·(1/span)
	// against (x−bg)/span). Named
	// tools sort above everything. The k-th best lower bound is kept in a
	// min-heap; his holds the upper bounds (NaN: not eligible).
	k := q.K
	errK := (qq.scale*127*float64(v.dim) + qq.l1) / 2 // errBound = rs·errK + errC
	errC := float64(v.dim) * 0x1p-22
	checkNamed := len(named) > 0
	denseOnly := q.Mode == Dense
	a1 := 1 - alpha // weight of the dense part
	if denseOnly {
		a1 = 1
	}
	invSpan := 1 / span // the bounds have slack for its rounding
	heap := make([]float64, 0, k)
	his := sc.denseBuf(n) // every element is written below
	for s := range n {
		sl := &v.slots[s]
		if !sl.live || (q.Allow != nil && !q.Allow(sl.name)) {
			his[s] = math.NaN()
			continue
		}
		var lo, hi float64
		if checkNamed && named[sl.name] {
			lo, hi = math.Inf(1), math.Inf(1)
		} else {
			var base float64 // the lexical part, exactly as the exact path has it
			if !denseOnly {
				var l float64
				if norm > 0 {
					l = min(1, lex[s]/norm)
				}
				base = alpha * l
			}
			lo, hi = base, base
			if sl.vec && span > 0 {
				rs := float64(v.qscale[s])
				c := float64(dots[s]) * qq.scale * rs
				e := rs*errK + errC
				hi = base + a1*min(1, max(0, (c+e-bg)*invSpan))
				if len(heap) == k && hi < heap[0] {
					// Below the k-th best lower bound already (which only
					// rises): neither in the top k nor a candidate.
					his[s] = hi
					continue
				}
				lo = base + a1*min(1, max(0, (c-e-bg)*invSpan))
			}
		}
		his[s] = hi
		if len(heap) < k {
			heap = append(heap, lo)
			for i := len(heap) - 1; i > 0; {
				p := (i - 1) / 2
				if heap[p] <= heap[i] {
					break
				}
				heap[p], heap[i] = heap[i], heap[p]
				i = p
			}
			continue
		}
		if lo > heap[0] {
			heap[0] = lo
			for i := 0; ; {
				l, w := 2*i+1, i
				if l < k && heap[l] < heap[w] {
					w = l
				}
				if r := l + 1; r < k && heap[r] < heap[w] {
					w = r
				}
				if w == i {
					break
				}
				heap[i], heap[w] = heap[w], heap[i]
				i = w
			}
		}
	}
	threshold := math.Inf(-1)
	if len(heap) == k {
		threshold = heap[0]
	}

	// Re-score exactly every tool that could still be in the top k.
	top := newTopHits(k)
	candidates := 0
	for s, hi := range his {
		if math.IsNaN(hi) || hi < threshold {
			continue
		}
		candidates++
		sl := &v.slots[s]
		h := Hit{Name: sl.name}
		if norm > 0 {
			h.Lexical = math.Min(1, lex[s]/norm)
		}
		if sl.vec && span > 0 {
			h.Dense = calibrate(float64(dot(qvec, v.rows[s])), bg, span)
		}
		if denseOnly {
			h.Score = h.Dense
		} else {
			h.Score = alpha*h.Lexical + (1-alpha)*h.Dense
		}
		if checkNamed && named[sl.name] {
			h.Named, h.Score = true, 1
		}
		top.push(h)
	}
	return Ranking{Hits: top.sorted(), Revision: v.rev}, candidates
}
