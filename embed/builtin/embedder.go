package builtin

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/toolsrv/toolsrv/embed/embedder"
	"github.com/toolsrv/toolsrv/text"
)

// modelFile is the shipped table (see embed/MODEL.md); modelSHA256 is its
// recorded SHA-256, checked by the tests.
//
//go:embed model.bin
var modelFile []byte

//go:embed model.sha256
var modelSHA256 string

// Options are the pooling settings. The zero value is not useful: start from
// DefaultOptions.
type Options struct {
	// ID names the table, e.g. "builtin/v1-1a2b3c4d".
	ID string
	// UnseenIDF scales the weight of a query term that no catalog document
	// contains, relative to the catalog's largest IDF (the weight a term found
	// in one document gets). Such terms still carry meaning through their
	// vectors but say nothing the catalog can confirm.
	UnseenIDF float32
	// DocTF, when set, multiplies a document term's weight by 1+ln(tf), so
	// a term a long prompt repeats counts more than one it mentions once.
	// Queries are short and are always pooled as a set of terms.
	DocTF bool
	// Center is how much of the catalog's mean document vector a fitted
	// embedder subtracts from every vector (0: none, 1: all). Removing the
	// direction all tools share makes cosine compare what distinguishes them.
	Center float32
	// IDFPower raises every term weight to this power (1: plain IDF);
	// above 1 it sharpens the pooled vector toward the rarest terms.
	IDFPower float32
	// LeadBoost adds this much (relative) weight to a document term first
	// seen among its first LeadTerms terms: the index puts the tool's name
	// and description first, which describe it better than the long prompt.
	LeadBoost float32
	LeadTerms int
	// Exact adds to every term's vector a fixed pseudo-random vector of its
	// own (nearly orthogonal to every other term's), this many times the
	// table's mean row length. The trained part says which words mean
	// similar things; this part keeps identical words closer than merely
	// similar ones, which matters in catalogs of near-identical tools.
	Exact float32
	// PriorMix blends the training corpus's IDF into a fitted embedder's
	// weights: w = catalogIDF^(1−PriorMix) · priorIDF^PriorMix. Small
	// catalogs give noisy IDFs; the prior knows which words are generic.
	PriorMix float32
	// PRF selects query feedback from the catalog's documents (PRFOff,
	// PRFTerm, PRFExact; see prf.go); PRFBeta is its weight, PRFK the
	// documents PRFExact averages, PRFMaxDocs the largest catalog PRFExact
	// scans, PRFPower the power of the term weights PRFTerm sums with.
	// HeadMix blends into a document's vector its first line's own vector
	// (the index writes "name words: description" there):
	// d = normalise((1−HeadMix)·full + HeadMix·head), both unit vectors.
	HeadMix    float32
	PRF        int
	PRFBeta    float32
	PRFK       int
	PRFMaxDocs int
	PRFPower   float32
}

// DefaultOptions are the settings the shipped table was evaluated with.
func DefaultOptions() Options {
	return Options{ID: "builtin", UnseenIDF: 0.25, DocTF: true, Center: 0, IDFPower: 1, LeadBoost: 0, LeadTerms: 24}
}

// Embedder is the built-in static embedder. It is immutable and safe for
// concurrent use. Before Fit, terms are weighted by the table's prior IDF;
// the index should call Fit with its catalog's documents and use the result.
type Embedder struct {
	opts  Options
	exact float32 // Exact × mean row length
	// maxPrior is the largest prior weight (that of terms the training
	// corpus lacks).
	maxPrior float32
	t        *Table
	index    map[string]int32
	pool     sync.Pool // *scratch
}

var (
	_ embedder.CatalogAware = (*Embedder)(nil)
	_ embedder.Fitted       = (*Fitted)(nil)
)

