package embedding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/text"
)

// ExtendOptions are the settings of Extend that differ from
// DefaultOptions: the request pairs only, and the epochs a few thousand
// pairs need.
func ExtendOptions() Options {
	o := DefaultOptions()
	o.Sources = []string{"requests"}
	o.Train.Epochs = 20
	o.Train.Batch = 256
	return o
}

// Extend returns base with rows for the class terms (text.IsClass: "<num>",
// "<pct>", …) learned from the pairs of o's sources (by default the
// request pairs of train/data that hold a class term), every other row
// (the vocabulary's and the character n-gram buckets') kept as base has
// it. Class rows that base already has are learned again from a fresh
// start, so extending the shipped table gives the shipped table: the
// result depends only on base's other rows, the pairs and o.Train.
//
// A class term found in fewer than o.MinCount texts of the pairs gets no
// row. The training is the same symmetric InfoNCE as Build's, on the
// pairs alone, with only the class rows updated; each class row's prior
// IDF is the one its counts in the pairs' texts give.
func Extend(ctx context.Context, base *builtin.Table, o Options) (*builtin.Table, *Stats, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	t0 := time.Now()
	pairs, err := loadPairs(ctx, o, log)
	if err != nil {
		return nil, nil, err
	}
	tb, st, err := ExtendPairs(ctx, base, pairs, o)
	if st != nil {
		st.LoadTime += time.Since(t0) - st.TrainTime
	}
	return tb, st, err
}

// ExtendPairs is Extend on the given pairs.
func ExtendPairs(ctx context.Context, base *builtin.Table, pairs []Pair, o Options) (*builtin.Table, *Stats, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if base.Dim != o.Train.Dim {
		return nil, nil, fmt.Errorf("base table has %d dimensions, the options %d", base.Dim, o.Train.Dim)
	}
	st := &Stats{PairsBySource: map[string]int{}}
	t0 := time.Now()
	bags, groups := bagPairs(pairs, o.DocCap, st)
	// The vocabulary: base's terms but its class terms, and the class
	// terms the pairs hold often enough.
	count := map[string]int{}
	for _, b := range bags {
		for _, side := range [2][]string{b.q, b.d} {
			for _, t := range side {
				if text.IsClass(t) {
					count[t]++
				}
			}
		}
	}
	terms := make([]string, 0, len(base.Vocab)+len(count))
	baseRow := map[string]int{}
	for i, t := range base.Vocab {
		if !text.IsClass(t) {
			terms = append(terms, t)
			baseRow[t] = i
		}
	}
	var classes []string
	for t, c := range count {
		if c >= o.MinCount {
			classes = append(classes, t)
		}
	}
	sort.Strings(classes)
	terms = append(terms, classes...)
	sort.Strings(terms)
	v := &Vocab{Terms: terms, Texts: 2 * len(bags), index: make(map[string]int32, len(terms)),
		Buckets: base.Buckets, MinN: base.MinN, MaxN: base.MaxN, Count: make([]int, len(terms))}
	for i, t := range terms {
		v.index[t] = int32(i)
		v.Count[i] = count[t]
	}
	st.Vocab = len(terms)
	enc := make([]encoded, len(bags))
	for i, b := range bags {
		enc[i] = encoded{q: v.encode(b.q, nil), d: v.encode(b.d, nil)}
	}
	st.LoadTime = time.Since(t0)
	log.Info("pairs ready", "pairs", st.Pairs, "classes", strings.Join(classes, " "), "took", st.LoadTime.Round(time.Millisecond))
	d := base.Dim
	cfg := o.Train
	cfg.Init = func(E []float32) {
		for i, t := range terms {
			if r, ok := baseRow[t]; ok {
				copy(E[i*d:(i+1)*d], base.Row(r))
			}
		}
		for b := range base.Buckets {
			copy(E[(len(terms)+b)*d:(len(terms)+b+1)*d], base.Row(len(base.Vocab)+b))
		}
	}
	cfg.Trainable = func(row int32) bool { return int(row) < len(terms) && text.IsClass(terms[row]) }
	if cfg.Batch > len(enc) {
		return nil, nil, fmt.Errorf("%d pairs: fewer than a batch of %d", len(enc), cfg.Batch)
	}
	t1 := time.Now()
	E, loss, err := Train(ctx, v.Rows(), enc, groups, cfg)
	if err != nil {
		return nil, nil, err
	}
	st.Loss, st.TrainTime = loss, time.Since(t1)
	tb := &builtin.Table{Dim: d, Vocab: terms, Buckets: base.Buckets, MinN: base.MinN, MaxN: base.MaxN, Vectors: E,
		Prior: make([]float32, len(terms))}
	for i, t := range terms {
		if r, ok := baseRow[t]; ok {
			tb.Prior[i] = base.Prior[r]
			continue
		}
		c := float64(v.Count[i])
		tb.Prior[i] = float32(math.Log(1 + (float64(v.Texts)-c+0.5)/(c+0.5)))
	}
	return tb, st, nil
}

// A bagged pair is a pair as the terms of its two sides (text.Table,
// distinct, in order), with each term's count.
type baggedPair struct {
	q, d   []string
	qc, dc []int
}

// loadPairs loads the pairs of o's sources (o.Sources; empty: all), in
// the sources' fixed order.
func loadPairs(ctx context.Context, o Options, log *slog.Logger) ([]Pair, error) {
	var pairs []Pair
	for _, s := range Sources(o) {
		if len(o.Sources) > 0 && !slices.Contains(o.Sources, s.Name) {
			continue
		}
		ps, err := s.Load(ctx)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Name, err)
		}
		log.Info("source loaded", "source", s.Name, "pairs", len(ps))
		pairs = append(pairs, ps...)
	}
	return pairs, nil
}

// bagPairs analyses the pairs (text.Table), drops those with an empty side
// and exact duplicates, and counts them by source in st. groups are the
// pairs' sources as numbers.
func bagPairs(pairs []Pair, docCap int, st *Stats) (bags []baggedPair, groups []int) {
	groupOf := map[string]int{}
	seen := map[string]bool{}
	for _, p := range pairs {
		q, qc := bag(p.Query, 64)
		d, dc := bag(p.Doc, docCap)
		if len(q) == 0 || len(d) == 0 {
			continue
		}
		key := strings.Join(q, " ") + "\x00" + strings.Join(d, " ")
		if seen[key] {
			continue
		}
		seen[key] = true
		st.PairsBySource[p.Source]++
		bags = append(bags, baggedPair{q, d, qc, dc})
		g, ok := groupOf[p.Source]
		if !ok {
			g = len(groupOf)
			groupOf[p.Source] = g
		}
		groups = append(groups, g)
	}
	st.Pairs = len(bags)
	return bags, groups
}
