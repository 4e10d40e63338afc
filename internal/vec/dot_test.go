package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 256, 300} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = r.Float32()-0.5, r.Float32()-0.5
			want += float64(a[i]) * float64(b[i])
		}
		if got := Dot(a, b); math.Abs(float64(got)-want) > 1e-4 {
			t.Errorf("n=%d: Dot %v, want %v", n, got, want)
		}
	}
}

// TestDotErr checks DotErr against the exact dot product of unit vectors,
// spiky ones included (one large component: the sums cancel least there).
func TestDotErr(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 2000 {
		dim := []int{16, 256, 1024}[trial%3]
		a, b := randUnit(r, dim), randUnit(r, dim)
		if trial%5 == 0 {
			b = spiky(r, b)
		}
		var exact float64
		for i := range a {
			exact += float64(a[i]) * float64(b[i])
		}
		if d := math.Abs(float64(Dot(a, b)) - exact); d > DotErr(dim) {
			t.Fatalf("trial %d: |Dot − exact| = %.3g exceeds DotErr %.3g", trial, d, DotErr(dim))
		}
	}
}

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return unit(v)
}

// spiky adds a large component to v and normalises it again.
func spiky(r *rand.Rand, v []float32) []float32 {
	v[r.IntN(len(v))] += 3
	return unit(v)
}

func unit(v []float32) []float32 {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(sq)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v
}

func BenchmarkDot256(b *testing.B) {
	x, y := make([]float32, 256), make([]float32, 256)
	for i := range x {
		x[i], y[i] = float32(i), float32(256-i)
	}
	var s float32
	for b.Loop() {
		s += Dot(x, y)
	}
	_ = s
}
