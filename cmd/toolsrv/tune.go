package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/toolsrv/toolsrv/bench/tune"
	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/thresholds"
)

const tuneAbout = `Sweeps the inclusion thresholds (minimum score, relative cut, maximum
count) on labelled queries and writes the chosen ones for the embedder.

Each corpus is a directory with tools/*.meta and queries.jsonl lines
{"id","query","relevant":[names]}; a directory holding several corpora may be
given instead. A fixed hash of each query's id keeps --holdout of every corpus
out of the sweep (figures are reported on that part) and turns --abstain of
the queries into abstention queries: their relevant tools are filtered out of
the ranking and the right answer is "no tool fits".

Objective: the highest macro recall of the offered tools on answerable
queries, with at most --max-offered tools offered on average and at least
--min-abstain of the abstention queries answered "no tool fits".
The same sweep on lexical-only rankings gives the levels used when the
embedder fails (degraded rankings). Thresholds hold for the embedder, model
and --lexical-weight they were tuned with. Indexes are built in memory
(--cache and --no-cache do not apply).`

// runTune implements `toolsrv tune`.
func runTune(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "tune", "tune --corpus DIR [--corpus DIR ...] [DIR...] [flags]\n       toolsrv tune --show [--embedder "+embedderChoice()+"] [--json]", tuneAbout)
	tf := &tuneFlags{}
	fs.Var(&tf.corpora, "corpus", "labelled corpus directory, or a directory of corpora (repeatable)")
	ef := addEngineFlags(fs)
	tf.add(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if err := ef.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if tf.show {
		if fs.NArg() != 0 {
			return usageError(fs, "--show takes no arguments")
		}
		return showThresholds(env, ef, tf.jsonOut)
	}
	tf.corpora = append(tf.corpora, fs.Args()...)
	if msg := tf.check(); msg != "" {
		return usageError(fs, "%s", msg)
	}
	dirs, err := eval.FindCorpora(tf.corpora)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	emb, err := ef.open(env)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	split := tune.Split{HeldOut: tf.holdout, Abstain: tf.abstain}
	obj := tune.Objective{MaxOffered: tf.maxOffered, MinAbstain: tf.minAbstain, Accuracy: tf.objective == "accuracy", Tolerance: tf.tolerance}
	if tf.objective != "accuracy" && tf.objective != "recall" {
		fmt.Fprintf(env.stderr, "toolsrv tune: --objective %q: use accuracy or recall\n", tf.objective)
		return 2
	}
	start := time.Now()

	hybrid, lexical, err := rankCorpora(ctx, env, emb, dirs, tune.RankOptions{Split: split, Lexical: !tf.noDegraded, LexicalWeight: ef.alpha, NoLastStep: tf.noLearned})
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	tn := sweepThresholds(env, tf, obj, hybrid, lexical)
	file := tn.file(emb.ID(), args, obj, ef.alpha, dirs)
	path, err := tf.thresholdsPath(env, emb.ID())
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	svg := tf.plotPath
	if svg == "" && path != "" {
		svg = strings.TrimSuffix(path, filepath.Ext(path)) + ".svg"
	}
	title := fmt.Sprintf("toolsrv tune: %s, %d corpora, %d queries (tuning part)", emb.ID(), len(dirs), countTuning(hybrid))
	if err := tf.write(path, svg, file, tn.res, title); err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	if tf.jsonOut {
		return printTuneJSON(env, tf, tn, file, path, svg)
	}
	fmt.Fprintf(env.stdout, "embedder %s (lexical weight %.2f), %d corpora, %d queries ranked in %v\n", emb.ID(), ef.alpha, len(dirs), len(hybrid), time.Since(start).Round(time.Millisecond))
	printTuneReport(env.stdout, tf, tn, obj, split, path, svg)
	return 0
}

// tuneFlags are tune's own flags (the embedder's are engineFlags).
type tuneFlags struct {
	corpora                                             dirList
	maxOffered, minAbstain, tolerance, abstain, holdout float64
	noLearned, hardCap, dry, jsonOut, noDegraded, show  bool
	objective, out, plotPath, curves                    string
}

