package index

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/toolsrv/toolsrv/internal/vec"
)

// The dense scan at large catalogs is bounded by memory traffic: at 100k
// tools × 256 dims the float32 matrix is 100 MB, read once per query. The
// view therefore keeps, beside the float32 rows, a copy at 4 bits a value
// (vec.Rows: an eighth of the bytes), whose scan gives every tool's cosine
// with a rigorous bound on its error, and one at 8 bits (the vector file's
// int8 rows, a quarter of the bytes), which bounds the cosine of a tool the
// 4-bit scan could not rule out ten times more tightly from a few cache
// lines. A top-k ranking bounds each tool's score from below and above with
// them and scores exactly only the tools that may still be among the best
// (prune.go).

// setRow stores a unit vector (or, with nil, none) as slot s's row and its
// 4-bit copy, and keeps the column sums of the live rows (for the query's
// background) current. hadVec says whether the slot held a vector before.
// The row is vec itself, not a copy: vec is the store's (read-only) vector.
func (v *view) setRow(s int, vec []float32, hadVec bool) {
	v.setRowEncoded(s, vec, hadVec, nil, nil, 0)
}

// setRowEncoded is setRow given vec encoded ahead: enc, its 4-bit row, and
// q with scale qs, its int8 row (nil: encoded here; see upsertAll).
func (v *view) setRowEncoded(s int, row []float32, hadVec bool, enc *vec.Row4, q []int8, qs float32) {
	if v.dim == 0 {
		return
	}
	v.rows = growZero(v.rows, len(v.slots))
	v.q8 = growZero(v.q8, len(v.slots)*v.dim)
	v.q8scale = growZero(v.q8scale, len(v.slots))
	if v.q4 == nil {
		v.q4 = vec.NewRows(v.dim)
	}
	if v.q4.Len() < len(v.slots) {
		v.q4.Resize(len(v.slots))
	}
	if v.colSum == nil {
		v.colSum = make([]float64, v.dim)
	}
	if hadVec {
		for i, x := range v.rows[s] {
			v.colSum[i] -= float64(x)
		}
		v.nvec--
	}
	q8 := v.q8[s*v.dim : (s+1)*v.dim]
	if row == nil {
		v.rows[s] = nil
		v.q4.Set(s, nil)
		clear(q8)
		v.q8scale[s] = 0
		return
	}
	v.rows[s] = row
	for i, x := range row {
		v.colSum[i] += float64(x)
	}
	v.nvec++
	if enc == nil || !v.q4.Put(s, enc) {
		v.q4.Set(s, row)
	}
	if len(q) == v.dim {
		copy(q8, q)
		v.q8scale[s] = qs
	} else {
		v.q8scale[s] = quantizeRow(q8, row)
	}
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
	v.state = make([]slotState, 0, n)
	v.byName = make(map[string]int, n)
	if v.dim > 0 {
		v.rows = make([][]float32, 0, n)
		v.q8 = make([]int8, 0, n*v.dim)
		v.q8scale = make([]float32, 0, n)
	}
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
	parallelParts(n, dim, func(_, lo, hi int) { f(lo, hi) })
}

// parallelParts is parallelRows that tells f which part (0…rowParts−1) it
// runs.
func parallelParts(n, dim int, f func(part, lo, hi int)) {
	parts := rowParts(n, dim)
	if parts <= 1 {
		f(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*n/parts, (p+1)*n/parts
		wg.Go(func() { f(p, lo, hi) })
	}
	wg.Wait()
}

// rowParts is how many parts parallelRows splits n rows of dim values in.
func rowParts(n, dim int) int {
	if n*dim < 1<<18 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), max(1, n*dim>>17))
}

// The usage signal's int8 kernels (usage.go), from package vec.

// quantizeRow writes the int8 version of vec into dst and returns its scale.
func quantizeRow(dst []int8, v []float32) float32 { return vec.QuantizeInt8(dst, v) }

// rowScaleOK says whether x can be the scale quantizeRow gave a unit vector.
func rowScaleOK(x float32) bool { return vec.ScaleOK(x) }

// dotsI8 sets out[r] to the integer dot product of q with row r of m.
func dotsI8(q []int16, m []int8, out []int32) { vec.DotsInt8(q, m, out) }

// quantQuery is a query vector quantised to int16 for dotsI8.
type quantQuery struct {
	q     []int16
	scale float64 // q ≈ q̂·scale
	l1    float64 // Σ|q_i| of the float query
}

// quantizeQuery quantises q for dotsI8 (vec.QuantizeQuery8).
func quantizeQuery(q []float32) quantQuery {
	v := vec.QuantizeQuery8(q)
	return quantQuery{q: v.Q, scale: v.Scale, l1: v.L1}
}

// errBound bounds |approximate − exact dot product| for a row of scale rs
// (vec.Query8.ErrBound).
func (qq quantQuery) errBound(rs float32, dim int) float64 {
	return vec.Query8{Q: qq.q, Scale: qq.scale, L1: qq.l1}.ErrBound(rs, dim)
}
