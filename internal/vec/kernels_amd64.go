package vec

import "golang.org/x/sys/cpu"

// haveAVX2 says whether the AVX2 kernels can run (x/sys/cpu includes the
// OS saving the YMM registers); haveVNNI, the AVX-512 VNNI one (the OS
// saving the ZMM registers too).
var (
	haveAVX2 = cpu.X86.HasAVX2
	haveVNNI = cpu.X86.HasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
)

// dotsInt8AVX2 is in int8_amd64.s.
//
//go:noescape
func dotsInt8AVX2(q *int16, m *int8, dim, n int, out *int32)

// dots4AVX2 and dots4VNNI are in rows_amd64.s.
//
//go:noescape
func dots4AVX2(q *int8, m *byte, width, n int, bias int32, out *int32)

//go:noescape
func dots4VNNI(q *int8, m *byte, width, n int, bias int32, out *int32)

// haveAVX512 says whether reachAVX512 can run.
var haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// reachAVX512 is in reach_amd64.s: it writes the passing rows' indices
// (params.base + j) to out and returns how many, for n rows (a multiple of
// 8).
//
//go:noescape
func reachAVX512(dots *int32, scale, err *float32, acc *float64, n int, params *reachParams, out *int32) int
