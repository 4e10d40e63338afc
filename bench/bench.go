package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	chromem "github.com/philippgille/chromem-go"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// Config says what `toolsrv bench` measures.
type Config struct {
	// Sizes are the synthetic catalog sizes (e.g. 1000, 10000, 100000).
	Sizes []int
	// Corpora are labelled corpus directories: their tools' texts make the
	// synthetic tools and their queries are the rank queries.
	Corpora []string
	// Queries is how many rank queries are timed per size and method.
	Queries int
	// LiveSize is the catalog size of the live-update test (0: skip it);
	// LiveUpdates is how many .meta files it writes.
	LiveSize, LiveUpdates int
	// UsageSize is the catalog size the usage history is measured at
	// with UsageEvents events (0 events: skip it).
	UsageSize, UsageEvents int
	// Binary is the toolsrv binary whose calls are measured (calls.go:
	// Calls calls after CallWarmup, every way in turn); "" or 0 calls:
	// skip them.
	Binary            string
	Calls, CallWarmup int
	// WorkDir holds the synthetic tool directories and index caches.
	WorkDir string
	// NewEmbedder makes a fresh embedder (one per build, so nothing is
	// shared between a cold and a warm build).
	NewEmbedder func() (embed.Embedder, error)
	// NineP, if set, measures a 9P rank transaction over a server wired to
	// the engine; it returns the latencies or why not.
	NineP func(ctx context.Context, eng *engine.Engine, queries []string) ([]time.Duration, error)
	// Logger receives warnings (slog.Default()).
	Logger *slog.Logger
	// Progress, if set, is told what runs.
	Progress func(stage string)
}

// Latency summarises timed samples.
type Latency struct {
	N    int           `json:"n"`
	P50  time.Duration `json:"p50"`
	P99  time.Duration `json:"p99"`
	Mean time.Duration `json:"mean"`
	Max  time.Duration `json:"max"`
}

// Summarize computes the percentiles of samples (nearest rank).
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	q := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Latency{N: len(s), P50: q(0.5), P99: q(0.99), Mean: sum / time.Duration(len(s)), Max: s[len(s)-1]}
}

// SizeResult holds the figures at one catalog size.
type SizeResult struct {
	Tools        int           `json:"tools"`
	Dim          int           `json:"dim"`
	WriteFiles   time.Duration `json:"writeFiles"`
	RegistryLoad time.Duration `json:"registryLoad"`
	// ColdBuild embeds every tool (empty cache); WarmBuild is a new index
	// over the cache the cold build saved (zero embedder calls expected).
	ColdBuild    time.Duration `json:"coldBuild"`
	ColdEmbedded int           `json:"coldEmbedded"`
	WarmBuild    time.Duration `json:"warmBuild"`
	WarmEmbedded int           `json:"warmEmbedded"`
	ChromemBuild time.Duration `json:"chromemBuild"`
	Rank         Latency       `json:"rank"`        // index.Rank, hybrid, text in, K=10
	RankLexical  Latency       `json:"rankLexical"` // index.Rank, BM25 only
	RankFixed    Latency       `json:"rankFixed"`   // index.Rank, hybrid without the learned last step
	// RankAll is Rank scoring every tool (index.Query.Exhaustive) instead
	// of pruning; PruneDiffers counts the queries (of Rank's) whose top 10
	// differ between the two (0: the pruning is exact).
	RankAll        Latency  `json:"rankAll"`
	PruneDiffers   int      `json:"pruneDiffers"`
	ChromemText    Latency  `json:"chromemText"`    // EmbedQuery + chromem QueryEmbedding, K=10
	ChromemVector  Latency  `json:"chromemVector"`  // chromem QueryEmbedding alone
	QueryEmbedding Latency  `json:"queryEmbedding"` // EmbedQuery alone
	NineP          *Latency `json:"ninep,omitempty"`
	NinePNote      string   `json:"ninepNote,omitempty"`
}

