package bench

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// TuneRanking configures RankForTuning.
type TuneRanking struct {
	Split Split
	// Lexical also ranks every query by BM25 alone (the degraded path).
	Lexical bool
	// LexicalWeight is the index's hybrid weight (0: the index default).
	LexicalWeight float64
	// NoLastStep ranks with the fixed fusion (no learned last step).
	NoLastStep bool
	Logger     *slog.Logger
	// Step, if set, is called once per query.
	Step func()
}

// RankForTuning ranks every labelled query of every corpus with an index
// over the corpus's own catalog (built in memory with emb), keeping the top
// TopHits. Abstention queries (Split.IsAbstain) are ranked without their
// relevant tools, through index.Query.Allow, as if those were removed from
// the catalog.
func RankForTuning(ctx context.Context, emb embed.Embedder, corpora []*Corpus, o TuneRanking) (hybrid, lex []TuneQuery, err error) {
	log, split, lexical, step := o.Logger, o.Split, o.Lexical, o.Step
	if log == nil {
		log = slog.Default()
	}
	for _, c := range corpora {
		reg := registry.New(registry.Options{Dirs: []string{c.ToolsDir}, Logger: log})
		if err := reg.Load(ctx); err != nil {
			return nil, nil, fmt.Errorf("corpus %s: loading tools: %w", c.Name, err)
		}
		ix := index.New(emb, index.Options{NoCache: true, Logger: log, LexicalWeight: o.LexicalWeight})
		if err := ix.Sync(ctx, reg.Catalog()); err != nil {
			return nil, nil, fmt.Errorf("corpus %s: building the index: %w", c.Name, err)
		}
		modes := []index.Mode{index.Hybrid}
		if lexical {
			modes = append(modes, index.Lexical)
		}
		for _, q := range c.Queries {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			// A request no tool serves ("relevant": []) is a natural
			// abstention query; others become one by the split's hash.
			tq := TuneQuery{Corpus: c.Name, ID: q.ID, Relevant: q.Relevant, Abstain: len(q.Relevant) == 0 || split.IsAbstain(q.ID), HeldOut: split.IsHeldOut(q.ID)}
			iq := index.Query{Text: q.Text, K: TopHits, NoLastStep: o.NoLastStep}
			if tq.Abstain {
				rel := make(map[string]bool, len(q.Relevant))
				for _, r := range q.Relevant {
					rel[r] = true
				}
				iq.Allow = func(n string) bool { return !rel[n] }
			}
			for _, m := range modes {
				iq.Mode = m
				r, err := ix.Rank(ctx, iq)
				if err != nil {
					return nil, nil, fmt.Errorf("corpus %s: ranking %s: %w", c.Name, q.ID, err)
				}
				if m == index.Hybrid && r.Degraded {
					return nil, nil, fmt.Errorf("corpus %s: ranking %s is degraded (%s): tuning needs the embedder working", c.Name, q.ID, r.Reason)
				}
				t := tq
				t.Hits = thresholds.FromRanking(r)
				t.Answerable = r.Answerable
				if m == index.Hybrid {
					hybrid = append(hybrid, t)
				} else {
					lex = append(lex, t)
				}
			}
			if step != nil {
				step()
			}
		}
	}
	return hybrid, lex, nil
}
