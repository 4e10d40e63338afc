package vec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReaching: the AVX-512 filter keeps the rows the portable loop keeps
// (the same bound, within rounding: thresholds are drawn away from the
// rows' bounds), for chunks of every length and a start inside the matrix.
func TestReaching(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	const dim, n = 256, 300
	m := NewRows(dim)
	m.Resize(n)
	for i := range n {
		if i%17 != 3 { // some rows without a vector
			m.Set(i, randUnit(r, dim))
		}
	}
	q := m.Query(randUnit(r, dim))
	dots := make([]int32, n)
	m.Dots(&q, 0, n, dots)
	acc := make([]float64, n)
	for i := range acc {
		if r.IntN(3) == 0 {
			acc[i] = r.Float64() * 4
		}
	}
	c := &Reach{WA: 0.5, RA: 0.02, KA: 0.25, WB: 0.5, RB: 0.01 - 0.2, KB: 1 / 0.8}
	up := make([]float64, n)
	m.Upper(&q, 0, dots, up)
	for trial := range 60 {
		lo := r.IntN(40)
		hi := lo + r.IntN(n-lo)
		thr := r.Float64() * 0.6
		var want []int32
		for j := lo; j < hi; j++ {
			b := reachBound(c, acc[j], up[j])
			if b >= thr-1e-12 && b < thr+1e-12 {
				thr += 1e-9 // a threshold on a bound's rounding: move it off
			}
		}
		for j := lo; j < hi; j++ {
			if reachBound(c, acc[j], up[j]) >= thr {
				want = append(want, int32(j))
			}
		}
		got := m.Reaching(&q, c, lo, dots[lo:hi], acc[lo:hi], thr, []int32{-1})
		if got[0] != -1 || !slices.Equal(got[1:], want) {
			t.Fatalf("trial %d (rows %d…%d, m %.3f): %v, want %v", trial, lo, hi, thr, got[1:], want)
		}
		saved := haveAVX512
		haveAVX512 = false
		portable := m.Reaching(&q, c, lo, dots[lo:hi], acc[lo:hi], thr, nil)
		haveAVX512 = saved
		if !slices.Equal(portable, want) {
			t.Fatalf("trial %d: the portable filter %v, want %v", trial, portable, want)
		}
	}
	if !haveAVX512 {
		t.Log("no AVX-512 here: only the portable filter ran")
	}
}
