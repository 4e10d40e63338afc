// Package parallel runs independent pieces of work on every core.
//
// Each hands out items one at a time from a shared counter, so uneven items
// (a large file beside small ones, a long document beside short ones) keep
// every core busy to the end. Row kernels over a matrix, whose rows cost
// the same, split their range in contiguous parts instead (package index).
package parallel
