package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/toolsrv/toolsrv/embed/embedder"
	"github.com/toolsrv/toolsrv/text"
)

// Fitted is the embedder adapted to one catalog: terms are weighted by their
// BM25 IDF over the catalog's own documents, so words every tool shares
// ("return", "api") count little and distinguishing words count a lot.
type Fitted struct {
	e     *Embedder
	id    string
	n     int            // documents fitted
	df    map[string]int // document frequency per term
	maxW  float32        // IDF of a term found in one document
	mean  []float32      // mean document vector (nil: no centering)
	oov   *oovCache      // n-gram vectors of catalog terms outside the vocabulary
	prf   *prfData       // query feedback from the catalog (nil: none)
	state []byte
}

// Fit implements embedder.CatalogAware.
func (e *Embedder) Fit(ctx context.Context, docs []string) (embedder.Fitted, error) {
	df := make(map[string]int)
	seen := make(map[string]struct{})
	stems := make(text.Cache)
	var toks []string
	for i, d := range docs {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		toks = text.Table().Append(toks[:0], d, stems)
		clear(seen)
		for _, t := range toks {
			if _, ok := seen[t]; !ok {
				seen[t] = struct{}{}
				df[t]++
			}
		}
	}
	f := e.fitted(len(docs), df, nil)
	if e.opts.Center > 0 && len(docs) > 1 {
		mean := make([]float64, e.t.Dim)
		for i, d := range docs {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			for k, x := range e.embed(d, f.weight, e.opts.DocTF, f.oov) {
				mean[k] += float64(x)
			}
		}
		m := make([]float32, len(mean))
		for k, x := range mean {
			m[k] = e.opts.Center * float32(x/float64(len(docs)))
		}
		f = e.fitted(len(docs), df, m)
	}
	if err := f.buildPRF(ctx, docs); err != nil {
		return nil, err
	}
	if f.prf != nil {
		f.setState(appendPRF(encodeState(len(docs), df, f.mean), f.prf, e.t.Dim))
	}
	return f, nil
}

func (e *Embedder) fitted(n int, df map[string]int, mean []float32) *Fitted {
	f := &Fitted{e: e, n: n, df: df, mean: mean}
	f.maxW = idf(n, 1)
	if e.t.Buckets > 0 {
		f.oov = &oovCache{keep: df}
	}
	f.setState(encodeState(n, df, mean))
	return f
}

// setState records the fitted state and derives the ID from it.
func (f *Fitted) setState(state []byte) {
	f.state = state
	sum := sha256.Sum256(state)
	f.id = f.e.opts.ID + "+fit-" + hex.EncodeToString(sum[:6])
}

// idf is BM25's (Lucene) inverse document frequency.
func idf(n, df int) float32 {
	return float32(math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5)))
}

// stateMagic starts a fitted state; statePRFMagic one that also carries
// query feedback data (only when Options.PRF is on).
const (
	stateMagic    = "TSFIT001"
	statePRFMagic = "TSFIT002"
)

