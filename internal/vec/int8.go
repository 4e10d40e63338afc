package vec

import "math"

// QuantizeInt8 writes v quantised to 8 bits into dst (len(v)) and returns
// the scale, max|v|/127, with v ≈ dst·scale (0 and zeros for a zero v).
func QuantizeInt8(dst []int8, v []float32) float32 {
	var mx float32
	for _, x := range v {
		mx = max(mx, float32(math.Abs(float64(x))))
	}
	if mx == 0 {
		clear(dst)
		return 0
	}
	scale := mx / 127
	inv := 127 / float64(mx)
	for i, x := range v {
		dst[i] = int8(max(-127, min(127, math.Round(float64(x)*inv))))
	}
	return scale
}

// ScaleOK says whether x can be the scale QuantizeInt8 gave a unit vector
// (at most 1/127, with room for rounding; 0: no vector): a scale read from
// a file is checked, so that a damaged one cannot make a dot product of
// any size.
func ScaleOK(x float32) bool { return x >= 0 && x <= 1.001/127 }

// Query8 is a query vector quantised to int16 for DotsInt8.
type Query8 struct {
	Q     []int16
	Scale float64 // Q ≈ q/Scale
	L1    float64 // Σ|qᵢ| of the float query
}

// QuantizeQuery8 scales q so that |Q̂ᵢ| ≤ qmax, where qmax keeps every
// int32 sum of len(q) products with int8 rows exact (no overflow).
func QuantizeQuery8(q []float32) Query8 {
	qmax := min(32767, float64(math.MaxInt32)/(127*float64(len(q))))
	qmax = math.Floor(qmax)
	var mx, l1 float64
	for _, x := range q {
		a := math.Abs(float64(x))
		mx = max(mx, a)
		l1 += a
	}
	out := Query8{Q: make([]int16, len(q)), L1: l1}
	if mx == 0 {
		return out
	}
	out.Scale = mx / qmax
	for i, x := range q {
		out.Q[i] = int16(max(-qmax, min(qmax, math.Round(float64(x)/out.Scale))))
	}
	return out
}

// ErrBound bounds |approximate − exact float32 dot product| for a row of
// scale rs (QuantizeInt8) and dim values:
//
//	q·m = qs·rs·Σq̂m̂ + rs·Σ e_q,i·m̂_i + Σ q_i·e_m,i
//
// with |e_q| ≤ qs/2, |m̂| ≤ 127, |e_m| ≤ rs/2, so the error is at most
// rs·(qs·127·dim + ‖q‖₁)/2, plus DotErr (the rounding of the exact dot
// product itself, for unit vectors).
func (q Query8) ErrBound(rs float32, dim int) float64 {
	return float64(rs)*(q.Scale*127*float64(dim)+q.L1)/2 + DotErr(dim)
}

// dotsInt8Go is the portable kernel: out[r] = Σ q[i]·m[r·len(q)+i].
func dotsInt8Go(q []int16, m []int8, out []int32) {
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

// DotsInt8 sets out[r] to the integer dot product of q with row r of m
// (rows of len(q) values, at least len(out) of them).
func DotsInt8(q []int16, m []int8, out []int32) {
	dim := len(q)
	if len(out) == 0 {
		return
	}
	if !haveAVX2 || dim == 0 || dim%32 != 0 || len(m) < len(out)*dim {
		dotsInt8Go(q, m, out)
		return
	}
	dotsInt8AVX2(&q[0], &m[0], dim, len(out), &out[0])
}