func (tf *tuneFlags) add(fs *flag.FlagSet) {
	fs.Float64Var(&tf.maxOffered, "max-offered", 3, "objective: at most this many tools offered per answerable query (macro average)")
	fs.Float64Var(&tf.minAbstain, "min-abstain", 0, "objective: at least this share of abstention queries answered \"no tool fits\"")
	fs.Float64Var(&tf.tolerance, "tolerance", 0, "accuracy objective: of the settings within this of the best accuracy that hit no less often than it, take the one offering fewest tools (saying \"no tool fits\" to more answerable queries also offers fewer tools: that is no saving)")
	fs.BoolVar(&tf.noLearned, "no-learned", false, "tune for rankings without the learned last step (the fixed fusion)")
	fs.BoolVar(&tf.hardCap, "hard-cap", true, "with learned scores: no single answer offers more than --max-offered tools (so the average holds on any catalog, not only the tuning ones)")
	fs.StringVar(&tf.objective, "objective", "accuracy", "accuracy: the most queries decided right (a relevant tool offered, or \"no tool fits\" when none serves them); recall: the most relevant tools offered (the version 1 objective)")
	fs.Float64Var(&tf.abstain, "abstain", 0.2, "share of queries turned into abstention queries")
	fs.Float64Var(&tf.holdout, "holdout", 0.3, "share of each corpus's queries kept out of the sweep")
	fs.StringVar(&tf.out, "out", "", "thresholds file to write (default: the per-embedder file in the user config dir)")
	fs.StringVar(&tf.plotPath, "plot", "", "SVG picture of the curves (default: the thresholds file with .svg; written even with --dry-run)")
	fs.StringVar(&tf.curves, "curves", "", "also write the swept points as JSON to this file (go run ./bench/cmd/tuneplot draws them as a PNG)")
	fs.BoolVar(&tf.dry, "dry-run", false, "print the table but write nothing")
	fs.BoolVar(&tf.jsonOut, "json", false, "print the result as JSON")
	fs.BoolVar(&tf.noDegraded, "no-degraded", false, "do not tune separate levels for lexical-only (degraded) rankings")
	fs.BoolVar(&tf.show, "show", false, "print the thresholds in effect for --embedder and where they come from, then exit (with --json: as a thresholds file, which --thresholds takes as it is)")
}

// check reports a bad flag of a sweep (a usage error), or "".
func (tf *tuneFlags) check() string {
	if len(tf.corpora) == 0 {
		return "give at least one --corpus DIR"
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"abstain", tf.abstain}, {"holdout", tf.holdout}, {"min-abstain", tf.minAbstain}} {
		if v.v < 0 || v.v > 1 {
			return fmt.Sprintf("--%s %v must be within [0,1]", v.name, v.v)
		}
	}
	if tf.maxOffered <= 0 {
		return fmt.Sprintf("--max-offered %v: want a positive number of tools", tf.maxOffered)
	}
	return ""
}

// tuned is what the sweeps chose.
type tuned struct {
	res tune.Result
	// deg is the sweep on lexical-only rankings (nil with --no-degraded).
	deg *tune.Result
	// learned says the rankings had learned scores (and the sweep their
	// levels); coldOffers counts the cold offers coldMin was chosen on.
	learned    bool
	coldOffers int
}

