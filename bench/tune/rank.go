package tune

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/thresholds"
)

// RankOptions configures Rank.
type RankOptions struct {
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

// Rank ranks every labelled query of every corpus with an engine over the
// corpus's own catalog (indexed in memory with emb, no thresholds), keeping
// the top TopHits. Abstention queries (Split.IsAbstain) are ranked without
// their relevant tools, through engine.Request.Allow, as if those were
// removed from the catalog.
func Rank(ctx context.Context, emb embed.Embedder, corpora []*eval.Corpus, o RankOptions) (hybrid, lex []Query, err error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, c := range corpora {
		eng, err := engine.New(ctx, engine.Options{Dirs: []string{c.ToolsDir}, Embedder: emb, NoCache: true,
			NoThresholds: true, LexicalWeight: o.LexicalWeight, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("corpus %s: %w", c.Name, err)
		}
		if w := eng.Warnings(); len(w) > 0 {
			eng.Close()
			return nil, nil, fmt.Errorf("corpus %s: %s: tuning needs every tool embedded", c.Name, w[0])
		}
		hyb, lx, err := rankCorpus(ctx, eng, c, o)
		eng.Close()
		if err != nil {
			return nil, nil, err
		}
		hybrid, lex = append(hybrid, hyb...), append(lex, lx...)
	}
	return hybrid, lex, nil
}

// rankCorpus ranks the queries of one corpus with its engine.
func rankCorpus(ctx context.Context, eng *engine.Engine, c *eval.Corpus, o RankOptions) (hybrid, lex []Query, err error) {
	split, lexical, step := o.Split, o.Lexical, o.Step
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
		tq := Query{Corpus: c.Name, ID: q.ID, Relevant: q.Relevant, Abstain: len(q.Relevant) == 0 || split.IsAbstain(q.ID), HeldOut: split.IsHeldOut(q.ID)}
		iq := engine.Request{Query: q.Text, Limit: TopHits, All: true, NoLearned: o.NoLastStep, Timeout: time.Hour}
		if tq.Abstain {
			rel := make(map[string]bool, len(q.Relevant))
			for _, r := range q.Relevant {
				rel[r] = true
			}
			iq.Allow = func(n string) bool { return !rel[n] }
		}
		for _, m := range modes {
			iq.Mode = m
			ans, err := eng.Rank(ctx, iq)
			r := ans.Ranking
			if err != nil {
				return nil, nil, fmt.Errorf("corpus %s: ranking %s: %w", c.Name, q.ID, err)
			}
			if m == index.Hybrid && r.Degraded {
				return nil, nil, fmt.Errorf("corpus %s: ranking %s is degraded (%s): tuning needs the embedder working", c.Name, q.ID, r.Reason)
			}
			t := tq
			t.Hits = thresholds.FromRanking(r)
			if un := thresholds.UnmatchedIn(r); len(t.Hits) > 0 {
				t.Unmatched = make([]bool, len(t.Hits))
				for i, h := range t.Hits {
					t.Unmatched[i] = un(h.Name)
				}
			}
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
	return hybrid, lex, nil
}
