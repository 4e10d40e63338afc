// Package vec holds the vector kernels the index and its usage signal
// share: the float32 dot product every exact score is computed with (Dot),
// vectors quantised to 8 bits (QuantizeInt8, Query8, DotsInt8) and to 4
// bits (Rows, a matrix scanned with a rigorous error bound for each
// approximate dot product), and the bounded selections of the best k
// values (Best, Floor).
//
// The kernels are integer arithmetic in assembly where the machine has the
// instructions (AVX2; AVX-512 VNNI for the 4-bit scan) and portable Go
// elsewhere; both give the same integers, so an approximation and its
// error bound do not depend on the machine. Dot is plain Go, one summation
// order everywhere: two paths that score a vector with it agree to the
// bit.
//
// It imports nothing of toolsrv, so any package may use it.
package vec