// LiveResult holds the live-update figures: a .meta file written, then
// seen by the registry watcher, then rankable through index.Follow.
type LiveResult struct {
	Tools    int     `json:"tools"`
	Registry Latency `json:"registry"` // write → in the registry's catalog
	Rankable Latency `json:"rankable"` // write → top hit for its unique word
	// Rebuild is the baseline: what a change costs without Follow (a
	// registry rescan plus a new index built from the cache).
	Rebuild Latency `json:"rebuild"`
	Misses  int     `json:"misses"` // not rankable within 5 s
}

// Report is the outcome of Run.
type Report struct {
	Sizes []SizeResult `json:"sizes"`
	Live  *LiveResult  `json:"live,omitempty"`
	Usage *UsageResult `json:"usage,omitempty"`
	Calls *CallResult  `json:"calls,omitempty"`
	// Embedder is the embedder's ID.
	Embedder string `json:"embedder"`
}

// textPool is the tool texts synthetic tools are made from.
type textPool struct {
	names, descs, prompts []string
	keywords              [][]string
}

func loadPool(corpora []string) (*textPool, []string, error) {
	p := &textPool{}
	var queries []string
	for _, c := range corpora {
		metas, err := filepath.Glob(filepath.Join(c, "tools", "*.meta"))
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(metas)
		for _, m := range metas {
			data, err := os.ReadFile(m)
			if err != nil {
				return nil, nil, err
			}
			var t struct {
				Description string   `json:"description"`
				Prompt      string   `json:"prompt"`
				Keywords    []string `json:"keywords"`
			}
			if json.Unmarshal(data, &t) != nil || t.Description == "" {
				continue
			}
			p.names = append(p.names, strings.TrimSuffix(filepath.Base(m), ".meta"))
			p.descs = append(p.descs, t.Description)
			p.prompts = append(p.prompts, t.Prompt)
			p.keywords = append(p.keywords, t.Keywords)
		}
		corpus, err := eval.LoadCorpus(c)
		if err != nil {
			return nil, nil, err
		}
		for _, q := range corpus.Queries {
			queries = append(queries, q.Text)
		}
	}
	if len(p.descs) == 0 {
		return nil, nil, errors.New("no tool texts found in the corpora (want DIR/tools/*.meta with descriptions)")
	}
	if len(queries) == 0 {
		return nil, nil, errors.New("no queries found in the corpora (want DIR/queries.jsonl)")
	}
	return p, queries, nil
}

