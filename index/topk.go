package index

import (
	"slices"
	"strings"
)

// sortHits sorts best first. It sorts pointers (a Hit is 56 bytes) and
// then lays the hits out in order.
func sortHits(hits []Hit) {
	ptrs := make([]*Hit, len(hits))
	for i := range hits {
		ptrs[i] = &hits[i]
	}
	slices.SortFunc(ptrs, compareHits)
	sorted := make([]Hit, len(hits))
	for i, p := range ptrs {
		sorted[i] = *p
	}
	copy(hits, sorted)
}

// compareHits is better as a three-way comparison.
func compareHits(a, b *Hit) int {
	switch {
	case a.Named != b.Named:
		if a.Named {
			return -1
		}
		return 1
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// better orders hits: named tools first, then by score, then by name (so
// rankings are deterministic).
func better(a, b Hit) bool {
	if a.Named != b.Named {
		return a.Named
	}
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

// topK returns the k best hits, sorted, keeping a bounded heap whose root
// is the worst of the best so far (O(n log k) instead of sorting all).
func topK(hits []Hit, k int) []Hit {
	c := newTopHits(k)
	for _, x := range hits {
		c.push(x)
	}
	return c.sorted()
}

// topHits collects the k best hits offered to it one at a time, so a top-k
// ranking never lays out a Hit per tool.
type topHits struct {
	k int
	h []Hit
}

func newTopHits(k int) *topHits { return &topHits{k: k, h: make([]Hit, 0, k)} }

func (c *topHits) push(x Hit) {
	h := c.h
	if len(h) < c.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !better(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		c.h = h
		return
	}
	if !better(x, h[0]) {
		return
	}
	h[0] = x
	for i := 0; ; { // sift down
		l, w := 2*i+1, i
		if l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r := l + 1; r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// sorted returns the collected hits, best first.
func (c *topHits) sorted() []Hit {
	sortHits(c.h)
	return c.h
}
