package embedding

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"sort"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/text"
)

// Corpus is one labelled evaluation corpus (package eval's layout): its
// tools as the registry loads them and its queries as bench reads them.
type Corpus struct {
	Name    string
	Catalog *registry.Catalog // nil when Tools were given directly
	Tools   []*registry.Tool  // sorted by name
	Queries []eval.Query
}

// heldout reports whether the query with this id belongs to the untouched
// part: a fixed hash split (one third) that no setting is ever chosen on.
func heldout(id string) bool {
	h := fnv.New32a()
	h.Write([]byte(id))
	return h.Sum32()%3 == 0
}

// LoadCorpus reads dir/queries.jsonl with eval.LoadCorpus and dir/tools
// with the registry. Every tool must be visible: a problem or a hidden
// tool is an error, not a smaller catalog.
func LoadCorpus(ctx context.Context, dir string) (*Corpus, error) {
	bc, err := eval.LoadCorpus(dir)
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registry.New(registry.Options{Dirs: []string{bc.ToolsDir}, Logger: quiet})
	if err := reg.Load(ctx); err != nil {
		return nil, fmt.Errorf("corpus %s: loading tools: %w", bc.Name, err)
	}
	cat := reg.Catalog()
	switch {
	case len(cat.Problems) > 0:
		return nil, fmt.Errorf("corpus %s: %d invalid tools, first: %w", bc.Name, len(cat.Problems), cat.Problems[0])
	case len(cat.Hidden) > 0:
		return nil, fmt.Errorf("corpus %s: %d hidden tools, first: %s: %s", bc.Name, len(cat.Hidden), cat.Hidden[0].Name, cat.Hidden[0].Reason)
	case len(cat.Tools) == 0:
		return nil, fmt.Errorf("%s: no tools", bc.ToolsDir)
	}
	return &Corpus{Name: bc.Name, Catalog: cat, Tools: cat.Tools, Queries: bc.Queries}, nil
}

// bm25 is the reference BM25, the plain baseline the evaluation corpora were
// published with: k1=1.2, b=0.75 over description+prompt, lowercase
// [a-z0-9]+ tokens, distinct query terms.
type bm25 struct {
	n        int
	postings map[string][]posting
	dl       []float64
	avgdl    float64
}

type posting struct {
	doc int
	tf  float64
}

func newBM25(tools []*registry.Tool) *bm25 {
	b := &bm25{n: len(tools), postings: map[string][]posting{}, dl: make([]float64, len(tools))}
	for i, t := range tools {
		tf := map[string]int{}
		toks := text.Reference().Terms(t.Description + " " + t.Prompt)
		for _, w := range toks {
			tf[w]++
		}
		b.dl[i] = float64(len(toks))
		b.avgdl += b.dl[i]
		for w, c := range tf {
			b.postings[w] = append(b.postings[w], posting{i, float64(c)})
		}
	}
	b.avgdl /= float64(len(tools))
	return b
}

func (b *bm25) scores(q string) []float64 {
	s := make([]float64, b.n)
	seen := map[string]bool{}
	for _, w := range text.Reference().Terms(q) {
		if seen[w] {
			continue
		}
		seen[w] = true
		ps := b.postings[w]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (float64(b.n)-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			s[p.doc] += idf * p.tf * 2.2 / (p.tf + 1.2*(1-0.75+0.75*b.dl[p.doc]/b.avgdl))
		}
	}
	return s
}

// judge ranks scores (higher first, ties by name) and measures one query
// with eval.Score.
func judge(scores []float64, names []string, relevant []string) eval.Metrics {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		if scores[idx[a]] != scores[idx[b]] {
			return scores[idx[a]] > scores[idx[b]]
		}
		return names[idx[a]] < names[idx[b]]
	})
	ranked := make([]string, len(idx))
	for r, i := range idx {
		ranked[r] = names[i]
	}
	return eval.Score(ranked, relevant)
}

// Fusion combines BM25 and cosine scores for one query.
type Fusion func(bm, cos []float64) []float64

// MinMax is α·minmax(BM25) + (1−α)·minmax(cos).
func MinMax(alpha float64) Fusion {
	return func(bm, cos []float64) []float64 {
		a, b := minmax(bm), minmax(cos)
		out := make([]float64, len(a))
		for i := range a {
			out[i] = alpha*a[i] + (1-alpha)*b[i]
		}
		return out
	}
}

