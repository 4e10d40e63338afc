package index

import "golang.org/x/sys/cpu"

// haveInt8Kernel says whether the vectorised int8 scan is available: AVX2
// (checked once at start; the OS must also save the YMM registers, which
// x/sys/cpu includes in HasAVX2).
var haveInt8Kernel = cpu.X86.HasAVX2

// dotsI8AVX2 is implemented in quant_amd64.s.
//
//go:noescape
func dotsI8AVX2(q *int16, m *int8, dim, n int, out *int32)

// dotsI8 sets out[r] to the integer dot product of q with row r of m (rows
// of len(q) values). len(q) must be a positive multiple of 32.
func dotsI8(q []int16, m []int8, out []int32) {
	dim := len(q)
	n := len(out)
	if n == 0 {
		return
	}
	if !haveInt8Kernel || dim == 0 || dim%32 != 0 || len(m) < n*dim {
		dotsI8Go(q, m, out)
		return
	}
	dotsI8AVX2(&q[0], &m[0], dim, n, &out[0])
}