func encodeState(n int, df map[string]int, mean []float32) []byte {
	terms := make([]string, 0, len(df))
	for t := range df {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	b := []byte(stateMagic)
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(len(terms)))
	for _, t := range terms {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		b = binary.AppendUvarint(b, uint64(df[t]))
	}
	b = binary.AppendUvarint(b, uint64(len(mean)))
	for _, x := range mean {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// Restore implements embedder.CatalogAware.
func (e *Embedder) Restore(state []byte) (embedder.Fitted, error) {
	withPRF := bytes.HasPrefix(state, []byte(statePRFMagic))
	if !withPRF && !bytes.HasPrefix(state, []byte(stateMagic)) {
		return nil, errors.New("builtin embedder: fitted state has the wrong format; refit the catalog")
	}
	b := state[len(stateMagic):]
	next := func() (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, errors.New("builtin embedder: fitted state is truncated; refit the catalog")
		}
		b = b[k:]
		return v, nil
	}
	n, err := next()
	if err != nil {
		return nil, err
	}
	cnt, err := next()
	if err != nil {
		return nil, err
	}
	if cnt > uint64(len(b)) {
		return nil, errors.New("builtin embedder: fitted state is truncated; refit the catalog")
	}
	df := make(map[string]int, cnt)
	for i := uint64(0); i < cnt; i++ {
		l, err := next()
		if err != nil {
			return nil, err
		}
		if l > uint64(len(b)) {
			return nil, errors.New("builtin embedder: fitted state is truncated; refit the catalog")
		}
		t := string(b[:l])
		b = b[l:]
		d, err := next()
		if err != nil {
			return nil, err
		}
		df[t] = int(d)
	}
	dim, err := next()
	if err != nil {
		return nil, err
	}
	if dim != 0 && dim != uint64(e.t.Dim) {
		return nil, fmt.Errorf("builtin embedder: fitted state is for dimension %d, table has %d; refit the catalog", dim, e.t.Dim)
	}
	if uint64(len(b)) < 4*dim || (!withPRF && uint64(len(b)) != 4*dim) {
		return nil, fmt.Errorf("builtin embedder: fitted state has %d bytes after the terms, want %d; refit the catalog", len(b), 4*dim)
	}
	var mean []float32
	for k := uint64(0); k < dim; k++ {
		mean = append(mean, math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:])))
	}
	f := e.fitted(int(n), df, mean)
	if withPRF {
		p, err := decodePRF(b[4*dim:], e.t.Dim)
		if err != nil {
			return nil, err
		}
		f.prf = p
		f.setState(bytes.Clone(state))
	}
	return f, nil
}

// ID implements embedder.Embedder; it includes a digest of the fitted state.
func (f *Fitted) ID() string { return f.id }

// Dim implements embedder.Embedder.
func (f *Fitted) Dim() int { return f.e.t.Dim }

// State implements embedder.Fitted.
func (f *Fitted) State() []byte { return bytes.Clone(f.state) }

// Weight is the pooling weight of a term (as produced by text.Table).
func (f *Fitted) Weight(term string) float32 {
	row, ok := f.e.index[term]
	if !ok {
		row = -1
	}
	return f.weight(term, row)
}

func (f *Fitted) weight(term string, row int32) float32 {
	w := f.e.opts.UnseenIDF * f.maxW
	if d := f.df[term]; d > 0 {
		w = idf(f.n, d)
	}
	if m := f.e.opts.PriorMix; m > 0 && w > 0 {
		p := f.e.maxPrior
		if row >= 0 && int(row) < len(f.e.t.Prior) {
			p = f.e.t.Prior[row]
		}
		w = float32(math.Pow(float64(w), float64(1-m)) * math.Pow(float64(p), float64(m)))
	}
	return w
}

// EmbedQuery implements embedder.Embedder.
func (f *Fitted) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.feedback(text, f.center(f.e.embed(text, f.weight, false, f.oov))), nil
}

// EmbedDocuments implements embedder.Embedder.
func (f *Fitted) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := f.e.embedAll(ctx, texts, f.weight, f.oov)
	if err != nil {
		return nil, err
	}
	for i, v := range out {
		out[i] = f.center(v)
	}
	return out, nil
}

// center subtracts the catalog's mean vector and renormalises (in place).
func (f *Fitted) center(v []float32) []float32 {
	if f.mean == nil {
		return v
	}
	var norm float64
	for k := range v {
		v[k] -= f.mean[k]
		norm += float64(v[k]) * float64(v[k])
	}
	if norm < 1e-12 {
		clear(v)
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for k := range v {
		v[k] *= inv
	}
	return v
}

// oovCache holds the n-gram vectors of the catalog's terms outside the
// vocabulary, each made the first time a document or query uses it (a
// restored embedder whose documents' vectors are all cached makes few).
// Safe for concurrent use.
type oovCache struct {
	keep map[string]int // the catalog's terms: only these are kept
	m    sync.Map       // term → []float32
}

// cachedTermVector is termVector, taken from c (or kept there) for the
// catalog's terms outside the vocabulary; c may be nil.
func (e *Embedder) cachedTermVector(term string, row int32, tmp []float32, c *oovCache) []float32 {
	if c == nil || row >= 0 {
		return e.termVector(term, row, tmp)
	}
	if v, ok := c.m.Load(term); ok {
		return v.([]float32)
	}
	v := e.termVector(term, row, tmp)
	if _, ok := c.keep[term]; ok {
		v = slices.Clone(v)
		c.m.Store(term, v)
	}
	return v
}
