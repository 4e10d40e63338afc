// Command learn extracts the learned last step's features on catalogs built
// from request → tool data, fits the model (learn/model.json) and reports
// its figures on held-out tools and on labelled corpora. See learn/MODEL.md.
//
//	go run ./train/cmd/learn extract -data train/data -out /tmp/samples.gob
//	go run ./train/cmd/learn fit -samples /tmp/samples.gob -out learn/model.json
//	go run ./train/cmd/learn export -data train/data -out /tmp/corpora
//
// -eval DIR (extract, export) adds labelled corpora (package eval's layout:
// DIR/C/tools/*.meta, DIR/C/queries.jsonl), measured on and never trained on.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/learn"
	textpkg "github.com/toolsrv/toolsrv/text"
	"github.com/toolsrv/toolsrv/train/laststep"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: learn extract|fit [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "extract":
		err = extract(ctx, os.Args[2:])
	case "fit":
		err = fit(os.Args[2:])
	case "export":
		err = export(os.Args[2:])

	default:
		err = fmt.Errorf("unknown command %q: use extract, fit or export", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "learn:", err)
		os.Exit(1)
	}
}

func extract(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("extract", flag.ExitOnError)
	data := fs.String("data", "train/data", "request → tool data (train/data layout)")
	evalDir := fs.String("eval", "", "a directory of labelled corpora (C/tools/*.meta, C/queries.jsonl) to measure on; never trained on")
	out := fs.String("out", "/tmp/learn-samples.gob", "samples file")
	pool := fs.Int("pool", 30, "candidates per request")
	maxQ := fs.Int("maxq", 3000, "requests per training catalog")
	only := fs.String("only", "", "comma-separated catalogs prefixes to extract (default all)")
	more := fs.Bool("more", laststep.MoreCatalogs, "also the catalogs of other sizes and the mixed catalogs")
	toolText := fs.Int("tooltext", 0, "also rank requests made from the texts of this many tools of each catalog, with and without the tool (measured, not shipped)")
	fs.Parse(args)
	laststep.MoreCatalogs = *more
	laststep.ToolTextPerCatalog = *toolText
	srcs, err := laststep.LoadSources(*data)
	if err != nil {
		return err
	}
	cats := laststep.TrainingCatalogs(srcs, *maxQ)
	if *evalDir != "" {
		cs, err := eval.LoadCorpora([]string{*evalDir})
		if err != nil {
			return err
		}
		cats = append(cats, laststep.EvalCatalogs(cs)...)
	}
	if *only != "" {
		var keep []*laststep.Catalog
		for _, c := range cats {
			for _, p := range strings.Split(*only, ",") {
				if strings.HasPrefix(c.Name, p) {
					keep = append(keep, c)
					break
				}
			}
		}
		cats = keep
	}
	emb, err := builtin.New()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "learn-cat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	samples, err := laststep.Extract(ctx, emb, cats, *pool, tmp, func(cat string, done, total int) {
		fmt.Fprintf(os.Stderr, "\r%-28s %6d/%-6d %v   ", cat, done, total, time.Since(start).Round(time.Second))
		if done == total {
			fmt.Fprintln(os.Stderr)
		}
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d samples from %d catalogs in %v\n", len(samples), len(cats), time.Since(start).Round(time.Second))
	return laststep.SaveSamples(*out, samples)
}

// fitFlags are learn fit's settings.
type fitFlags struct {
	in, out                     string
	l2, l2c                     float64
	iters                       int
	negW, minPrec, minRec       float64
	frontier, oracle            bool
	maxTools                    int
	keepCatalog                 bool
	trees, depth, minLeaf       int
	tuneOn                      string
	calibrate                   bool
	toolShift, exclude, sources string
}