func minmax(s []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range s {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	out := make([]float64, len(s))
	if hi > lo {
		for i, x := range s {
			out[i] = (x - lo) / (hi - lo)
		}
	}
	return out
}

// Result holds one corpus's measures per mode and split.
type Result struct {
	Corpus string
	// Modes maps "bm25", "dense", "hybrid" (and named fusions) to
	// [all, tune, heldout] measures.
	Modes map[string][3]eval.Metrics
}

// EvaluateExpanded runs BM25, dense and the given fusions on a corpus with
// an embedder (fitted to the catalog when it is CatalogAware), plus, for each expansion (which needs the
// built-in embedder), BM25 with the query expanded by table neighbours
// ("bm25 "+name) and every fusion of it with the same dense scores
// (fusion+" "+name).
func EvaluateExpanded(ctx context.Context, c *Corpus, e embed.Embedder, fusions map[string]Fusion, exps []Expansion) (*Result, error) {
	var xp *expander
	if len(exps) > 0 {
		be, ok := e.(*builtin.Embedder)
		if !ok {
			return nil, fmt.Errorf("query expansion needs the built-in embedder, got %s", e.ID())
		}
		maxK := 0
		for _, o := range exps {
			maxK = max(maxK, o.K)
		}
		xp = newExpander(be, newBM25(c.Tools), maxK)
	}
	docs := make([]string, len(c.Tools))
	names := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		docs[i], names[i] = index.EmbedText(t), t.Name
	}
	if ca, ok := e.(embed.CatalogAware); ok {
		f, err := ca.Fit(ctx, docs)
		if err != nil {
			return nil, err
		}
		e = f
	}
	dv, err := e.EmbedDocuments(ctx, docs)
	if err != nil {
		return nil, err
	}
	bm := newBM25(c.Tools)
	acc := splitMetrics{}
	record := acc.record
	for _, q := range c.Queries {
		qv, err := e.EmbedQuery(ctx, q.Text)
		if err != nil {
			return nil, err
		}
		bs := bm.scores(q.Text)
		cs := make([]float64, len(dv))
		for i, v := range dv {
			cs[i] = float64(dot(qv, v))
		}
		held := heldout(q.ID)
		record("bm25", judge(bs, names, q.Relevant), held)
		record("dense", judge(cs, names, q.Relevant), held)
		for name, f := range fusions {
			record(name, judge(f(bs, cs), names, q.Relevant), held)
		}
		for _, o := range exps {
			xs := bm.weightedScores(xp.weights(q.Text, o))
			record("bm25 "+o.Name(), judge(xs, names, q.Relevant), held)
			for name, f := range fusions {
				record(name+" "+o.Name(), judge(f(xs, cs), names, q.Relevant), held)
			}
		}
	}
	return acc.result(c.Name), nil
}

// ZScore is α·z(BM25) + (1−α)·z(cos), each standardised over the catalog.
func ZScore(alpha float64) Fusion {
	return func(bm, cos []float64) []float64 {
		a, b := zscore(bm), zscore(cos)
		out := make([]float64, len(a))
		for i := range a {
			out[i] = alpha*a[i] + (1-alpha)*b[i]
		}
		return out
	}
}

func zscore(s []float64) []float64 {
	var mean, sq float64
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(sq / float64(len(s)))
	out := make([]float64, len(s))
	if sd > 0 {
		for i, x := range s {
			out[i] = (x - mean) / sd
		}
	}
	return out
}

// splitMetrics collects per-mode, per-query metrics over all queries, the
// tuning part and the held-out part (index 0, 1, 2).
type splitMetrics map[string]*[3][]eval.Metrics

func (acc splitMetrics) record(mode string, m eval.Metrics, held bool) {
	a := acc[mode]
	if a == nil {
		a = &[3][]eval.Metrics{}
		acc[mode] = a
	}
	a[0] = append(a[0], m)
	if held {
		a[2] = append(a[2], m)
	} else {
		a[1] = append(a[1], m)
	}
}

// result averages each mode and split over its queries (eval.Macro
// of one-query metrics is the mean over queries).
func (acc splitMetrics) result(corpus string) *Result {
	r := &Result{Corpus: corpus, Modes: map[string][3]eval.Metrics{}}
	for k, a := range acc {
		var ms [3]eval.Metrics
		for i := range a {
			ms[i] = eval.Macro(a[i])
			ms[i].Corpus = corpus
		}
		r.Modes[k] = ms
	}
	return r
}