// synthName makes the i-th synthetic tool name from a pool name.
func synthName(base string, i int) string {
	var b strings.Builder
	for _, r := range base {
		if r < 128 && (r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
		if b.Len() >= 100 {
			break
		}
	}
	if b.Len() == 0 || !isAlnum(b.String()[0]) {
		return fmt.Sprintf("t%d-%s", i, b.String())
	}
	return fmt.Sprintf("%s-%d", b.String(), i)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// writeSynthetic writes n .meta files into dir. Tool i takes the name and
// description of pool entry i mod P and the prompt of another entry each
// time the pool wraps, so documents stay distinct past the pool's size.
func writeSynthetic(dir string, n int, p *textPool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	P := len(p.descs)
	for i := 0; i < n; i++ {
		j := i % P
		k := (j + 7919*(i/P)) % P
		meta := map[string]any{
			"description": p.descs[j],
			"prompt":      p.prompts[k],
			"cmd":         "cat",
		}
		if len(p.keywords[j]) > 0 {
			meta["keywords"] = p.keywords[j]
		}
		data, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, synthName(p.names[j], i)+".meta"), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// recorder wraps an embedder and keeps every document vector it makes, so
// chromem can be measured on exactly the vectors the index holds. It counts
// embedded documents too.
type recorder struct {
	embed.Embedder
	mu     sync.Mutex
	vecs   [][]float32
	count  int
	fitted embed.Embedder // the fitted embedder queries go through
}

func (r *recorder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	v, err := r.Embedder.EmbedDocuments(ctx, texts)
	r.note(v)
	return v, err
}

func (r *recorder) note(v [][]float32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count += len(v)
	r.vecs = append(r.vecs, v...)
}

func (r *recorder) embedded() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// awareRecorder is a recorder over a catalog-aware embedder: the index fits
// it and embeds through the fitted one, which is wrapped too.
type awareRecorder struct {
	*recorder
	aware embed.CatalogAware
}

func (a *awareRecorder) Fit(ctx context.Context, docs []string) (embed.Fitted, error) {
	f, err := a.aware.Fit(ctx, docs)
	if err != nil {
		return nil, err
	}
	return a.wrapFitted(f), nil
}

func (a *awareRecorder) Restore(state []byte) (embed.Fitted, error) {
	f, err := a.aware.Restore(state)
	if err != nil {
		return nil, err
	}
	return a.wrapFitted(f), nil
}

func (a *awareRecorder) wrapFitted(f embed.Fitted) embed.Fitted {
	a.mu.Lock()
	a.fitted = f
	a.vecs = nil // a (re)fit replaces every vector
	a.mu.Unlock()
	return &fittedRecorder{Fitted: f, rec: a.recorder}
}

type fittedRecorder struct {
	embed.Fitted
	rec *recorder
}

func (f *fittedRecorder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	v, err := f.Fitted.EmbedDocuments(ctx, texts)
	f.rec.note(v)
	return v, err
}

func record(e embed.Embedder) (embed.Embedder, *recorder) {
	r := &recorder{Embedder: e}
	if a, ok := e.(embed.CatalogAware); ok {
		return &awareRecorder{recorder: r, aware: a}, r
	}
	return r, r
}

func (r *recorder) queryEmbedder() embed.Embedder {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fitted != nil {
		return r.fitted
	}
	return r.Embedder
}

// Run measures every size, then the live update.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Queries <= 0 {
		cfg.Queries = 200
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	pool, queries, err := loadPool(cfg.Corpora)
	if err != nil {
		return nil, err
	}
	probe, err := cfg.NewEmbedder()
	if err != nil {
		return nil, err
	}
	rep := &Report{Embedder: probe.ID()}
	if cfg.Binary != "" && cfg.Calls > 0 {
		progress(fmt.Sprintf("calls: %d after %d", cfg.Calls, cfg.CallWarmup))
		cr, err := runCalls(ctx, cfg)
		if err != nil {
			return rep, fmt.Errorf("calls: %w", err)
		}
		rep.Calls = cr
	}
	for _, n := range cfg.Sizes {
		progress(fmt.Sprintf("%d tools", n))
		sr, err := runSize(ctx, cfg, n, pool, queries, progress)
		if err != nil {
			return rep, fmt.Errorf("%d tools: %w", n, err)
		}
		rep.Sizes = append(rep.Sizes, *sr)
	}
	if cfg.LiveSize > 0 && cfg.LiveUpdates > 0 {
		progress(fmt.Sprintf("live update at %d tools", cfg.LiveSize))
		lr, err := runLive(ctx, cfg, pool)
		if err != nil {
			return rep, fmt.Errorf("live update: %w", err)
		}
		rep.Live = lr
	}
	if cfg.UsageSize > 0 && cfg.UsageEvents > 0 {
		progress(fmt.Sprintf("usage history at %d tools, %d events", cfg.UsageSize, cfg.UsageEvents))
		ur, err := runUsage(ctx, cfg, pool, queries, progress)
		if err != nil {
			return rep, fmt.Errorf("usage: %w", err)
		}
		rep.Usage = ur
	}
	return rep, nil
}

func runSize(ctx context.Context, cfg Config, n int, pool *textPool, queries []string, progress func(string)) (*SizeResult, error) {
	sr := &SizeResult{Tools: n}
	dir := filepath.Join(cfg.WorkDir, fmt.Sprintf("tools-%d", n))
	cache := filepath.Join(cfg.WorkDir, fmt.Sprintf("cache-%d", n))
	os.RemoveAll(dir)
	os.RemoveAll(cache)
	defer os.RemoveAll(dir)
	defer os.RemoveAll(cache)

	progress(fmt.Sprintf("%d tools: writing .meta files", n))
	t0 := time.Now()
	if err := writeSynthetic(dir, n, pool); err != nil {
		return nil, err
	}
	sr.WriteFiles = time.Since(t0)

	progress(fmt.Sprintf("%d tools: loading the registry", n))
	runtime.GC()
	t0 = time.Now()
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: cfg.Logger})
	if err := reg.Load(ctx); err != nil {
		return nil, err
	}
	sr.RegistryLoad = time.Since(t0)
	cat := reg.Catalog()
	if len(cat.Tools) != n {
		return nil, fmt.Errorf("registry holds %d tools, want %d (%d problems, first: %v)", len(cat.Tools), n, len(cat.Problems), firstProblem(cat))
	}

	progress(fmt.Sprintf("%d tools: cold index build", n))
	base, err := cfg.NewEmbedder()
	if err != nil {
		return nil, err
	}
	emb, rec := record(base)
	runtime.GC()
	t0 = time.Now()
	ix := index.New(emb, index.Options{CacheDir: cache, Logger: cfg.Logger})
	if err := ix.Sync(ctx, cat); err != nil {
		return nil, fmt.Errorf("cold build: %w", err)
	}
	sr.ColdBuild = time.Since(t0)
	sr.ColdEmbedded = rec.embedded()
	sr.Dim = ix.Stats().Dim
	ix = nil

	// Warm: what a restart costs, the whole engine (registry, index from
	// its cache, thresholds), as every front end builds it.
	progress(fmt.Sprintf("%d tools: warm start", n))
	base2, err := cfg.NewEmbedder()
	if err != nil {
		return nil, err
	}
	emb2, rec2 := record(base2)
	runtime.GC()
	t0 = time.Now()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, Embedder: emb2, CacheDir: cache, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("warm start: %w", err)
	}
	defer eng.Close()
	sr.WarmBuild = time.Since(t0)
	sr.WarmEmbedded = rec2.embedded()
	ix = eng.Index()

	qs := make([]string, cfg.Queries)
	for i := range qs {
		qs[i] = queries[(i*104729)%len(queries)]
	}
	progress(fmt.Sprintf("%d tools: rank latency", n))
	if sr.Rank, sr.RankAll, sr.PruneDiffers, err = timePruning(ctx, ix, qs); err != nil {
		return nil, err
	}
	for _, m := range []struct {
		mode  index.Mode
		fixed bool
		out   *Latency
	}{{index.Lexical, false, &sr.RankLexical}, {index.Hybrid, true, &sr.RankFixed}} {
		lat, err := timeRank(ctx, ix, qs, m.mode, m.fixed)
		if err != nil {
			return nil, err
		}
		*m.out = lat
	}

	if cfg.NineP != nil {
		progress(fmt.Sprintf("%d tools: 9P rank transactions", n))
		runtime.GC()
		lat, err := cfg.NineP(ctx, eng, qs)
		if err != nil {
			sr.NinePNote = err.Error()
		} else {
			l := Summarize(lat)
			sr.NineP = &l
		}
	} else {
		sr.NinePNote = "9P server not available in this build"
	}

	progress(fmt.Sprintf("%d tools: chromem baseline", n))
	qe := rec.queryEmbedder()
	if len(rec.vecs) != n {
		sr.NinePNote = ""
		return nil, fmt.Errorf("recorded %d vectors for %d tools: cannot build the chromem baseline on the same vectors", len(rec.vecs), n)
	}
	runtime.GC()
	t0 = time.Now()
	col, err := chromemCollection(ctx, rec.vecs)
	if err != nil {
		return nil, err
	}
	sr.ChromemBuild = time.Since(t0)
	var text, vec, qemb []time.Duration
	for i, q := range withWarmup(qs) {
		s := time.Now()
		v, err := qe.EmbedQuery(ctx, q)
		if err != nil {
			return nil, err
		}
		m := time.Now()
		if _, err := col.QueryEmbedding(ctx, v, min(10, col.Count()), nil, nil); err != nil {
			return nil, fmt.Errorf("chromem: %w", err)
		}
		e := time.Now()
		if i >= warmups(len(qs)) { // the first five warm up
			text = append(text, e.Sub(s))
			vec = append(vec, e.Sub(m))
			qemb = append(qemb, m.Sub(s))
		}
	}
	sr.ChromemText, sr.ChromemVector, sr.QueryEmbedding = Summarize(text), Summarize(vec), Summarize(qemb)
	col = nil

	return sr, nil
}