func parseFitFlags(args []string) *fitFlags {
	f := &fitFlags{}
	fs := flag.NewFlagSet("fit", flag.ExitOnError)
	fs.StringVar(&f.in, "samples", "/tmp/learn-samples.gob", "samples file (learn extract)")
	fs.StringVar(&f.out, "out", "", "model file to write (default: print figures only)")
	fs.Float64Var(&f.l2, "l2", 1e-3, "L2 penalty")
	fs.Float64Var(&f.l2c, "l2cand", 0.1, "L2 penalty of the candidate model (not on the hybrid score)")
	fs.IntVar(&f.iters, "iters", 400, "Adam iterations")
	fs.Float64Var(&f.negW, "negweight", 1, "loss weight of unanswerable requests")
	fs.Float64Var(&f.minPrec, "minprec", 0, "decision objective: macro abstention precision at least this")
	fs.Float64Var(&f.minRec, "minrec", 0, "decision objective: macro abstention recall at least this")
	fs.BoolVar(&f.frontier, "frontier", false, "print the macro figures of every minAnswerable (mass 1, max 3) on train val and the eval halves: the trade between hits and \"no tool fits\" of one cut for all catalogs")
	fs.BoolVar(&f.oracle, "oracle", false, "print each group's best answerability cut-off (an upper bound for a per-catalog cut-off)")
	fs.IntVar(&f.maxTools, "maxtools", 3, "largest maxTools the decision sweep tries")
	fs.BoolVar(&f.keepCatalog, "catalog", true, "let the answerability model use the catalog size")
	fs.IntVar(&f.trees, "trees", 0, "answerability by this many boosted trees (0: logistic regression)")
	fs.IntVar(&f.depth, "depth", 3, "depth of the boosted trees")
	fs.IntVar(&f.minLeaf, "minleaf", 100, "fewest requests in a leaf of the boosted trees")
	fs.StringVar(&f.tuneOn, "tuneon", "train val ", "group prefix the decision is chosen on")
	fs.BoolVar(&f.calibrate, "calibrate", true, "calibrate the answerability per catalog with the probes (learn.Calib)")
	fs.StringVar(&f.toolShift, "toolshift", "", "V:λ — measure, instead of the probes, a per-catalog shift of the answerability logit by λ × (the median logit of the catalog's requests made from tool texts of variant V, ranked without their tool − its mean over the training catalogs); needs extract -tooltext")
	fs.StringVar(&f.exclude, "exclude", "", "comma-separated candidate features to leave out (weight 0)")
	fs.StringVar(&f.sources, "sources", "", "comma-separated training sources (default all)")
	fs.Parse(args)
	return f
}

// srcOK says whether source s is one of -sources (all without it).
func (f *fitFlags) srcOK(s string) bool {
	if f.sources == "" {
		return true
	}
	for _, x := range strings.Split(f.sources, ",") {
		if x == s {
			return true
		}
	}
	return false
}

// fit fits the model on the samples of the training catalogs' requests
// that are not held out, chooses the decision rule on the held-out ones,
// prints the figures of every group and writes the model file.
func fit(args []string) error {
	f := parseFitFlags(args)
	samples, err := laststep.LoadSamples(f.in)
	if err != nil {
		return err
	}
	var trainS []laststep.Sample
	for _, s := range samples {
		if !s.Eval && !s.Val && !s.Table && !s.Probe && s.ToolText == 0 && f.srcOK(s.Source) {
			trainS = append(trainS, s)
		}
	}
	m, err := fitModel(f, samples, trainS)
	if err != nil {
		return err
	}
	printWeights(m)

	scored := laststep.ScoreAll(m, samples)
	if f.toolShift != "" {
		if err := applyToolShift(m, samples, scored, f.toolShift); err != nil {
			return err
		}
	}
	groups, names := groupScored(scored)
	aucReport(m, groups, names)
	// the decision rule: swept on the training sources' held-out tools
	var valGroups []string
	for _, g := range names {
		if strings.HasPrefix(g, f.tuneOn) {
			valGroups = append(valGroups, g)
		}
	}
	best, bestF := chooseDecision(decisionGrid(f.maxTools), groups, valGroups, f.minRec, f.minPrec)
	fmt.Printf("\nchosen on train val: %s  (macro hit %.3f offered %.2f abstRec %.3f abstPr %.3f)\n", best, bestF.Hit, bestF.Offered, bestF.AbstainRec, bestF.AbstainPr)
	if f.frontier {
		printFrontier(groups, names)
	}
	if f.oracle {
		printOracle(groups, names, best)
	}
	report := func(prefix string, d laststep.Decision, b *laststep.BaseRule) {
		var fs []laststep.Figures
		for _, g := range names {
			if strings.HasPrefix(g, prefix) {
				fs = append(fs, laststep.Measure(g, groups[g], d, b))
			}
		}
		fs = append(fs, laststep.Macro("macro "+prefix, fs))
		fmt.Print(laststep.Table(fs))
	}
	for _, p := range []string{"train fit", "train val", "rank dev", "rank test", "offer dev", "offer test"} {
		fmt.Printf("\n== %s (learned decision)\n", p)
		report(p, best, nil)
	}
	base := &laststep.BaseRule{Min: 0.27, MaxTools: 8}
	for _, p := range []string{"train val", "offer dev", "offer test"} {
		fmt.Printf("\n== %s (baseline: hybrid min 0.27, max 8)\n", p)
		report(p, laststep.Decision{}, base)
	}
	if f.out == "" {
		return nil
	}
	return writeModel(f.out, m, args, best, len(trainS))
}

