package index

import (
	"slices"
	"strings"

	"github.com/toolsrv/toolsrv/internal/vec"
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
	c := vec.NewBest(k, better)
	for _, x := range hits {
		c.Push(x)
	}
	return c.Sorted(func(a, b Hit) int { return compareHits(&a, &b) })
}
