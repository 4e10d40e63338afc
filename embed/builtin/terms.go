package builtin

import (
	"context"
	"math"

	"github.com/toolsrv/toolsrv/text"
)

// QueryTerms returns the distinct terms EmbedQuery pools for query, each with
// its pooling weight and its unit vector (the learned last step compares
// each query word with the candidate tools: index/laststep.go). Terms of
// weight 0 are left out.
func (f *Fitted) QueryTerms(ctx context.Context, query string) (weights []float32, vecs [][]float32, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	e := f.e
	toks := text.Table().Append(nil, query, nil)
	seen := map[string]bool{}
	tmp := make([]float32, e.t.Dim)
	for _, tok := range toks {
		if seen[tok] {
			continue
		}
		seen[tok] = true
		row, ok := e.index[tok]
		if !ok {
			row = -1
		}
		w := f.weight(tok, row)
		if w <= 0 {
			continue
		}
		v := e.cachedTermVector(tok, row, tmp, f.oov)
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			continue
		}
		u := make([]float32, len(v))
		inv := float32(1 / math.Sqrt(n))
		for i, x := range v {
			u[i] = x * inv
		}
		weights = append(weights, w)
		vecs = append(vecs, u)
	}
	return weights, vecs, nil
}