// sweepThresholds sweeps the levels on the hybrid rankings and, unless
// --no-degraded, on the lexical-only ones, with progress bars.
func sweepThresholds(env *cliEnv, tf *tuneFlags, obj tune.Objective, hybrid, lexical []tune.Query) tuned {
	grid := tune.DefaultGrid()
	learnedScores := len(hybrid) > 0 && hybrid[0].Answerable != nil
	if learnedScores {
		grid = tune.LearnedGrid()
		if tf.hardCap {
			var mts []int
			for _, mt := range grid.MaxTools {
				if float64(mt) <= tf.maxOffered {
					mts = append(mts, mt)
				}
			}
			if len(mts) > 0 {
				grid.MaxTools = mts
			}
		}
	}
	bar := newBar(env, len(grid.Min)*len(grid.Relative)*len(grid.MaxTools)*max(1, len(grid.MinAnswerable))*max(1, len(grid.Mass)), "sweeping")
	res := tune.Sweep(hybrid, grid, obj, bar.step)
	bar.done()
	coldMin, coldOffers := tune.ColdMin(hybrid, res.Chosen.Levels)
	res.Chosen.Levels.ColdMin = coldMin
	var deg *tune.Result
	if !tf.noDegraded {
		dg := tune.DefaultGrid()
		bar := newBar(env, len(dg.Min)*len(dg.Relative)*len(dg.MaxTools), "sweeping (lexical only)")
		r := tune.Sweep(lexical, dg, obj, bar.step)
		bar.done()
		r.Chosen.Levels.ColdMin, _ = tune.ColdMin(lexical, r.Chosen.Levels)
		deg = &r
	}
	return tuned{res: res, deg: deg, learned: learnedScores, coldOffers: coldOffers}
}

// file is the thresholds file of what was chosen for embedderID, tuned by
// `toolsrv tune args` on the corpora in dirs.
func (tn tuned) file(embedderID string, args []string, obj tune.Objective, lexicalWeight float64, dirs []string) *thresholds.File {
	names := make([]string, 0, len(dirs))
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	file := &thresholds.File{
		Format:   thresholds.Format,
		Version:  thresholds.Version,
		Embedder: embedderID,
		Policy:   thresholds.Policy{Levels: tn.res.Chosen.Levels},
		Scores:   tunedScores(tn.learned),
		Tuning: &thresholds.Tuning{
			Date:          time.Now().UTC().Truncate(time.Second),
			Command:       "toolsrv tune " + strings.Join(args, " "),
			Objective:     obj.String(),
			Corpora:       names,
			LexicalWeight: lexicalWeight,
			HeldOut:       tn.res.HeldOut,
		},
	}
	if tn.deg != nil {
		l := tn.deg.Chosen.Levels
		file.Policy.Degraded = &l
	}
	return file
}

// thresholdsPath is the thresholds file to write: --out, else (unless
// --dry-run) the per-embedder file, in a directory made private.
func (tf *tuneFlags) thresholdsPath(env *cliEnv, embedderID string) (string, error) {
	path := tf.out
	if path == "" && !tf.dry {
		var err error
		if path, err = thresholds.DefaultPath(embedderID); err != nil {
			return "", err
		}
		// toolsrv's own directory, as its caches: private, or refused.
		if err := fileio.PrivateDir(filepath.Dir(path), os.Geteuid(), logger(env)); err != nil {
			return "", fmt.Errorf("the thresholds directory: %w (pass --out FILE)", err)
		}
	}
	return path, nil
}

// write writes the thresholds file (unless --dry-run), the plot and the
// curves, each where it was asked for.
func (tf *tuneFlags) write(path, svg string, file *thresholds.File, res tune.Result, title string) error {
	if !tf.dry {
		if err := thresholds.WriteFile(path, file); err != nil {
			return err
		}
	}
	if svg != "" {
		if err := writePlot(svg, res, title); err != nil {
			return err
		}
	}
	if tf.curves != "" {
		if err := writeCurves(tf.curves, res, title); err != nil {
			return err
		}
	}
	return nil
}