// withWarmup is qs after its first few (warmups), which warm up caches
// and are not timed.
func withWarmup(qs []string) []string {
	w := warmups(len(qs))
	return append(qs[:w:w], qs...)
}

// warmups is how many queries of n withWarmup puts first.
func warmups(n int) int { return min(5, n) }

func firstProblem(cat *registry.Catalog) string {
	if len(cat.Problems) == 0 {
		return "none"
	}
	return cat.Problems[0].Error()
}

func timeRank(ctx context.Context, ix *index.Index, qs []string, mode index.Mode, fixed bool) (Latency, error) {
	ts, _, err := rankEach(ctx, ix, qs, index.Query{K: 10, Mode: mode, NoLastStep: fixed})
	return Summarize(ts), err
}

// timePruning times the hybrid top-10 ranking of every query pruned (the
// default), then scoring every tool (index.Query.Exhaustive), and counts
// the queries whose hits differ (names, scores and their parts, order).
// Two passes, not one alternating: a ranking that scores every tool reads
// all the float32 vectors, which leaves the next pruned one's caches cold.
func timePruning(ctx context.Context, ix *index.Index, qs []string) (pruned, all Latency, differ int, err error) {
	pt, ph, err := rankEach(ctx, ix, qs, index.Query{K: 10})
	if err != nil {
		return pruned, all, 0, err
	}
	at, ah, err := rankEach(ctx, ix, qs, index.Query{K: 10, Exhaustive: true})
	if err != nil {
		return pruned, all, 0, err
	}
	for i := range ph {
		if !slices.Equal(ph[i], ah[i]) {
			differ++
		}
	}
	return Summarize(pt), Summarize(at), differ, nil
}

