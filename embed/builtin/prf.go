package builtin

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sort"

	"github.com/toolsrv/toolsrv/text"
)

// Pseudo-relevance feedback (Rocchio) on the catalog's own documents.
//
// A fitted embedder may move a query toward the catalog documents it already
// resembles: q' = normalise(q + β·e), where e is a unit "feedback" vector
// built from catalog documents only (never from queries).
//
//   - PRFTerm: e is the IDF-weighted sum, over the query's catalog terms, of
//     each term's mean document vector (the documents that contain the term).
//     It costs one vector addition per query term, like pooling itself.
//   - PRFExact: e is the mean of the PRFK catalog documents nearest to q by
//     cosine. It scans every document vector, so it is used only while the
//     catalog has at most PRFMaxDocs tools.

// PRF modes.
const (
	PRFOff   = 0
	PRFTerm  = 1
	PRFExact = 2
)

// prfData is the feedback state derived from the catalog's documents.
type prfData struct {
	termMean map[string][]float32 // PRFTerm: mean unit document vector per catalog term
	docs     []float32            // PRFExact: unit document vectors, row-major
	n        int
}

// buildPRF computes the feedback state from the catalog's documents.
func (f *Fitted) buildPRF(ctx context.Context, docs []string) error {
	o := f.e.opts
	if o.PRF == PRFOff || o.PRFBeta == 0 || len(docs) == 0 {
		return nil
	}
	vecs, err := f.e.embedAll(ctx, docs, f.weight, f.oov)
	if err != nil {
		return err
	}
	dim := f.e.t.Dim
	p := &prfData{n: len(docs)}
	switch o.PRF {
	case PRFExact:
		if len(docs) > o.PRFMaxDocs {
			return nil
		}
		p.docs = make([]float32, 0, len(docs)*dim)
		for _, v := range vecs {
			p.docs = append(p.docs, v...)
		}
	case PRFTerm:
		acc := make(map[string][]float64)
		stems := make(text.Cache)
		seen := make(map[string]struct{})
		var toks []string
		for i, d := range docs {
			toks = text.Table().Append(toks[:0], d, stems)
			clear(seen)
			for _, t := range toks {
				if _, ok := seen[t]; ok {
					continue
				}
				seen[t] = struct{}{}
				a := acc[t]
				if a == nil {
					a = make([]float64, dim)
					acc[t] = a
				}
				for k, x := range vecs[i] {
					a[k] += float64(x)
				}
			}
		}
		p.termMean = make(map[string][]float32, len(acc))
		for t, a := range acc {
			v := make([]float32, dim)
			inv := 1 / float64(f.df[t])
			for k, x := range a {
				v[k] = float32(x * inv)
			}
			p.termMean[t] = v
		}
	}
	f.prf = p
	return nil
}

// feedback applies the feedback to a pooled query vector q (in place).
func (f *Fitted) feedback(query string, q []float32) []float32 {
	p := f.prf
	if p == nil {
		return q
	}
	o := f.e.opts
	dim := len(q)
	e := make([]float64, dim)
	switch {
	case p.docs != nil:
		type hit struct {
			i int
			s float32
		}
		n := len(p.docs) / dim
		hits := make([]hit, n)
		for i := 0; i < n; i++ {
			row := p.docs[i*dim : (i+1)*dim]
			var s float32
			for k, x := range row {
				s += x * q[k]
			}
			hits[i] = hit{i, s}
		}
		sort.Slice(hits, func(a, b int) bool {
			if hits[a].s != hits[b].s {
				return hits[a].s > hits[b].s
			}
			return hits[a].i < hits[b].i
		})
		k := min(o.PRFK, n)
		for _, h := range hits[:k] {
			for j, x := range p.docs[h.i*dim : (h.i+1)*dim] {
				e[j] += float64(x)
			}
		}
	case p.termMean != nil:
		toks := text.Table().Append(nil, query, nil)
		seen := map[string]bool{}
		for _, t := range toks {
			if seen[t] {
				continue
			}
			seen[t] = true
			v := p.termMean[t]
			if v == nil {
				continue
			}
			w := float64(f.weight(t, -1))
			if o.PRFPower != 0 && o.PRFPower != 1 {
				w = math.Pow(w, float64(o.PRFPower))
			}
			for j, x := range v {
				e[j] += w * float64(x)
			}
		}
	}
	var en float64
	for _, x := range e {
		en += x * x
	}
	if en < 1e-18 {
		return q
	}
	s := float64(o.PRFBeta) / math.Sqrt(en)
	var norm float64
	out := make([]float64, dim)
	for j := range q {
		out[j] = float64(q[j]) + s*e[j]
		norm += out[j] * out[j]
	}
	inv := 1 / math.Sqrt(norm)
	for j := range q {
		q[j] = float32(out[j] * inv)
	}
	return q
}

// appendPRF turns a TSFIT001 state into a TSFIT002 one carrying p.
func appendPRF(state []byte, p *prfData, dim int) []byte {
	b := append([]byte(statePRFMagic), state[len(stateMagic):]...)
	b = binary.AppendUvarint(b, uint64(p.n))
	floats := func(v []float32) {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	if p.docs != nil {
		b = append(b, PRFExact)
		b = binary.AppendUvarint(b, uint64(len(p.docs)/dim))
		floats(p.docs)
		return b
	}
	b = append(b, PRFTerm)
	terms := make([]string, 0, len(p.termMean))
	for t := range p.termMean {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	b = binary.AppendUvarint(b, uint64(len(terms)))
	for _, t := range terms {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
		floats(p.termMean[t])
	}
	return b
}

var errPRFState = errors.New("builtin embedder: the feedback part of the fitted state is damaged; refit the catalog")

// decodePRF reads what appendPRF wrote after the mean vector.
func decodePRF(b []byte, dim int) (*prfData, error) {
	next := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	floats := func(n uint64) ([]float32, bool) {
		if n > uint64(len(b))/4 {
			return nil, false
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		return v, true
	}
	n, ok := next()
	if !ok || len(b) == 0 {
		return nil, errPRFState
	}
	p := &prfData{n: int(n)}
	mode := b[0]
	b = b[1:]
	cnt, ok := next()
	if !ok {
		return nil, errPRFState
	}
	switch mode {
	case PRFExact:
		if cnt > uint64(len(b))/uint64(4*dim) {
			return nil, errPRFState
		}
		if p.docs, ok = floats(cnt * uint64(dim)); !ok {
			return nil, errPRFState
		}
	case PRFTerm:
		if cnt > uint64(len(b)) {
			return nil, errPRFState
		}
		p.termMean = make(map[string][]float32, cnt)
		for i := uint64(0); i < cnt; i++ {
			l, ok := next()
			if !ok || l > uint64(len(b)) {
				return nil, errPRFState
			}
			t := string(b[:l])
			b = b[l:]
			v, ok := floats(uint64(dim))
			if !ok {
				return nil, errPRFState
			}
			p.termMean[t] = v
		}
	default:
		return nil, errPRFState
	}
	if len(b) != 0 {
		return nil, errPRFState
	}
	return p, nil
}
