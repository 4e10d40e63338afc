package train

import (
	"sort"

	"toolsrv/embed/builtin"
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

// bag tokenizes text into distinct terms in order of first appearance,
// keeping at most max.
func bag(text string, max int) []string {
	toks := builtin.Tokenize(text)
	seen := make(map[string]struct{}, len(toks))
	out := toks[:0]
	for _, t := range toks {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
		if len(out) == max {
			break
		}
	}
	return out
}
