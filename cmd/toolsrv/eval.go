package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	usagedb "github.com/toolsrv/toolsrv/usage"
)

const evalAbout = `Measures ranking quality on labelled corpora: Recall@1/5/10, NDCG@10 and
MRR per corpus and their macro average (equal weight per corpus), for each
--mode. A corpus is a directory C with C/tools/*.meta and C/queries.jsonl
lines {"id","query","relevant":[names]}; --corpus may also name a directory
of corpora. The whole catalog is ranked for each query, without deadline.
A request with "relevant": [] is one no tool of the catalog serves: it
counts only in the offered-set figures, printed for the hybrid mode: the
thresholds in effect (see "toolsrv tune --show") applied as "toolsrv rank"
applies them: hit (share of answerable requests whose offered set holds a
relevant tool), tools offered, and how often "no tool fits" was said to the
requests with "relevant": [] (recall) and rightly (precision).`

// evalResult is one mode's figures (the --json output is a list of them).
type evalResult struct {
	Mode     index.Mode     `json:"mode"`
	Embedder string         `json:"embedder"`
	Corpora  []eval.Metrics `json:"corpora"`
	Macro    eval.Metrics   `json:"macro"`
	// Offers are the offered-set figures (hybrid mode, thresholds applied).
	Offers      []eval.OfferMetrics `json:"offers,omitempty"`
	OffersMacro *eval.OfferMetrics  `json:"offersMacro,omitempty"`
	Thresholds  string              `json:"thresholds,omitempty"`
}

func runEval(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "eval", "eval --corpus DIR [--corpus DIR ...] [DIR...] [--embedder "+embedderChoice()+"] [--mode bm25,dense,hybrid] [--json]", evalAbout)
	ef := addEngineFlags(fs)
	var corpora repeated
	fs.Var(&corpora, "corpus", "a corpus directory, or a directory of corpora (repeatable)")
	modes := fs.String("mode", "hybrid", "comma-separated modes: bm25, dense, hybrid (or all)")
	noOffer := fs.Bool("no-offer", false, "skip the offered-set figures")
	noLearned := fs.Bool("no-learned", false, "rank with the fixed fusion, without the learned last step")
	thrFile := fs.String("thresholds", "", "thresholds file for the offered-set figures (default: as toolsrv rank)")
	asJSON := fs.Bool("json", false, "print the figures as JSON")
	usageFile := fs.String("usage", "", "usage lines to rank with (the format of \"toolsrv usage import\"), applied to each corpus in a history of its own: the lines naming its tools, and those naming none; recorded as the owner's")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(env.stderr, "toolsrv eval:", err)
		return 1
	}
	var history []usagedb.Event
	if *usageFile != "" {
		f, err := os.Open(*usageFile)
		if err != nil {
			return fail(fmt.Errorf("--usage: %w", err))
		}
		// The lines are the owner's (who gives them here), as a history
		// of one's own calls would be.
		_, history, err = parseImport(f, importWho{given: usagedb.Owner})
		f.Close()
		if err != nil {
			return fail(fmt.Errorf("--usage %s: %w", *usageFile, err))
		}
	}
	corpora = append(corpora, fs.Args()...)
	if len(corpora) == 0 {
		return usageError(fs, "--corpus DIR is required (layout: DIR/tools/*.meta, DIR/queries.jsonl)")
	}
	if err := ef.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	var ms []index.Mode
	if *modes == "all" {
		*modes = "bm25,dense,hybrid"
	}
	for _, m := range strings.Split(*modes, ",") {
		mode, err := index.ParseMode(strings.TrimSpace(m))
		if err != nil {
			return usageError(fs, "--mode: %v", err)
		}
		ms = append(ms, mode)
	}
	dirs, err := eval.FindCorpora(corpora)
	if err != nil {
		return fail(err)
	}
	emb, err := ef.open(env)
	if err != nil {
		return fail(err)
	}
	results := make([]evalResult, len(ms))
	for i, m := range ms {
		results[i] = evalResult{Mode: m, Embedder: emb.ID()}
	}
	for _, dir := range dirs {
		c, err := eval.LoadCorpus(dir)
		if err != nil {
			return fail(err)
		}
		per, offers, src, err := evalCorpus(ctx, env, ef, emb, c, ms, evalOpts{offer: !*noOffer, noLearned: *noLearned, thresholds: *thrFile, usage: history})
		if err != nil {
			return fail(err)
		}
		for i := range ms {
			results[i].Corpora = append(results[i].Corpora, per[i])
			if offers[i] != nil {
				results[i].Offers = append(results[i].Offers, *offers[i])
				results[i].Thresholds = src
			}
		}
	}
	for i := range results {
		results[i].Macro = eval.Macro(results[i].Corpora)
		if len(results[i].Offers) > 0 {
			m := eval.MacroOffers(results[i].Offers)
			results[i].OffersMacro = &m
		}
	}
	if *asJSON {
		if err := writeJSON(env.stdout, results); err != nil {
			return fail(err)
		}
		return 0
	}
	for _, r := range results {
		writeEvalTable(env.stdout, r)
	}
	return 0
}

type evalOpts struct {
	offer, noLearned bool
	thresholds       string
	// usage, when set, is the history to rank with (eval --usage).
	usage []usagedb.Event
}

