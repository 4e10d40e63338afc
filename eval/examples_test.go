package eval_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// TestExampleRequests holds the figure of examples/queries.jsonl: 70
// requests to the starter catalog (examples/tools) made of numbers,
// operators, percentages, powers, dates and timestamps, hashes, sizes and
// "where is" searches, in digits and in words, written before anything was
// tuned for them and never trained or chosen on (and 4 that no tool
// serves). The built-in embedder with the learned last step ranks a right
// tool first for 0.814 of them (57 of 70; main before issue 44: 0.543, 38;
// the first round of issue 44: 0.729, 51; the second 0.886, 62, before
// numbers, classes and phrases of stop words were made tie-breakers, so
// that a tool's keywords cannot take requests with them: "where is
// package.json" matches json_value's word "json", and file_glob's "where
// is" and <file> now only break ties), and must not rank fewer; the
// offered set's figures with the shipped thresholds are logged. (The
// issue's target, 0.90, is not met: learn/MODEL.md.)
func TestExampleRequests(t *testing.T) {
	c, err := eval.LoadCorpus("../examples")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	reg := registry.New(registry.Options{Dirs: []string{c.ToolsDir}, Logger: log})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ix := index.New(emb, index.Options{NoCache: true, Logger: log})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	var misses []string
	answerable := 0
	m, err := eval.Measure(ctx, c, func(ctx context.Context, q string) ([]string, bool, error) {
		r, err := ix.Rank(ctx, index.Query{Text: q, K: 10})
		if err != nil {
			return nil, false, err
		}
		names := make([]string, len(r.Hits))
		for i, h := range r.Hits {
			names[i] = h.Name
		}
		return names, r.Degraded, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range c.Queries {
		if len(q.Relevant) == 0 {
			continue
		}
		answerable++
		r, err := ix.Rank(ctx, index.Query{Text: q.Text, K: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Hits) == 0 || !contains(q.Relevant, r.Hits[0].Name) {
			first := ""
			if len(r.Hits) > 0 {
				first = r.Hits[0].Name
			}
			misses = append(misses, q.Text+" → "+first)
		}
	}
	f, _, ok := thresholds.Shipped(emb.ID())
	if !ok {
		t.Fatal("no shipped thresholds for the built-in embedder")
	}
	om, err := eval.MeasureOffers(ctx, c, func(ctx context.Context, q string) ([]string, bool, error) {
		sel, _, err := f.Policy.Offer(ctx, ix, reg.Catalog(), index.Query{Text: q}, nil)
		return sel.Names(), sel.NoToolFits, err
	})
	if err != nil {
		t.Fatal(err)
	}
	first := 1 - float64(len(misses))/float64(answerable)
	t.Logf("%d requests: a right tool first %.3f (R@1 %.3f, R@5 %.3f); offered set: hit %.3f at %.2f tools, \"no tool fits\" recall %.2f",
		answerable, first, m.R1, m.R5, om.Hit, om.Offered, om.AbstainRecall)
	for _, s := range misses {
		t.Logf("missed: %s", s)
	}
	if m.Degraded > 0 {
		t.Fatalf("%d rankings degraded", m.Degraded)
	}
	if right := answerable - len(misses); right < 57 {
		t.Errorf("a right tool first for %d of the %d requests (%.3f), want at least 57", right, answerable, first)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
