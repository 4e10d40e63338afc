//go:build !amd64

package vec

// No assembly kernels here: the portable loops run.
const (
	haveAVX2 = false
	haveVNNI = false
)

func dotsInt8AVX2(q *int16, m *int8, dim, n int, out *int32) {
	panic("vec: no AVX2 kernel on this architecture")
}

func dots4AVX2(q *int8, m *byte, width, n int, bias int32, out *int32) {
	panic("vec: no AVX2 kernel on this architecture")
}

func dots4VNNI(q *int8, m *byte, width, n int, bias int32, out *int32) {
	panic("vec: no VNNI kernel on this architecture")
}

var haveAVX512 = false

func reachAVX512(dots *int32, scale, err *float32, acc *float64, n int, params *reachParams, out *int32) int {
	panic("vec: no AVX-512 kernel on this architecture")
}
