package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/learn"
)

// BenchmarkLastStep compares, in one run, a top-10 ranking with the fixed
// fusion and with the learned last step (on by default), at 1k, 10k and
// 100k tools, and the last step alone (features and model over the pool
// of an existing ranking).
//
//	go test -run '^$' -bench BenchmarkLastStep -benchtime 2000x ./index/
func BenchmarkLastStep(b *testing.B) {
	ctx := context.Background()
	emb, err := builtin.New()
	if err != nil {
		b.Fatal(err)
	}
	m, err := learn.Default()
	if err != nil {
		b.Fatal(err)
	}
	queries := []string{"what's the weather forecast for my city", "convert this pdf document to an image",
		"send an email about the meeting schedule", "show git status of the repository",
		"stock price and currency exchange rate", "summarize the news article"}
	for _, n := range []int{1000, 10000, 100000} {
		ix := New(emb, Options{NoCache: true, Logger: quiet(), BatchSize: 4096})
		ix.upd.Lock()
		err := ix.updateLocked(ctx, synthSource(synthDocs(n)), nil, nil, true)
		if err == nil {
			err = ix.calibrateLocked(ctx)
		}
		ix.upd.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		if !m.Applies(ix.base.ID()) {
			b.Fatalf("the shipped model does not apply to %s", ix.base.ID())
		}
		b.Run(fmt.Sprintf("n=%d/fixed-k10", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10, NoLastStep: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/learned-k10", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				r, err := ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10})
				if err != nil || r.Answerable == nil {
					b.Fatal("no learned ranking", err)
				}
			}
		})
		// the last step alone, on pools ranked beforehand
		v := ix.v
		type prepared struct {
			r    Ranking
			lexQ lexQuery
			qvec []float32
			text string
		}
		var ps []prepared
		for _, q := range queries {
			iq := Query{Text: q, K: m.Pool, NoLastStep: true}
			r, _ := ix.Rank(ctx, iq)
			qvec, _ := v.emb.EmbedQuery(ctx, q)
			ps = append(ps, prepared{r, v.lexQueryOf(ix.lexicalQuery(iq)), normalized(qvec), q})
		}
		b.Run(fmt.Sprintf("n=%d/last-step-only", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				p := ps[i%len(ps)]
				r := p.r
				r.Hits = append([]Hit(nil), p.r.Hits...)
				ix.mu.RLock()
				v.applyLastStep(m, ix.probeLogitsFor(m), &r, p.text, p.lexQ, p.qvec)
				ix.mu.RUnlock()
			}
		})
	}
}
