package vec

import (
	"math"
	"slices"
)

// Rows is a matrix of vectors kept at 4 bits a value, for a scan that
// reads an eighth of what the float32 rows take: each approximate dot
// product it gives (Dots, Bound) comes with a rigorous bound on its error,
// so a caller can tell which rows may be among the best without computing
// their exact products, and compute only those (with Dot, from the float
// rows it keeps).
//
// A row is width/2 bytes, width being the dimension rounded up to a
// multiple of 128 (the padding's codes stand for 0). Byte 32c+j of a row
// holds the code of dimension 64c+j in its low nibble and of 64c+32+j in
// its high one; code u ∈ 1…15 stands for Scale·(u−8). The scale of a row is
// max|xᵢ|/7, and Err is at least ‖x − x̂‖₂ (x̂ the row the codes stand
// for) plus how far ‖x‖₂ exceeds 1, rounded up: a unit vector's error is
// about an eighth of its norm.
//
// Not safe for concurrent writes; concurrent reads are fine.
type Rows struct {
	dim, width int
	codes      []byte
	scale      []float32 // 0: no vector
	err        []float32
	kernel     kernel
}

// kernel is the scan's implementation.
type kernel int

const (
	kernelGo kernel = iota
	kernelAVX2
	kernelVNNI
)

// zeroCodes is a byte of two codes that stand for 0.
const zeroCodes = 0x88

// NewRows makes an empty matrix of vectors of dim values.
func NewRows(dim int) *Rows {
	r := &Rows{dim: dim, width: (dim + 127) / 128 * 128}
	switch {
	case haveVNNI:
		r.kernel = kernelVNNI
	case haveAVX2:
		r.kernel = kernelAVX2
	}
	return r
}

// Dim is the vectors' dimension.
func (r *Rows) Dim() int { return r.dim }

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.scale) }

// Resize makes the matrix n rows long; new rows hold no vector.
func (r *Rows) Resize(n int) {
	old := len(r.scale)
	if n <= old {
		r.codes, r.scale, r.err = r.codes[:n*r.width/2], r.scale[:n], r.err[:n]
		return
	}
	r.codes = grow(r.codes, n*r.width/2)
	for i := old * r.width / 2; i < len(r.codes); i++ {
		r.codes[i] = zeroCodes
	}
	r.scale = grow(r.scale, n)
	r.err = grow(r.err, n)
}

// grow extends s to length n with zeros, doubling its capacity when it
// must grow (so filling a matrix row by row is linear).
func grow[T any](s []T, n int) []T {
	if n <= len(s) {
		return s
	}
	if n > cap(s) {
		t := make([]T, len(s), max(n, 2*cap(s)))
		copy(t, s)
		s = t
	}
	old := len(s)
	s = s[:n]
	clear(s[old:])
	return s
}

// Set stores v (len Dim()) as row i; nil or a zero vector: no vector.
func (r *Rows) Set(i int, v []float32) {
	row := r.codes[i*r.width/2 : (i+1)*r.width/2]
	r.scale[i], r.err[i] = quantize4(row, v)
}

// Row4 is a vector encoded for a Rows ahead of storing it (Encode4, Put),
// so that many can be encoded at once on other cores.
type Row4 struct {
	codes      []byte
	scale, err float32
}

// Encode4 encodes v into row (reusing its memory) as a Rows of len(v)
// values stores it.
func Encode4(row *Row4, v []float32) {
	n := (len(v) + 127) / 128 * 64
	if cap(row.codes) < n {
		row.codes = make([]byte, n)
	}
	row.codes = row.codes[:n]
	row.scale, row.err = quantize4(row.codes, v)
}

// Put stores row, which Encode4 made of a vector of Dim() values, as row
// i; it reports false (and stores nothing) for a row of another size.
func (r *Rows) Put(i int, row *Row4) bool {
	if len(row.codes) != r.width/2 {
		return false
	}
	copy(r.codes[i*r.width/2:(i+1)*r.width/2], row.codes)
	r.scale[i], r.err[i] = row.scale, row.err
	return true
}

// Has says whether row i holds a vector.
func (r *Rows) Has(i int) bool { return r.scale[i] != 0 }

// quantize4 writes v's codes into row (the layout of Rows) and returns
// its scale and error bound.
func quantize4(row []byte, v []float32) (scale, errBound float32) {
	for i := range row {
		row[i] = zeroCodes
	}
	var mx, sq float64
	for _, x := range v {
		mx = max(mx, math.Abs(float64(x)))
		sq += float64(x) * float64(x)
	}
	if mx == 0 || math.IsNaN(mx) || math.IsInf(mx, 0) {
		return 0, 0
	}
	s := float32(mx / 7)
	inv := 1 / float64(s)
	var e2 float64
	for i, x := range v {
		c := max(-7, min(7, math.Round(float64(x)*inv)))
		d := float64(x) - float64(s)*c
		e2 += d * d
		at, shift := codeAt(i)
		row[at] = row[at]&^(15<<shift) | byte(c+8)<<shift
	}
	// Rounded up: the float64 sums above err by far less than 1e-9.
	e := math.Sqrt(e2)*(1+1e-9) + 1e-12 + max(0, math.Sqrt(sq)*(1+1e-9)-1)
	return s, roundUp32(e)
}

// codeAt is where dimension i's code is in a row: its byte, and the shift
// of its nibble.
func codeAt(i int) (at int, shift uint) {
	c, j := i/64, i%64
	if j < 32 {
		return 32*c + j, 0
	}
	return 32*c + j - 32, 4
}