// fitModel fits the candidate model and the answerability (a logistic
// regression, or boosted trees with -trees) on trainS, and the
// per-catalog calibration on the probes of samples.
func fitModel(f *fitFlags, samples, trainS []laststep.Sample) (*learn.Model, error) {
	o := laststep.DefaultFit()
	o.L2, o.Iters = f.l2, f.iters
	o.Logger = func(it int, loss float64) { fmt.Fprintf(os.Stderr, "iter %d loss %.4f\n", it, loss) }
	m := &learn.Model{ID: "learn/v1", Embedder: "builtin/v1", Pool: len(samples[0].Cand)}

	for _, s := range samples {
		m.Pool = max(m.Pool, len(s.Cand))
	}
	oc := o
	oc.L2 = f.l2c
	m.Cand = laststep.FitCandidate(trainS, oc)
	// Features are sums over map-ordered words, equal to about 1e-15
	// between runs: weights rounded to 8 significant digits (before the
	// next fit uses them) make the model file reproducible.
	roundLinear(&m.Cand)
	for _, x := range strings.Split(f.exclude, ",") {
		for i, n := range learn.CandNames {
			if n == x {
				m.Cand.W[i] = 0
			}
		}
	}
	if !f.keepCatalog {
		laststep.AnsExcluded[learn.AnsCatalog] = true
	}
	m.Ans = laststep.FitAnswerable(m, trainS, o, f.negW)
	roundLinear(&m.Ans)
	if f.trees > 0 {
		bo := laststep.DefaultBoost()
		bo.Trees, bo.Depth, bo.MinLeaf = f.trees, f.depth, f.minLeaf
		m.AnsTrees = laststep.FitAnswerableTrees(m, trainS, bo, f.negW)
	}
	if f.calibrate {
		probes := probeTexts(samples)
		if len(probes) == 0 {
			return nil, fmt.Errorf("%s has no probe samples: extract them again", f.in)
		}
		// the probes of the training catalogs, with their requests
		var calS []laststep.Sample
		for _, s := range samples {
			if !s.Eval && f.srcOK(s.Source) && (s.Probe || !s.Val && !s.Table) {
				calS = append(calS, s)
			}
		}
		m.Calib = laststep.FitCalibration(m, calS, probes, o)
		m.Calib.A, m.Calib.B = round8(m.Calib.A), round8(m.Calib.B)
		fmt.Printf("calibration: %d probes, answerable = σ(%.3f·logit(u) %+.3f)\n", len(probes), m.Calib.A, m.Calib.B)
	}
	return m, nil
}

// groupScored sorts the scored requests (probes and tool-text requests
// aside) into the report's groups: "train fit|val SOURCE" for the training
// catalogs, "rank|offer dev|test CORPUS" for the eval corpora whole and
// with a fifth removed. names are the groups, sorted.
func groupScored(scored []laststep.Scored) (groups map[string][]laststep.Scored, names []string) {
	groups = map[string][]laststep.Scored{}
	for _, s := range scored {
		if s.Probe || s.ToolText != 0 {
			continue
		}
		var g string
		switch {
		case s.Eval && strings.HasSuffix(s.Catalog, "/full"):
			g = "rank " + split(s.Val, "test", "dev") + " " + s.Source
		case s.Eval:
			g = "offer " + split(s.Val, "test", "dev") + " " + s.Source
		default:
			g = "train " + split(s.Val, "val", "fit") + " " + s.Source
		}
		groups[g] = append(groups[g], s)
	}
	names = make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	return groups, names
}

// printFrontier prints, for train val and the eval halves, the macro
// figures of one minAnswerable for every catalog (learn fit -frontier).
func printFrontier(groups map[string][]laststep.Scored, names []string) {
	for _, p := range []string{"train val", "offer dev", "offer test"} {
		fmt.Printf("\n== frontier %s: one minAnswerable for every catalog (mass 1, max 3)\n", p)
		for a := 0; a <= 50; a++ {
			d := laststep.Decision{MinAnswerable: float64(a) / 50, Mass: 1, MaxTools: 3}
			var fs []laststep.Figures
			for _, g := range names {
				if strings.HasPrefix(g, p) {
					fs = append(fs, laststep.Measure(g, groups[g], d, nil))
				}
			}
			f := laststep.Macro("", fs)
			if f.AbstainRec == 0 && a > 0 {
				continue
			}
			fmt.Printf("frontier %-10s minAns %.2f hit %.3f offered %.2f ntf %.3f/%.3f acc %.3f\n", p, d.MinAnswerable, f.Hit, f.Offered, f.AbstainRec, f.AbstainPr, f.Accuracy)
			if f.AbstainRec > 0.95 {
				break
			}
		}
	}
}