// printTuneJSON prints the result of a sweep as JSON.
func printTuneJSON(env *cliEnv, tf *tuneFlags, tn tuned, file *thresholds.File, path, svg string) int {
	type jres struct {
		File     *thresholds.File              `json:"thresholds"`
		Path     string                        `json:"path,omitempty"`
		Plot     string                        `json:"plot,omitempty"`
		Feasible bool                          `json:"feasible"`
		Tuning   map[string]thresholds.Figures `json:"tuning"`
		Degraded map[string]thresholds.Figures `json:"degradedHeldOut,omitempty"`
	}
	j := jres{File: file, Feasible: tn.res.Feasible, Tuning: tn.res.Tuning}
	if !tf.dry {
		j.Path, j.Plot = path, svg
	}
	if tn.deg != nil {
		j.Degraded = tn.deg.HeldOut
	}
	if err := writeJSON(env.stdout, j); err != nil {
		return 1
	}
	return 0
}

// printTuneReport prints the result of a sweep for people, after its
// first line: the objective, the chosen levels and the figures.
func printTuneReport(w io.Writer, tf *tuneFlags, tn tuned, obj tune.Objective, split tune.Split, path, svg string) {
	res, deg := tn.res, tn.deg
	fmt.Fprintf(w, "objective: %s\n", obj)
	if !res.Feasible {
		fmt.Fprintf(w, "NOTE: no setting met both constraints; the fallback objective was used\n")
	}
	l := res.Chosen.Levels
	fmt.Fprintf(w, "\nchosen: min %.2f, coldMin %.2f, relative %.2f, maxTools %d", l.Min, l.ColdMin, l.Relative, l.MaxTools)
	if tn.learned {
		fmt.Fprintf(w, ", minAnswerable %.2f, mass %.2f, evidence %.2f (learned scores, %s)", l.MinAnswerable, l.Mass, l.Evidence, tunedScores(true))
	}
	fmt.Fprintf(w, "\ncoldMin: the lowest score at which the offered tools of a fixed %.0f%% of each corpus, treated as cold, are relevant at least half the time (%d such offers on the tuning part)\n", 100*tune.ColdShare, tn.coldOffers)
	fmt.Fprintf(w, "\nheld-out part (%.0f%% of each corpus), chosen thresholds:\n%s", 100*split.HeldOut, tune.Table(res.HeldOut))
	fmt.Fprintf(w, "\ntuning part (macro): hit %.3f, recall %.3f, offered %.2f, abstention recall %.3f, precision %.3f, accuracy %.3f\n",
		res.Chosen.Macro.Hit, res.Chosen.Macro.Recall, res.Chosen.Macro.Offered, res.Chosen.Macro.AbstainRecall, res.Chosen.Macro.AbstainPrecision, res.Chosen.Macro.Accuracy)
	if deg != nil {
		d := deg.Chosen.Levels
		fmt.Fprintf(w, "\ndegraded (lexical only): min %.2f, coldMin %.2f, relative %.2f, maxTools %d%s\n", d.Min, d.ColdMin, d.Relative, d.MaxTools, map[bool]string{false: " (fallback objective)", true: ""}[deg.Feasible])
		fmt.Fprintf(w, "held-out part, lexical-only rankings:\n%s", tune.Table(deg.HeldOut))
	}
	if !tf.dry {
		fmt.Fprintf(w, "\nwrote %s\n", path)
	}
	if svg != "" {
		fmt.Fprintf(w, "plot  %s\n", svg)
	}
}

func countTuning(qs []tune.Query) int {
	n := 0
	for _, q := range qs {
		if !q.HeldOut {
			n++
		}
	}
	return n
}

func writePlot(path string, res tune.Result, title string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	if err := tune.WriteSVG(f, res, title); err != nil {
		f.Close()
		return fmt.Errorf("drawing the plot: %w", err)
	}
	return f.Close()
}

// writeCurves writes the sweep (every point, the chosen one) as JSON, for
// bench/cmd/tuneplot.
func writeCurves(path string, res tune.Result, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the curves: %w", err)
	}
	if err := writeJSON(f, tune.Curves{Title: title, Result: res}); err != nil {
		f.Close()
		return fmt.Errorf("writing the curves: %w", err)
	}
	return f.Close()
}

