package embedding

import (
	"fmt"
	"math"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/text"
)

// Expansion is lexical query expansion from the built-in table's learned
// neighbours: each query term adds its K nearest catalog terms (cosine
// between table rows) to the BM25 query with weight Weight × cosine.
// Neighbours below MinCos are dropped.
type Expansion struct {
	K      int
	Weight float64
	MinCos float64
	// Variants also adds, at weight 1, the catalog words that share a
	// query word's stem (stemming the unstemmed reference BM25, closer to
	// the index's BM25F); K = 0 with Variants measures stemming alone.
	Variants bool
}

// Name labels the expansion in reports.
func (x Expansion) Name() string {
	s := fmt.Sprintf("qe k=%d w=%.2f", x.K, x.Weight)
	if x.Variants {
		s = "stem " + s
	}
	if x.MinCos > 0 {
		s += fmt.Sprintf(" c>=%.2f", x.MinCos)
	}
	return s
}

// expander maps the reference BM25's raw query words to weighted raw
// catalog words through stemmed table neighbours.
type expander struct {
	ns    *builtin.NeighbourSet
	raw   map[string][]string // catalog stem → raw catalog words with that stem
	stem  map[string]string   // raw word → its single stem ("" if none)
	maxK  int
	cache map[string][]builtin.Neighbour
}

func newExpander(e *builtin.Embedder, b *bm25, maxK int) *expander {
	x := &expander{raw: map[string][]string{}, stem: map[string]string{}, maxK: maxK, cache: map[string][]builtin.Neighbour{}}
	var stems []string
	for w := range b.postings {
		s := x.stemOf(w)
		if s == "" {
			continue
		}
		if len(x.raw[s]) == 0 {
			stems = append(stems, s)
		}
		x.raw[s] = append(x.raw[s], w)
	}
	x.ns = e.NeighbourSet(stems)
	return x
}

func (x *expander) stemOf(w string) string {
	if s, ok := x.stem[w]; ok {
		return s
	}
	s := ""
	if ts := text.Table().Terms(w); len(ts) == 1 {
		s = ts[0]
	}
	x.stem[w] = s
	return s
}

// weights returns the weighted BM25 query for q under expansion o: the
// query's own words at weight 1, neighbours' raw words at Weight × cosine
// (the largest if several query words reach the same one).
func (x *expander) weights(q string, o Expansion) map[string]float64 {
	w := map[string]float64{}
	qstems := map[string]bool{}
	for _, t := range text.Reference().Terms(q) {
		w[t] = 1
		if s := x.stemOf(t); s != "" {
			qstems[s] = true
		}
	}
	if o.Variants {
		for s := range qstems {
			for _, r := range x.raw[s] {
				w[r] = 1
			}
		}
	}
	if o.K <= 0 || o.Weight <= 0 {
		return w
	}
	for s := range qstems {
		nb, ok := x.cache[s]
		if !ok {
			nb = x.ns.Neighbours(s, x.maxK)
			x.cache[s] = nb
		}
		for i, n := range nb {
			if i >= o.K || float64(n.Cos) < o.MinCos || n.Cos <= 0 || qstems[n.Term] {
				continue
			}
			for _, r := range x.raw[n.Term] {
				if v := o.Weight * float64(n.Cos); v > w[r] {
					w[r] = v
				}
			}
		}
	}
	return w
}

// weightedScores is BM25 with a weight per query word.
func (b *bm25) weightedScores(q map[string]float64) []float64 {
	s := make([]float64, b.n)
	for w, qw := range q {
		ps := b.postings[w]
		if len(ps) == 0 || qw == 0 {
			continue
		}
		idf := math.Log(1 + (float64(b.n)-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			s[p.doc] += qw * idf * p.tf * 2.2 / (p.tf + 1.2*(1-0.75+0.75*b.dl[p.doc]/b.avgdl))
		}
	}
	return s
}
