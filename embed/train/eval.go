package train

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"toolsrv/embed"
	"toolsrv/embed/builtin"
)

// Corpus is one labelled evaluation corpus (the layout of shared/eval).
type Corpus struct {
	Name    string
	Tools   []Tool
	Queries []Query
}

// Tool is what the harness reads of a .meta file.
type Tool struct {
	Name, Description, Prompt string
	Args                      json.RawMessage
}

// Query is one labelled request.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// Heldout reports whether a query belongs to the untouched part: a fixed
// hash split (one third) that no setting is ever chosen on.
func (q Query) Heldout() bool {
	h := fnv.New32a()
	h.Write([]byte(q.ID))
	return h.Sum32()%3 == 0
}

// LoadCorpus reads dir/tools/*.meta and dir/queries.jsonl.
func LoadCorpus(dir string) (*Corpus, error) {
	c := &Corpus{Name: filepath.Base(dir)}
	files, _ := filepath.Glob(filepath.Join(dir, "tools", "*.meta"))
	sort.Strings(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m struct {
			Description string          `json:"description"`
			Prompt      string          `json:"prompt"`
			Args        json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		c.Tools = append(c.Tools, Tool{strings.TrimSuffix(filepath.Base(f), ".meta"), m.Description, m.Prompt, m.Args})
	}
	qf, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	defer qf.Close()
	sc := bufio.NewScanner(qf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var q Query
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s: %w", qf.Name(), err)
		}
		c.Queries = append(c.Queries, q)
	}
	if len(c.Tools) == 0 || len(c.Queries) == 0 {
		return nil, fmt.Errorf("%s: no tools or no queries", dir)
	}
	return c, sc.Err()
}

// DocText is the text the index embeds for a tool (mirrors index/document.go):
// name words, description, argument names and descriptions, prompt (2000 bytes).
func (t Tool) DocText() string {
	var b strings.Builder
	b.WriteString(strings.Join(strings.FieldsFunc(t.Name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' }), " "))
	b.WriteString(": ")
	b.WriteString(t.Description)
	if a := argText(t.Args); a != "" {
		b.WriteString("\nArguments: ")
		b.WriteString(a)
	}
	if p := strings.TrimSpace(t.Prompt); p != "" {
		if len(p) > 2000 {
			p = p[:2000]
		}
		b.WriteString("\n")
		b.WriteString(p)
	}
	return b.String()
}

func argText(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		p := strings.ReplaceAll(n, "_", " ")
		if d := strings.TrimSpace(s.Properties[n].Description); d != "" {
			p += " (" + d + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// bm25 is the reference BM25 of shared/eval/README.md: k1=1.2, b=0.75 over
// description+prompt, lowercase [a-z0-9]+ tokens, distinct query terms.
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

func lexTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func newBM25(tools []Tool) *bm25 {
	b := &bm25{n: len(tools), postings: map[string][]posting{}, dl: make([]float64, len(tools))}
	for i, t := range tools {
		tf := map[string]int{}
		toks := lexTokens(t.Description + " " + t.Prompt)
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
	for _, w := range lexTokens(q) {
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

// Metrics are the retrieval measures of shared/eval/README.md.
type Metrics struct {
	R1, R5, R10, NDCG10, MRR float64
	N                        int
}

func (m *Metrics) add(o Metrics) {
	m.R1 += o.R1
	m.R5 += o.R5
	m.R10 += o.R10
	m.NDCG10 += o.NDCG10
	m.MRR += o.MRR
	m.N += o.N
}

func (m Metrics) mean() Metrics {
	if m.N == 0 {
		return m
	}
	f := float64(m.N)
	return Metrics{m.R1 / f, m.R5 / f, m.R10 / f, m.NDCG10 / f, m.MRR / f, m.N}
}

// judge ranks scores (ties by name) and measures one query.
func judge(scores []float64, names []string, relevant []string) Metrics {
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
	rel := map[string]bool{}
	for _, r := range relevant {
		rel[r] = true
	}
	var m Metrics
	m.N = 1
	hits := 0
	var dcg, idcg float64
	for k := 0; k < min(10, len(rel)); k++ {
		idcg += 1 / math.Log2(float64(k+2))
	}
	for rank, i := range idx {
		if !rel[names[i]] {
			continue
		}
		if hits == 0 {
			m.MRR = 1 / float64(rank+1)
		}
		hits++
		if rank < 1 {
			m.R1++
		}
		if rank < 5 {
			m.R5++
		}
		if rank < 10 {
			m.R10++
			dcg += 1 / math.Log2(float64(rank+2))
		}
	}
	nr := float64(len(rel))
	m.R1, m.R5, m.R10 = m.R1/nr, m.R5/nr, m.R10/nr
	if idcg > 0 {
		m.NDCG10 = dcg / idcg
	}
	return m
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
	Modes map[string][3]Metrics
}

// Evaluate runs BM25, dense and the given fusions on a corpus with an
// embedder (fitted to the catalog when it is CatalogAware).
func Evaluate(ctx context.Context, c *Corpus, e embed.Embedder, fusions map[string]Fusion) (*Result, error) {
	return EvaluateExpanded(ctx, c, e, fusions, nil)
}

// EvaluateExpanded is Evaluate plus, for each expansion (which needs the
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
		docs[i], names[i] = t.DocText(), t.Name
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
		qv, err := e.EmbedQuery(ctx, q.Query)
		if err != nil {
			return nil, err
		}
		bs := bm.scores(q.Query)
		cs := make([]float64, len(dv))
		for i, v := range dv {
			cs[i] = float64(dot(qv, v))
		}
		held := q.Heldout()
		record("bm25", judge(bs, names, q.Relevant), held)
		record("dense", judge(cs, names, q.Relevant), held)
		for name, f := range fusions {
			record(name, judge(f(bs, cs), names, q.Relevant), held)
		}
		for _, o := range exps {
			xs := bm.weightedScores(xp.weights(q.Query, o))
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

// splitMetrics accumulates per-mode metrics over all queries, the tuning
// part and the held-out part (index 0, 1, 2).
type splitMetrics map[string]*[3]Metrics

func (acc splitMetrics) record(mode string, m Metrics, held bool) {
	a := acc[mode]
	if a == nil {
		a = &[3]Metrics{}
		acc[mode] = a
	}
	a[0].add(m)
	if held {
		a[2].add(m)
	} else {
		a[1].add(m)
	}
}

func (acc splitMetrics) result(corpus string) *Result {
	r := &Result{Corpus: corpus, Modes: map[string][3]Metrics{}}
	for k, a := range acc {
		r.Modes[k] = [3]Metrics{a[0].mean(), a[1].mean(), a[2].mean()}
	}
	return r
}