// New loads the table shipped in the binary.
func New() (*Embedder, error) {
	t, err := ViewTable(modelFile)
	if err != nil {
		return nil, fmt.Errorf("builtin embedder: the shipped table is damaged (rebuild with make model): %w", err)
	}
	// The recorded checksum, not one computed at every start (15 MB):
	// TestShippedTableMatchesChecksum holds the two equal.
	o := DefaultOptions()
	o.ID = "builtin/v1-" + strings.TrimSpace(modelSHA256)[:8]
	return FromTable(t, o)
}

// FromTable makes an embedder from a table (used by training and evaluation).
func FromTable(t *Table, o Options) (*Embedder, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("builtin embedder: %w", err)
	}
	if o.ID == "" {
		return nil, errors.New("builtin embedder: Options.ID is empty")
	}
	e := &Embedder{opts: o, t: t, index: make(map[string]int32, len(t.Vocab))}
	for i, s := range t.Vocab {
		e.index[s] = int32(i)
	}
	for _, p := range t.Prior {
		e.maxPrior = max(e.maxPrior, p)
	}
	if o.Exact > 0 && t.Rows() > 0 {
		var sum float64
		for r := 0; r < len(t.Vocab); r++ {
			var n float64
			for _, x := range t.Row(r) {
				n += float64(x) * float64(x)
			}
			sum += math.Sqrt(n)
		}
		if len(t.Vocab) > 0 {
			e.exact = o.Exact * float32(sum/float64(len(t.Vocab)))
		}
	}
	e.pool.New = func() any { return &scratch{vec: make([]float64, t.Dim), tmp: make([]float32, t.Dim)} }
	return e, nil
}

// Table returns the embedder's table (read-only).
func (e *Embedder) Table() *Table { return e.t }

// ID implements embedder.Embedder.
func (e *Embedder) ID() string { return e.opts.ID }

// Dim implements embedder.Embedder.
func (e *Embedder) Dim() int { return e.t.Dim }

// EmbedQuery implements embedder.Embedder with prior weights.
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.embed(text, e.priorWeight, false, nil), nil
}

// EmbedDocuments implements embedder.Embedder with prior weights.
func (e *Embedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedAll(ctx, texts, e.priorWeight, nil)
}

func (e *Embedder) priorWeight(term string, row int32) float32 {
	if row >= 0 && int(row) < len(e.t.Prior) {
		return e.t.Prior[row]
	}
	return 1
}

func (e *Embedder) embedAll(ctx context.Context, texts []string, w weightFunc, known *oovCache) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), (len(texts)+15)/16)
	if workers <= 1 {
		for i, s := range texts {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			out[i] = e.embedDoc(s, w, known)
		}
		return out, nil
	}
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		lo, hi := k*len(texts)/workers, (k+1)*len(texts)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if (i-lo)%64 == 0 && ctx.Err() != nil {
					return
				}
				out[i] = e.embedDoc(texts[i], w, known)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// embedDoc embeds a document, blending in its first line (HeadMix).