// roundUp32 is the least float32 at least x.
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// Query is a query vector prepared for a matrix's scan (Rows.Query).
type Query struct {
	q     []int8  // the quantised query, in the kernel's order
	bias  int32   // 8·Σq̂: what the codes' offset adds to a dot product
	scale float64 // q ≈ q̂·scale
	f     float64 // ≥ ‖q − q̂·scale‖₂
	norm  float64 // ≥ ‖q‖₂
}

// Query prepares q (len Dim()) for Dots and Bound.
func (r *Rows) Query(q []float32) Query {
	var mx, sq float64
	for _, x := range q {
		mx = max(mx, math.Abs(float64(x)))
		sq += float64(x) * float64(x)
	}
	out := Query{q: make([]int8, r.width), norm: math.Sqrt(sq)*(1+1e-9) + 1e-12}
	if mx == 0 || math.IsNaN(mx) || math.IsInf(mx, 0) {
		out.norm = 0
		return out
	}
	out.scale = mx / 127
	nat := make([]int8, r.width)
	var f2 float64
	var sum int32
	for i, x := range q {
		c := max(-127, min(127, math.Round(float64(x)/out.scale)))
		d := float64(x) - out.scale*c
		f2 += d * d
		nat[i] = int8(c)
		sum += int32(c)
	}
	out.f = math.Sqrt(f2)*(1+1e-9) + 1e-12
	out.bias = 8 * sum
	if r.kernel == kernelVNNI {
		// For each 64 bytes of a row: the low nibbles' dimensions, then
		// the high nibbles' (see dots4VNNI).
		for k := 0; k < r.width/128; k++ {
			b := nat[128*k : 128*k+128]
			dst := out.q[128*k : 128*k+128]
			copy(dst[0:32], b[0:32])
			copy(dst[32:64], b[64:96])
			copy(dst[64:96], b[32:64])
			copy(dst[96:128], b[96:128])
		}
	} else {
		out.q = nat
	}
	return out
}

// Dots sets out[i−lo] to the integer dot product of q with rows lo…hi−1
// (len(out) ≥ hi−lo), which Bound turns into an approximate cosine.
func (r *Rows) Dots(q *Query, lo, hi int, out []int32) {
	n := hi - lo
	if n <= 0 {
		return
	}
	m := r.codes[lo*r.width/2 : hi*r.width/2]
	out = out[:n]
	switch r.kernel {
	case kernelVNNI:
		dots4VNNI(&q.q[0], &m[0], r.width, n, q.bias, &out[0])
	case kernelAVX2:
		dots4AVX2(&q.q[0], &m[0], r.width, n, q.bias, &out[0])
	default:
		dots4Go(q.q, m, q.bias, out)
	}
}

// dots4Go is the portable kernel, over a query in natural order.
func dots4Go(q []int8, m []byte, bias int32, out []int32) {
	width := len(q)
	stride := width / 2
	for r := range out {
		row := m[r*stride : (r+1)*stride]
		var s int32
		for c := 0; c < width/64; c++ {
			lo, hi := q[64*c:64*c+32], q[64*c+32:64*c+64]
			b := row[32*c : 32*c+32]
			for j := range 32 {
				s += int32(lo[j])*int32(b[j]&15) + int32(hi[j])*int32(b[j]>>4)
			}
		}
		out[r] = s - bias
	}
}

// boundMargin covers the rounding of Bound's own arithmetic.
const boundMargin = 1e-9

// Bound turns the integer dot product d of q with row i (Dots) into an
// approximation c of q·row and a bound: |q·row − c| ≤ slack. Row i must
// hold a vector.
//
// With row = x̂ + e (x̂ what its codes stand for) and q = q̂·scale + f,
// q·row = scale·(q̂·x̂) + f·x̂ + q·e, where scale·(q̂·x̂) = c, |f·x̂| ≤
// ‖f‖·(‖row‖ + ‖e‖) and |q·e| ≤ ‖q‖·‖e‖.
func (r *Rows) Bound(q *Query, i int, d int32) (c, slack float64) {
	e := float64(r.err[i])
	return float64(d) * q.scale * float64(r.scale[i]), q.f*(1+e) + q.norm*e + boundMargin
}

// Upper sets up[j] to an upper bound of q·row for rows lo…lo+len(dots)−1,
// given their integer dot products (Dots): Bound's c + slack, for a whole
// chunk of rows at once (a row without a vector gets the slack alone).
func (r *Rows) Upper(q *Query, lo int, dots []int32, up []float64) {
	n := len(dots)
	sc, er, up := r.scale[lo:lo+n], r.err[lo:lo+n], up[:n]
	a, b, c0 := q.scale, q.f+q.norm, q.f+boundMargin
	for j, d := range dots {
		up[j] = float64(d)*a*float64(sc[j]) + b*float64(er[j]) + c0
	}
}

// Equal says whether r and o hold the same rows (nil: none), codes and
// bounds alike.
func (r *Rows) Equal(o *Rows) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.dim == o.dim && slices.Equal(r.codes, o.codes) && slices.Equal(r.scale, o.scale) && slices.Equal(r.err, o.err)
}

// Decode writes into dst (len Dim()) the vector row i's codes stand for,
// x̂: Bound's approximation is q·x̂ (up to the query's own quantisation).
func (r *Rows) Decode(i int, dst []float32) {
	row := r.codes[i*r.width/2 : (i+1)*r.width/2]
	s := r.scale[i]
	for j := range dst {
		at, shift := codeAt(j)
		dst[j] = s * float32(int(row[at]>>shift&15)-8)
	}
}
