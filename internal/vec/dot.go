package vec

// Dot is Σ aᵢ·bᵢ over len(a) (b at least as long), in float32 with eight
// partial sums added pairwise at the end. Every exact score of the index
// is this one computation, so scores that two paths compute agree to the
// bit.
func Dot(a, b []float32) float32 {
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

// DotErr bounds |Dot(a, b) − a·b| for vectors of dim values whose norms
// are at most 1 (each product and partial sum rounds once in float32; this
// is twice the usual worst case, for safety).
func DotErr(dim int) float64 { return float64(dim) * 0x1p-22 }
