package embedding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/index"
)

// EvaluateIndex ranks a corpus with the real index (its catalog → index, no
// cache) and measures its lexical and dense components fused with each
// lexical weight α as the index does: α·lexical + (1−α)·dense, a tool named
// verbatim first. Modes are "index-bm25", "index-dense", "index a=α".
func EvaluateIndex(ctx context.Context, c *Corpus, emb embed.Embedder, alphas []float64) (*Result, error) {
	if c.Catalog == nil {
		return nil, fmt.Errorf("corpus %s has no catalog (load it with LoadCorpus)", c.Name)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ix := index.New(emb, index.Options{NoCache: true, Logger: quiet})
	if err := ix.Sync(ctx, c.Catalog); err != nil {
		return nil, err
	}
	acc := splitMetrics{}
	record := acc.record
	for _, q := range c.Queries {
		r, err := ix.Rank(ctx, index.Query{Text: q.Text})
		if err != nil {
			return nil, err
		}
		if r.Degraded {
			return nil, fmt.Errorf("query %s ranked degraded: %s", q.ID, r.Reason)
		}
		names := make([]string, len(r.Hits))
		lex, den := make([]float64, len(r.Hits)), make([]float64, len(r.Hits))
		for i, h := range r.Hits {
			names[i], lex[i], den[i] = h.Name, h.Lexical, h.Dense
			if h.Named {
				lex[i], den[i] = 10, 10
			}
		}
		held := heldout(q.ID)
		record("index-bm25", judge(lex, names, q.Relevant), held)
		record("index-dense", judge(den, names, q.Relevant), held)
		for _, a := range alphas {
			s := make([]float64, len(lex))
			for i := range s {
				s[i] = a*lex[i] + (1-a)*den[i]
			}
			record(fmt.Sprintf("index a=%.2f", a), judge(s, names, q.Relevant), held)
			record(fmt.Sprintf("index z a=%.2f", a), judge(ZScore(a)(lex, den), names, q.Relevant), held)
			// Adaptive: trust the lexical side more when its best match
			// covers more of the query (max lexical score near 1).
			mx := 0.0
			for _, x := range lex {
				if x < 10 {
					mx = math.Max(mx, x)
				}
			}
			for _, b := range []float64{0.3, 0.6} {
				aq := math.Min(0.9, math.Max(0.1, a+b*(mx-0.5)))
				for i := range s {
					s[i] = aq*lex[i] + (1-aq)*den[i]
				}
				record(fmt.Sprintf("index adapt a=%.2f b=%.1f", a, b), judge(s, names, q.Relevant), held)
			}
		}
	}
	return acc.result(c.Name), nil
}
