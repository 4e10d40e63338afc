package embedding

import (
	"math"
	"sort"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/text"
)

// entry is one weighted table row in a pooled text.
type entry struct {
	row int32
	w   float32
}

// encoded is one pair as table rows.
type encoded struct {
	q, d []entry
}

// Vocab is the training vocabulary and how terms map to rows.
type Vocab struct {
	Terms   []string // sorted
	Count   []int    // texts containing each term
	Texts   int      // texts counted
	index   map[string]int32
	Buckets int
	MinN    int
	MaxN    int
}

// BuildVocab keeps the terms found in at least minCount texts, at most max
// of them (most frequent first; ties by term).
func BuildVocab(bags [][]string, minCount, max int, buckets, minN, maxN int) *Vocab {
	count := map[string]int{}
	for _, b := range bags {
		for _, t := range b {
			count[t]++
		}
	}
	terms := make([]string, 0, len(count))
	for t, c := range count {
		if c >= minCount && len(t) <= 255 {
			terms = append(terms, t)
		}
	}
	sort.Slice(terms, func(i, j int) bool {
		if count[terms[i]] != count[terms[j]] {
			return count[terms[i]] > count[terms[j]]
		}
		return terms[i] < terms[j]
	})
	if len(terms) > max {
		terms = terms[:max]
	}
	sort.Strings(terms)
	v := &Vocab{Terms: terms, Texts: len(bags), index: make(map[string]int32, len(terms)), Buckets: buckets, MinN: minN, MaxN: maxN}
	v.Count = make([]int, len(terms))
	for i, t := range terms {
		v.index[t] = int32(i)
		v.Count[i] = count[t]
	}
	return v
}

// Rows is the number of table rows (terms, then buckets).
func (v *Vocab) Rows() int { return len(v.Terms) + v.Buckets }

// encode maps a bag of distinct terms to rows: a vocabulary term to its row,
// any other term to its character n-gram buckets (weights summing to 1).
func (v *Vocab) encode(bag []string, dst []entry) []entry {
	for _, t := range bag {
		if r, ok := v.index[t]; ok {
			dst = append(dst, entry{r, 1})
			continue
		}
		if v.Buckets == 0 {
			continue
		}
		start := len(dst)
		builtin.ForNgrams(t, v.MinN, v.MaxN, func(h uint64) {
			dst = append(dst, entry{int32(len(v.Terms)) + int32(h%uint64(v.Buckets)), 0})
		})
		if k := len(dst) - start; k > 0 {
			for i := start; i < len(dst); i++ {
				dst[i].w = 1 / float32(k)
			}
		}
	}
	return dst
}

// bag analyses s (text.Table) into distinct terms in order of first appearance,
// keeping at most max, with each term's count in the whole text.
func bag(s string, max int) ([]string, []int) {
	toks := text.Table().Terms(s)
	seen := make(map[string]int, len(toks))
	var out []string
	for _, t := range toks {
		if _, ok := seen[t]; !ok && len(out) < max {
			out = append(out, t)
		}
		seen[t]++
	}
	counts := make([]int, len(out))
	for i, t := range out {
		counts[i] = seen[t]
	}
	return out, counts
}

// weigh multiplies each term's entries by idf (over the training texts)
// and, when tf is set, by 1+ln(count): the pooling the embedder uses at
// inference with a catalog.
func (v *Vocab) weigh(es []entry, bag []string, counts []int, tf bool) []entry {
	k := 0
	for i, t := range bag {
		w := float32(1)
		if r, ok := v.index[t]; ok {
			c := float64(v.Count[r])
			w = float32(math.Log(1 + (float64(v.Texts)-c+0.5)/(c+0.5)))
		} else {
			w = float32(math.Log(1 + (float64(v.Texts)+0.5)/1.5)) // rarer than any vocabulary term
		}
		if tf {
			w *= 1 + float32(math.Log(float64(counts[i])))
		}
		n := 1
		if _, ok := v.index[t]; !ok {
			n = 0
			if v.Buckets > 0 {
				builtin.ForNgrams(t, v.MinN, v.MaxN, func(uint64) { n++ })
			}
		}
		for j := 0; j < n && k < len(es); j++ {
			es[k].w *= w
			k++
		}
	}
	return es
}
