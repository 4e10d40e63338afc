package builtin

import (
	"math"
	"sort"
)

// Neighbour is a vocabulary term close to another one in the table.
type Neighbour struct {
	Term string
	Cos  float32 // cosine between the two table rows
}

// NeighbourSet answers nearest-term questions restricted to a set of
// candidate terms (typically those that occur in a catalog), by cosine
// between the table's vocabulary rows. It is read-only after construction
// and safe for concurrent use.
type NeighbourSet struct {
	e     *Embedder
	terms []string    // candidates present in the vocabulary, sorted
	rows  [][]float32 // unit-length rows of terms
}

// NeighbourSet builds the candidate set from terms (as produced by
// text.Table); terms outside the vocabulary are ignored, since n-gram bucket
// vectors carry no learned meaning.
func (e *Embedder) NeighbourSet(terms []string) *NeighbourSet {
	seen := make(map[string]bool, len(terms))
	ns := &NeighbourSet{e: e}
	for _, t := range terms {
		if seen[t] {
			continue
		}
		seen[t] = true
		if _, ok := e.index[t]; ok {
			ns.terms = append(ns.terms, t)
		}
	}
	sort.Strings(ns.terms)
	ns.rows = make([][]float32, len(ns.terms))
	for i, t := range ns.terms {
		ns.rows[i] = unitRow(e.t.Row(int(e.index[t])))
	}
	return ns
}

// Len is the number of candidate terms.
func (ns *NeighbourSet) Len() int { return len(ns.terms) }

// Neighbours returns up to k candidate terms nearest to term (which need
// not be a candidate itself, but must be in the vocabulary), best first,
// excluding term itself. Ties are broken by term. Unknown terms have none.
func (ns *NeighbourSet) Neighbours(term string, k int) []Neighbour {
	r, ok := ns.e.index[term]
	if !ok || k <= 0 {
		return nil
	}
	q := unitRow(ns.e.t.Row(int(r)))
	best := make([]Neighbour, 0, k+1)
	for i, row := range ns.rows {
		if ns.terms[i] == term {
			continue
		}
		var c float32
		for j, x := range row {
			c += x * q[j]
		}
		if len(best) == k && !better(c, ns.terms[i], best[k-1]) {
			continue
		}
		n := Neighbour{ns.terms[i], c}
		pos := sort.Search(len(best), func(p int) bool { return better(n.Cos, n.Term, best[p]) })
		best = append(best, Neighbour{})
		copy(best[pos+1:], best[pos:])
		best[pos] = n
		if len(best) > k {
			best = best[:k]
		}
	}
	return best
}

func better(c float32, term string, than Neighbour) bool {
	if c != than.Cos {
		return c > than.Cos
	}
	return term < than.Term
}

func unitRow(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := float32(1 / math.Sqrt(n))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
