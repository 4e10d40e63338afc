package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotsInt8KernelMatchesGo checks the vectorised int8 kernel (where
// the machine has one) against the portable loop: integer arithmetic, so
// the results must be equal, including at the extremes of both ranges.
func TestDotsInt8KernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{32, 64, 256, 288, 1024} {
		n := 37
		q := make([]int16, dim)
		m := make([]int8, n*dim)
		bound := min(32767, math.MaxInt32/(127*dim))
		for i := range q {
			q[i] = int16(r.IntN(2*bound+1) - bound)
		}
		for i := range m {
			m[i] = int8(r.IntN(255) - 127)
		}
		// one row at the extremes: every product at its largest magnitude
		for i := range dim {
			q[i] = int16(bound)
			m[i] = 127
		}
		got, want := make([]int32, n), make([]int32, n)
		DotsInt8(q, m, got)
		dotsInt8Go(q, m, want)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("dim %d row %d: kernel %d, portable %d", dim, i, got[i], want[i])
			}
		}
		if want[0] != int32(bound*127*dim) {
			t.Fatalf("dim %d: extreme row sums to %d, want %d (overflow?)", dim, want[0], bound*127*dim)
		}
	}
}

// TestInt8ErrBound checks that ErrBound holds for the int8 approximation
// of random (and spiky) unit vectors.
func TestInt8ErrBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim = 256
	for trial := range 2000 {
		q, m := randUnit(r, dim), randUnit(r, dim)
		if trial%10 == 0 {
			m = spiky(r, m)
		}
		qq := QuantizeQuery8(q)
		row := make([]int8, dim)
		rs := QuantizeInt8(row, m)
		out := make([]int32, 1)
		DotsInt8(qq.Q, row, out)
		approx := float64(out[0]) * qq.Scale * float64(rs)
		exact := float64(Dot(q, m))
		if e := qq.ErrBound(rs, dim); math.Abs(approx-exact) > e {
			t.Fatalf("trial %d: |%.6f − %.6f| = %.2g exceeds the bound %.2g", trial, approx, exact, math.Abs(approx-exact), e)
		}
		if !ScaleOK(rs) {
			t.Fatalf("trial %d: the scale %g of a unit vector is refused", trial, rs)
		}
	}
	if ScaleOK(-1) || ScaleOK(0.5) {
		t.Fatal("ScaleOK accepts a scale no unit vector has")
	}
}
