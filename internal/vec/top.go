package vec

import (
	"math"
	"slices"
)

// Best collects the k best of the values offered to it one at a time
// (Push), by better, in O(log k) each: a heap whose root is the worst of
// the best so far.
type Best[T any] struct {
	k      int
	better func(a, b T) bool
	h      []T
}

// NewBest makes a collector of the k best values by better, a strict
// order (better(a, b): a comes before b).
func NewBest[T any](k int, better func(a, b T) bool) *Best[T] {
	return &Best[T]{k: k, better: better, h: make([]T, 0, k)}
}

// Len is how many values it holds (at most k).
func (b *Best[T]) Len() int { return len(b.h) }

// Worst is the worst of the values held, once k are (ok false before).
func (b *Best[T]) Worst() (x T, ok bool) {
	if b.k == 0 || len(b.h) < b.k {
		return x, false
	}
	return b.h[0], true
}

// Push offers x.
func (b *Best[T]) Push(x T) {
	h := b.h
	if len(h) < b.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !b.better(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		b.h = h
		return
	}
	if len(h) == 0 || !b.better(x, h[0]) {
		return
	}
	h[0] = x
	for i := 0; ; { // sift down
		l, w := 2*i+1, i
		if l < len(h) && b.better(h[w], h[l]) {
			w = l
		}
		if r := l + 1; r < len(h) && b.better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// Sorted returns the values held, best first (cmp orders them as better
// does, ties included); the collector is spent.
func (b *Best[T]) Sorted(cmp func(a, b T) int) []T {
	slices.SortFunc(b.h, cmp)
	return b.h
}

// Floor keeps the k largest of the numbers offered to it: once k were
// offered, Min is the k-th largest, a number at least k of them reach.
type Floor struct {
	k int
	h []float64 // a min-heap
}

// NewFloor makes a Floor of the k largest numbers (k ≥ 1).
func NewFloor(k int) *Floor { return &Floor{k: k, h: make([]float64, 0, k)} }

// Reset empties f for k numbers, keeping its memory.
func (f *Floor) Reset(k int) { f.k, f.h = k, f.h[:0] }

// Min is the k-th largest number offered, or −Inf before k were.
func (f *Floor) Min() float64 {
	if len(f.h) < f.k {
		return math.Inf(-1)
	}
	return f.h[0]
}

// Values are the numbers held: the k largest offered (fewer before k
// were), in no particular order.
func (f *Floor) Values() []float64 { return f.h }

// Push offers x.
func (f *Floor) Push(x float64) {
	h := f.h
	if len(h) < f.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p] <= h[i] {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		f.h = h
		return
	}
	if x <= h[0] {
		return
	}
	h[0] = x
	k := len(h)
	for i := 0; ; {
		l, w := 2*i+1, i
		if l < k && h[l] < h[w] {
			w = l
		}
		if r := l + 1; r < k && h[r] < h[w] {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