func (e *Embedder) embedDoc(text string, w weightFunc, known *oovCache) []float32 {
	v := e.embed(text, w, e.opts.DocTF, known)
	h := e.opts.HeadMix
	if h <= 0 {
		return v
	}
	nl := strings.IndexByte(text, '\n')
	if nl <= 0 {
		return v
	}
	hv := e.embed(text[:nl], w, e.opts.DocTF, known)
	var norm float64
	for i := range v {
		v[i] = (1-h)*v[i] + h*hv[i]
		norm += float64(v[i]) * float64(v[i])
	}
	if norm < 1e-12 {
		return hv
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// weightFunc gives a term's pooling weight; row is its vocabulary row or -1.
type weightFunc func(term string, row int32) float32

type scratch struct {
	toks  []string
	stems text.Cache // word → term cache, bounded
	seen  map[string]int32
	vec   []float64
	tmp   []float32
}

// embed pools the distinct terms of doc. A text with no usable term gets a
// fixed unit vector (so the result is never zero or NaN).
func (e *Embedder) embed(doc string, weight weightFunc, tf bool, known *oovCache) []float32 {
	s := e.pool.Get().(*scratch)
	defer e.pool.Put(s)
	if s.stems == nil || len(s.stems) > 1<<16 {
		s.stems = make(text.Cache, 1024)
	}
	s.toks = text.Table().Append(s.toks[:0], doc, s.stems)
	if s.seen == nil {
		s.seen = make(map[string]int32, 64)
	}
	clear(s.seen)
	clear(s.vec)
	// Distinct terms in order of first appearance, with their counts.
	uniq := s.toks[:0]
	for _, tok := range s.toks {
		if c, dup := s.seen[tok]; dup {
			s.seen[tok] = c + 1
			continue
		}
		s.seen[tok] = 1
		uniq = append(uniq, tok)
	}
	n := 0
	for pos, tok := range uniq {
		row, ok := e.index[tok]
		if !ok {
			row = -1
		}
		w := weight(tok, row)
		if w <= 0 {
			continue
		}
		if p := e.opts.IDFPower; p != 1 && p > 0 {
			w = float32(math.Pow(float64(w), float64(p)))
		}
		if tf {
			w *= 1 + float32(math.Log(float64(s.seen[tok])))
			if pos < e.opts.LeadTerms {
				w *= 1 + e.opts.LeadBoost
			}
		}
		v := e.cachedTermVector(tok, row, s.tmp, known)
		for i, x := range v {
			s.vec[i] += float64(w * x)
		}
		if e.exact > 0 {
			randomVector(s.tmp, hashString(tok)^0xe7ac7)
			we := w * e.exact
			for i, x := range s.tmp {
				s.vec[i] += float64(we * x)
			}
		}
		n++
	}
	out := make([]float32, e.t.Dim)
	var norm float64
	for _, x := range s.vec {
		norm += x * x
	}
	if n == 0 || norm == 0 {
		out[0] = 1
		return out
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range s.vec {
		out[i] = float32(x * inv)
	}
	return out
}

// termVector returns the vector of one term: its table row, else the mean of
// its character n-gram buckets, else a fixed pseudo-random vector derived
// from the term (so unknown terms still match themselves exactly).
func (e *Embedder) termVector(term string, row int32, tmp []float32) []float32 {
	if row >= 0 {
		return e.t.Row(int(row))
	}
	if e.t.Buckets > 0 {
		clear(tmp)
		k := 0
		ForNgrams(term, e.t.MinN, e.t.MaxN, func(h uint64) {
			e.t.addRow(len(e.t.Vocab)+int(h%uint64(e.t.Buckets)), tmp)
			k++
		})
		if k > 0 {
			inv := 1 / float32(k)
			for i := range tmp {
				tmp[i] *= inv
			}
			return tmp
		}
	}
	randomVector(tmp, hashString(term))
	return tmp
}

// ForNgrams calls f with the hash of every character n-gram (n in
// [minN, maxN], counted in bytes) of "<" + term + ">".
func ForNgrams(term string, minN, maxN int, f func(uint64)) {
	w := "<" + term + ">"
	for n := minN; n <= maxN; n++ {
		for i := 0; i+n <= len(w); i++ {
			if n == len(w) {
				continue // the whole word is the vocabulary's job
			}
			f(hashString(w[i : i+n]))
		}
	}
}

// hashString is 64-bit FNV-1a.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// randomVector fills v with ±1/√d signs drawn from a splitmix64 stream seeded by seed.
func randomVector(v []float32, seed uint64) {
	x := seed
	a := float32(1 / math.Sqrt(float64(len(v))))
	for i := 0; i < len(v); i += 64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		for j := i; j < len(v) && j < i+64; j++ {
			if z&(1<<(j-i)) != 0 {
				v[j] = a
			} else {
				v[j] = -a
			}
		}
	}
}
