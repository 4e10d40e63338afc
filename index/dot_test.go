package index

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
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-4 {
			t.Errorf("n=%d: dot %v, want %v", n, got, want)
		}
	}
}

func BenchmarkDot256(b *testing.B) {
	x, y := make([]float32, 256), make([]float32, 256)
	for i := range x {
		x[i], y[i] = float32(i), float32(256-i)
	}
	var s float32
	for b.Loop() {
		s += dot(x, y)
	}
	_ = s
}