// printOracle prints each group's best answerability cut-off against the
// chosen decision, and the best "no tool fits" precision any cut reaches
// at a given recall (learn fit -oracle): upper bounds, chosen with the
// labels.
func printOracle(groups map[string][]laststep.Scored, names []string, best laststep.Decision) {
	// per group, the best minAnswerable (mass 1, max 3) against the chosen one
	for _, g := range names {
		if !strings.HasPrefix(g, "offer") && !strings.HasPrefix(g, "train val") {
			continue
		}
		cf := laststep.Measure(g, groups[g], best, nil)
		bd, bf := best, cf
		for a := 0; a <= 50; a++ {
			d := laststep.Decision{MinAnswerable: float64(a) / 50, Mass: 1, MaxTools: 3}
			if f := laststep.Measure(g, groups[g], d, nil); f.Accuracy > bf.Accuracy {
				bd, bf = d, f
			}
		}
		fmt.Printf("oracle %-26s chosen acc %.3f hit %.3f | best minAns %.2f acc %.3f hit %.3f ntf %.3f/%.3f\n", g, cf.Accuracy, cf.Hit, bd.MinAnswerable, bf.Accuracy, bf.Hit, bf.AbstainRec, bf.AbstainPr)
	}
	// The best "no tool fits" precision a cut on the answerability can
	// reach in each group at a given recall (the cut chosen per group,
	// with the labels): an upper bound for any threshold.
	fmt.Println()
	for _, g := range names {
		if !strings.HasPrefix(g, "offer") && !strings.HasPrefix(g, "train val") {
			continue
		}
		var neg []float64
		for _, s := range groups[g] {
			if !s.Answerable && !s.Named {
				neg = append(neg, s.P)
			}
		}
		if len(neg) == 0 {
			continue
		}
		sort.Float64s(neg)
		fmt.Printf("ntf bound %-26s %4d removed", g, len(neg))
		for _, r := range []float64{0.3, 0.5} {
			cut := neg[int(math.Ceil(r*float64(len(neg))))-1]
			var said, right float64
			for _, s := range groups[g] {
				if !s.Named && s.P <= cut {
					said++
					if !s.Answerable {
						right++
					}
				}
			}
			fmt.Printf(" | recall %.1f: precision %.3f", r, right/said)
		}
		fmt.Println()
	}
}

