//go:build !amd64

package index

// haveInt8Kernel is false where there is no assembly kernel: the pure-Go
// int8 loop is slower than the float32 scan, so the exact path is used.
const haveInt8Kernel = false

func dotsI8(q []int16, m []int8, out []int32) { dotsI8Go(q, m, out) }