// rankEach ranks each query of qs with q's options, after the first few
// (withWarmup) ranked once more untimed, and returns each timed ranking's
// time and hits. A ranking that needs the embedder (any mode but Lexical)
// fails if it is degraded.
func rankEach(ctx context.Context, ix *index.Index, qs []string, q index.Query) ([]time.Duration, [][]index.Hit, error) {
	var ts []time.Duration
	var hits [][]index.Hit
	runtime.GC()
	for i, text := range withWarmup(qs) {
		q.Text = text
		s := time.Now()
		r, err := ix.Rank(ctx, q)
		d := time.Since(s)
		if err != nil {
			return nil, nil, err
		}
		if q.Mode != index.Lexical && r.Degraded {
			return nil, nil, fmt.Errorf("ranking is degraded (%s): the benchmark needs the embedder working", r.Reason)
		}
		if i >= warmups(len(qs)) {
			ts = append(ts, d)
			hits = append(hits, r.Hits)
		}
	}
	return ts, hits, nil
}

func chromemCollection(ctx context.Context, vecs [][]float32) (*chromem.Collection, error) {
	db := chromem.NewDB()
	never := func(context.Context, string) ([]float32, error) {
		return nil, errors.New("bench: chromem must not embed; vectors are precomputed")
	}
	col, err := db.CreateCollection("bench", nil, never)
	if err != nil {
		return nil, err
	}
	docs := make([]chromem.Document, len(vecs))
	for i, v := range vecs {
		docs[i] = chromem.Document{ID: fmt.Sprintf("d%d", i), Content: " ", Embedding: append([]float32(nil), v...)}
	}
	// Add in chunks: AddDocuments starts one goroutine per document.
	for i := 0; i < len(docs); i += 1000 {
		if err := col.AddDocuments(ctx, docs[i:min(i+1000, len(docs))], runtime.NumCPU()); err != nil {
			return nil, fmt.Errorf("chromem: %w", err)
		}
	}
	return col, nil
}