// evalHistory makes a store in a new temporary directory holding the
// events of evs that name a tool of dir (or none); remove removes it.
func evalHistory(ctx context.Context, dir string, evs []usagedb.Event) (s usagedb.Store, remove func(), err error) {
	tmp, err := os.MkdirTemp("", "toolsrv-eval-usage-")
	if err != nil {
		return nil, nil, err
	}
	remove = func() { os.RemoveAll(tmp) }
	s, _, err = usagedb.Open(ctx, filepath.Join(tmp, "usage.db"), usagedb.Options{})
	if err != nil {
		remove()
		return nil, nil, err
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		s.Close()
		remove()
		return nil, nil, err
	}
	tools := map[string]bool{"": true} // "": answered without a tool
	for _, f := range files {
		if name, ok := strings.CutSuffix(f.Name(), ".meta"); ok {
			tools[name] = true
		}
	}
	var mine []usagedb.Event
	for _, ev := range evs {
		if tools[ev.Tool] {
			mine = append(mine, ev)
		}
	}
	if err := s.Record(ctx, mine...); err != nil {
		s.Close()
		remove()
		return nil, nil, err
	}
	return s, remove, nil
}

// evalCorpus indexes one corpus (an engine over its tools, sharing emb)
// and measures each mode on it (and, for the hybrid mode, the offered set).
func evalCorpus(ctx context.Context, env *cliEnv, ef *engineFlags, emb embed.Embedder, c *eval.Corpus, ms []index.Mode, o evalOpts) ([]eval.Metrics, []*eval.OfferMetrics, string, error) {
	opts := ef.options(env, []string{c.ToolsDir}, nil)
	opts.Embedder, opts.Thresholds, opts.NoThresholds = emb, o.thresholds, !o.offer
	if o.usage != nil {
		s, remove, err := evalHistory(ctx, c.ToolsDir, o.usage)
		if err != nil {
			return nil, nil, "", fmt.Errorf("corpus %s: usage history: %w", c.Name, err)
		}
		defer remove()
		opts.Usage = s // the engine closes it
	}
	p := newIndexProgress(env)
	opts.Progress = p.update
	eng, err := newEngine(ctx, env, opts)
	p.finish()
	if err != nil {
		if opts.Usage != nil {
			opts.Usage.Close()
		}
		return nil, nil, "", fmt.Errorf("corpus %s: %w", c.Name, err)
	}
	defer eng.Close()
	if o.usage != nil {
		f := eng.UsageFit()
		fmt.Fprintf(env.stderr, "corpus %s: usage history of %d entries, weight %.2f (chosen on %d past requests: Recall@5 %.3f with it, %.3f without)\n",
			c.Name, f.Entries, f.Weight, f.Sample, f.Recall, f.Base)
	}
	cat := eng.Catalog()
	if len(cat.Tools) == 0 {
		return nil, nil, "", fmt.Errorf("corpus %s: no valid tools in %s", c.Name, c.ToolsDir)
	}
	if n := len(cat.InvalidFiles()); n > 0 {
		fmt.Fprintf(env.stderr, "warning: corpus %s: %d invalid tool files left out (first: %v)\n", c.Name, n, cat.Problems[0])
	}
	out := make([]eval.Metrics, len(ms))
	offers := make([]*eval.OfferMetrics, len(ms))
	var srcName string
	for i, mode := range ms {
		m, err := eval.Measure(ctx, c, func(ctx context.Context, q string) ([]string, bool, error) {
			ans, err := eng.Rank(ctx, engine.Request{Query: q, Mode: mode, Full: true, All: true, NoLearned: o.noLearned, Timeout: time.Hour})
			if err != nil {
				return nil, false, err
			}
			r := ans.Ranking
			names := make([]string, len(r.Hits))
			for j, h := range r.Hits {
				names[j] = h.Name
			}
			return names, r.Degraded && mode != index.Lexical, nil
		})
		if err != nil {
			return nil, nil, "", err
		}
		if m.Degraded > 0 {
			fmt.Fprintf(env.stderr, "warning: corpus %s, mode %s: %d queries ranked without dense scores\n", c.Name, mode, m.Degraded)
		}
		out[i] = m
		if !o.offer || mode != index.Hybrid {
			continue
		}
		_, src := eng.Policy()
		srcName = src.String()
		om, err := eval.MeasureOffers(ctx, c, func(ctx context.Context, q string) ([]string, bool, error) {
			ans, err := eng.Rank(ctx, engine.Request{Query: q, Limit: 10, NoLearned: o.noLearned, Timeout: time.Hour})
			if err != nil {
				return nil, false, err
			}
			return ans.Selection.Names(), ans.NoToolFits, nil
		})
		if err != nil {
			return nil, nil, "", err
		}
		offers[i] = &om
	}
	return out, offers, srcName, nil
}

func writeEvalTable(w io.Writer, r evalResult) {
	fmt.Fprintf(w, "mode %s, embedder %s\n", r.Mode, r.Embedder)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "corpus\tqueries\tR@1\tR@5\tR@10\tNDCG@10\tMRR\t")
	row := func(m eval.Metrics) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", m.Corpus, m.Queries, m.R1, m.R5, m.R10, m.NDCG10, m.MRR)
	}
	for _, m := range r.Corpora {
		row(m)
	}
	row(r.Macro)
	tw.Flush()
	fmt.Fprintln(w)
	if len(r.Offers) == 0 {
		return
	}
	fmt.Fprintf(w, "offered set, mode %s, thresholds %s\n", r.Mode, r.Thresholds)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "corpus\tanswerable\tabstain\thit\toffered\tntf recall\tntf precision\taccuracy\t")
	orow := func(m eval.OfferMetrics) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.2f\t%.3f\t%.3f\t%.3f\t\n", m.Corpus, m.Answerable, m.Abstain, m.Hit, m.Offered, m.AbstainRecall, m.AbstainPrecision, m.Accuracy)
	}
	for _, m := range r.Offers {
		orow(m)
	}
	orow(*r.OffersMacro)
	tw.Flush()
	fmt.Fprintln(w)
}