// showThresholds prints the policy thresholds.Load picks for the embedder.
func showThresholds(env *cliEnv, ef *engineFlags, asJSON bool) int {
	emb, err := ef.open(env)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	pol, src, err := thresholds.Load(emb.ID(), thresholds.LoadOptions{Getenv: env.getenv})
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv tune: %v\n", err)
		return 1
	}
	if asJSON {
		if err := writeJSON(env.stdout, shownThresholds(emb.ID(), pol, src)); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintf(env.stdout, "embedder %s\nsource   %s\n", emb.ID(), src)
	if src.Warning != "" {
		fmt.Fprintf(env.stdout, "warning  %s\n", src.Warning)
	}
	show := func(name string, l thresholds.Levels) {
		fmt.Fprintf(env.stdout, "%-8s min %.2f, coldMin %.2f, relative %.2f, maxTools %d", name, l.Min, l.ColdMin, l.Relative, l.MaxTools)
		if l.MinAnswerable > 0 || l.Mass > 0 {
			fmt.Fprintf(env.stdout, ", minAnswerable %.2f, mass %.2f, evidence %.2f", l.MinAnswerable, l.Mass, l.Evidence)
		}
		fmt.Fprintln(env.stdout)
	}
	show("policy", pol.Levels)
	if pol.Degraded != nil {
		show("degraded", *pol.Degraded)
	}
	if src.File != nil && src.File.Tuning != nil {
		fmt.Fprintf(env.stdout, "tuned    %s on %s\n", src.File.Tuning.Date.Format(time.RFC3339), strings.Join(src.File.Tuning.Corpora, ", "))
	}
	if src.File != nil {
		scores := src.File.Scores
		if scores == "" {
			scores = "fixed fusion"
		}
		fmt.Fprintf(env.stdout, "scores   %s (rankings use %s)\n", scores, map[bool]string{true: learnedID(emb.ID(), false), false: "fixed fusion"}[learnedID(emb.ID(), false) != ""])
	}
	return 0
}

// shownThresholds is what tune --show --json prints: the thresholds in
// effect for embedderID as a thresholds file (so that, saved as it is, it
// is a file --thresholds takes), with where they were found.
func shownThresholds(embedderID string, pol thresholds.Policy, src thresholds.Source) *thresholds.File {
	f := &thresholds.File{Format: thresholds.Format, Version: thresholds.Version}
	if src.File != nil {
		*f = *src.File
	}
	// The embedder they are in effect for: shipped thresholds tuned for
	// another model of the family are used for this one (Warning says so).
	f.Embedder, f.Policy = embedderID, pol
	f.Source, f.Path, f.Warning = src.Kind, src.Path, src.Warning
	return f
}

// rankCorpora loads the corpora and ranks their queries for tuning, with a
// progress bar on a terminal.
func rankCorpora(ctx context.Context, env *cliEnv, emb embed.Embedder, dirs []string, o tune.RankOptions) (hyb, lex []tune.Query, err error) {
	var all []*eval.Corpus
	total := 0
	for _, d := range dirs {
		c, err := eval.LoadCorpus(d)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, c)
		total += len(c.Queries)
	}
	bar := newBar(env, total, "ranking")
	defer bar.done()
	o.Logger, o.Step = logger(env), func() { bar.step(1, 0) }
	return tune.Rank(ctx, emb, all, o)
}

// bar is a progress bar on a terminal, silent otherwise.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(env *cliEnv, total int, what string) *bar {
	f := env.stderrTerminal()
	if f == nil || total <= 0 {
		return &bar{}
	}
	return &bar{pb: progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())}
}

// step advances by one; the arguments fit tune.Sweep's progress callback.
func (b *bar) step(int, int) {
	if b.pb != nil {
		b.pb.Add(1)
	}
}

func (b *bar) done() {
	if b.pb != nil {
		b.pb.Finish()
	}
}

// tunedScores is the ID of the learned last step the rankings used ("" when
// they used the fixed fusion).
func tunedScores(used bool) string {
	if !used {
		return ""
	}
	m, err := learn.Default()
	if err != nil {
		return ""
	}
	return m.ID
}