// writeModel writes m, its ID a digest of its weights and calibration,
// with a note of how it was made (the command, the decision chosen, the
// number of training requests, the embedder).
func writeModel(path string, m *learn.Model, args []string, best laststep.Decision, requests int) error {
	if m.Calib != nil {
		m.Calib.A, m.Calib.B = round8(m.Calib.A), round8(m.Calib.B)
	}
	wb, _ := json.Marshal([]any{m.Pool, m.Cand, m.Ans, m.AnsTrees, m.Calib})
	sum := sha256.Sum256(wb)
	m.ID = fmt.Sprintf("learn/v2-%x", sum[:4])
	tr, _ := json.Marshal(map[string]any{"command": "go run ./train/cmd/learn fit " + strings.Join(args, " "),
		"decision": best, "requests": requests, "embedder": builtinID()})
	m.Training = tr
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func split(b bool, t, f string) string {
	if b {
		return t
	}
	return f
}

func printWeights(m *learn.Model) {
	fmt.Println("candidate model (standardised weights):")
	for i, n := range learn.CandNames {
		fmt.Printf("  %-12s %+.3f\n", n, m.Cand.W[i])
	}
	fmt.Println("answerability model:")
	for i, n := range learn.AnsNames {
		fmt.Printf("  %-12s %+.3f\n", n, m.Ans.W[i])
	}
	fmt.Printf("  %-12s %+.3f\n", "bias", m.Ans.B)
}

func decisionGrid(maxTools int) []laststep.Decision {
	var out []laststep.Decision
	for a := 0; a <= 50; a++ {
		for _, mass := range []float64{0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1} {
			for _, rel := range []float64{0, 0.1, 0.2, 0.3, 0.5} {
				for _, mt := range []int{1, 2, 3, 4, 5, 6, 8} {
					if mt > maxTools {
						continue
					}
					out = append(out, laststep.Decision{MinAnswerable: float64(a) / 50, Mass: mass, Relative: rel, MaxTools: mt})
				}
			}
		}
	}
	return out
}

// chooseDecision maximises the macro hit rate over groups subject to at
// most 3 tools offered on average in every group, macro abstention recall
// and precision at least 0.5; ties: fewer tools.
func chooseDecision(grid []laststep.Decision, groups map[string][]laststep.Scored, names []string, minRec, minPrec float64) (laststep.Decision, laststep.Figures) {
	var best laststep.Decision
	var bestF laststep.Figures
	found := false
	for _, d := range grid {
		var fs []laststep.Figures
		ok := true
		for _, g := range names {
			f := laststep.Measure(g, groups[g], d, nil)
			if f.Offered > 3 {
				ok = false
				break
			}
			fs = append(fs, f)
		}
		if !ok {
			continue
		}
		m := laststep.Macro("", fs)
		if m.AbstainRec < minRec || m.AbstainPr < minPrec {
			continue
		}
		if !found || m.Accuracy > bestF.Accuracy || m.Accuracy == bestF.Accuracy && m.Offered < bestF.Offered {
			best, bestF, found = d, m, true
		}
	}
	return best, bestF
}

// auc is the probability that a random positive scores above a random negative.
func auc(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 {
		return 0.5
	}
	sort.Float64s(neg)
	var s float64
	for _, p := range pos {
		lo := sort.SearchFloat64s(neg, p)
		hi := lo
		for hi < len(neg) && neg[hi] == p {
			hi++
		}
		s += float64(lo) + 0.5*float64(hi-lo)
	}
	return s / float64(len(pos)) / float64(len(neg))
}

func aucReport(m *learn.Model, groups map[string][]laststep.Scored, names []string) {
	fmt.Printf("\nanswerability AUC per group: model, then single features\n%-26s %6s", "group", "model")
	for _, n := range learn.AnsNames {
		fmt.Printf(" %6.6s", n)
	}
	fmt.Println()
	for _, g := range names {
		if strings.HasPrefix(g, "rank") || strings.HasPrefix(g, "train fit") {
			continue
		}
		var pos, neg []float64
		fpos := make([][]float64, learn.NumAns)
		fneg := make([][]float64, learn.NumAns)
		for _, s := range groups[g] {
			qf, _, _ := laststep.AnsFeatures(m, s.Sample)
			if s.Answerable {
				pos = append(pos, s.P)
			} else {
				neg = append(neg, s.P)
			}
			for k := range learn.NumAns {
				if s.Answerable {
					fpos[k] = append(fpos[k], qf[k])
				} else {
					fneg[k] = append(fneg[k], qf[k])
				}
			}
		}
		fmt.Printf("%-26s %6.3f", g, auc(pos, neg))
		for k := range learn.NumAns {
			fmt.Printf(" %6.3f", auc(fpos[k], fneg[k]))
		}
		fmt.Println()
	}
}

func builtinID() string {
	e, err := builtin.New()
	if err != nil {
		return ""
	}
	return e.ID()
}

// export writes labelled corpora (package eval's layout): the training catalogs'
// held-out requests (what the shipped thresholds are tuned on) and each
// eval corpus with a fixed fifth of its tools removed (their requests
// become "relevant": []): what toolsrv eval measures the offered set on.
func export(args []string) error {
	fs := flag.NewFlagSet("export", flag.ExitOnError)
	data := fs.String("data", "train/data", "request → tool data (train/data layout)")
	evalDir := fs.String("eval", "", "a directory of labelled corpora (C/tools/*.meta, C/queries.jsonl) to export with a fifth of their tools removed")
	out := fs.String("out", "", "directory to write the corpora into (train/<catalog>, eval-drop/<corpus>)")
	maxQ := fs.Int("maxq", 3000, "requests per training catalog")
	offTopic := fs.Bool("offtopic", false, "also export the off-topic requests added to other sources' catalogs (the checking protocol has none: its \"no tool fits\" requests are those of removed tools)")
	classes := fs.Bool("classes", false, "also export, as train-class/<catalog>, the answerable requests that hold a class term (a number, an operator, a date, …) and do not train the built-in table, held out or not (a check of the table's class rows, for the fixed fusion: the last step is fitted on those not held out)")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("give -out DIR")
	}
	srcs, err := laststep.LoadSources(*data)
	if err != nil {
		return err
	}
	for _, c := range laststep.TrainingCatalogs(srcs, *maxQ) {
		dir := filepath.Join(*out, "train", strings.ReplaceAll(c.Name, "/", "-"))
		// Requests that train the built-in table (laststep.TableRequest)
		// are not exported: the thresholds are not tuned on them.
		if err := laststep.ExportCorpus(dir, c, func(q laststep.LQuery) bool { return q.Val && !q.Table && (*offTopic || !q.OffTopic) }); err != nil {
			return err
		}
		if *classes {
			dir := filepath.Join(*out, "train-class", strings.ReplaceAll(c.Name, "/", "-"))
			err := laststep.ExportCorpus(dir, c, func(q laststep.LQuery) bool {
				return !q.Table && len(q.Relevant) > 0 && slices.ContainsFunc(textpkg.Table().Terms(q.Text), textpkg.IsClass)
			})
			if err != nil && !errors.Is(err, laststep.ErrNoRequests) {
				return err
			}
		}
	}
	if *evalDir != "" {
		cs, err := eval.LoadCorpora([]string{*evalDir})
		if err != nil {
			return err
		}
		// eval-drop: all requests; eval-{full,drop}-{dev,test}: the halves
		// (dev: FNV-32a(id) mod 3 ≠ 0, the "tuning" part of embed/MODEL.md).
		for _, c := range laststep.EvalCatalogs(cs) {
			kind := c.Name[strings.LastIndexByte(c.Name, '/')+1:]
			if kind == "drop" {
				if err := laststep.ExportCorpus(filepath.Join(*out, "eval-drop", c.Source), c, nil); err != nil {
					return err
				}
			}
			for _, half := range []string{"dev", "test"} {
				test := half == "test"
				dir := filepath.Join(*out, "eval-"+kind+"-"+half, c.Source)
				if err := laststep.ExportCorpus(dir, c, func(q laststep.LQuery) bool { return q.Val == test }); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// applyToolShift replaces the answerability of every scored request by
// σ(z − λ·(med_c − prior)): med_c is the median logit of catalog c's
// requests made from tool texts of variant V (ranked without their tool),
// prior the mean of med over the training catalogs (learn fit -toolshift).
func applyToolShift(m *learn.Model, samples []laststep.Sample, scored []laststep.Scored, spec string) error {
	var v int
	var lambda float64
	if _, err := fmt.Sscanf(spec, "%d:%g", &v, &lambda); err != nil {
		return fmt.Errorf("-toolshift %q: want V:λ", spec)
	}
	byCat := map[string][]float64{}
	eval := map[string]bool{}
	for i := range samples {
		s := &samples[i]
		if s.ToolText == 2 && s.Variant == v {
			byCat[s.Catalog] = append(byCat[s.Catalog], laststep.SampleLogit(m, s))
			eval[s.Catalog] = s.Eval
		}
	}
	if len(byCat) == 0 {
		return fmt.Errorf("-toolshift: no tool-text samples of variant %d (learn extract -tooltext N)", v)
	}
	med := map[string]float64{}
	var prior float64
	n := 0
	for c, z := range byCat {
		sort.Float64s(z)
		med[c] = z[len(z)/2]
		if !eval[c] {
			prior += med[c]
			n++
		}
	}
	prior /= float64(max(n, 1))
	for i := range scored {
		s := &scored[i]
		if s.Probe || s.ToolText != 0 || s.Named || len(s.Cand) == 0 {
			continue
		}
		s.P = learn.Sigmoid(laststep.SampleLogit(m, s.Sample) - lambda*(med[s.Catalog]-prior))
	}
	return nil
}

// probeTexts returns the probe requests of the samples, in the order of
// their IDs ("probe/<i>").
func probeTexts(samples []laststep.Sample) []string {
	byID := map[int]string{}
	for _, s := range samples {
		if s.Probe {
			var i int
			fmt.Sscanf(s.ID, "probe/%d", &i)
			byID[i] = s.Text
		}
	}
	out := make([]string, len(byID))
	for i, t := range byID {
		if i < len(out) {
			out[i] = t
		}
	}
	return out
}

func round8(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 8, 64), 64)
	return v
}

func roundLinear(l *learn.Linear) {
	r := round8
	for _, xs := range [][]float64{l.Mean, l.Scale, l.W} {
		for i := range xs {
			xs[i] = r(xs[i])
		}
	}
	l.B = r(l.B)
}
