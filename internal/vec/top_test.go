package vec

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{0, 1, 3, 10, 100} {
		for _, n := range []int{0, 1, 5, 50, 500} {
			xs := make([]int, n)
			for i := range xs {
				xs[i] = r.IntN(40) // with ties
			}
			b := NewBest(k, func(a, b int) bool { return a > b })
			for _, x := range xs {
				b.Push(x)
			}
			got := b.Sorted(func(a, b int) int { return cmp.Compare(b, a) })
			want := slices.Clone(xs)
			slices.SortFunc(want, func(a, b int) int { return cmp.Compare(b, a) })
			want = want[:min(k, n)]
			if !slices.Equal(got, want) {
				t.Fatalf("k %d n %d: %v, want %v", k, n, got, want)
			}
		}
	}
	b := NewBest(2, func(a, b int) bool { return a > b })
	if _, ok := b.Worst(); ok {
		t.Fatal("Worst of an empty collector")
	}
	b.Push(1)
	b.Push(5)
	b.Push(3)
	if w, ok := b.Worst(); !ok || w != 3 {
		t.Fatalf("Worst %d %v, want 3", w, ok)
	}
}

func TestFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	f := NewFloor(1)
	for _, k := range []int{1, 2, 7, 30} {
		f.Reset(k)
		var xs []float64
		for i := range 300 {
			x := float64(r.IntN(50))
			xs = append(xs, x)
			f.Push(x)
			s := slices.Clone(xs)
			slices.Sort(s)
			if i+1 < k {
				if m := f.Min(); m > -1e300 {
					t.Fatalf("k %d after %d: Min %g before k were offered", k, i+1, m)
				}
				continue
			}
			if want := s[len(s)-k]; f.Min() != want {
				t.Fatalf("k %d after %d: Min %g, want %g", k, i+1, f.Min(), want)
			}
		}
	}
}
