package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/registry"
)

// Options configure an Index. The zero value is usable.
type Options struct {
	// CacheDir holds the persisted index files of this embedder; ""
	// means DefaultCacheDir(emb.ID()). NoCache keeps everything in memory.
	CacheDir string
	NoCache  bool
	// Logger receives rebuild, cache and embedder events (slog.Default()).
	Logger *slog.Logger
	// LexicalWeight is α in hybrid = α·lexical + (1−α)·dense; 0 means 0.5.
	LexicalWeight float64
	// ContextWeight is how much the conversation context counts next to the
	// message itself, lexically and densely; 0 means 0.3.
	ContextWeight float64
	// RefitShare: a CatalogAware embedder is fitted again when more than
	// this share of the catalog was embedded since the last fit; 0 means 0.25.
	RefitShare float64
	// BatchSize is the number of documents per EmbedDocuments call (64);
	// Workers is how many calls run at once (GOMAXPROCS, at most 4).
	BatchSize int
	Workers   int
	// Progress, if set, is called while documents are embedded.
	Progress func(done, total int)
	// SaveDelay is how long Follow waits for quiet before saving (2 s).
	SaveDelay time.Duration
	// RetryEvery is how often Follow retries documents left without a
	// vector because the embedder failed (30 s).
	RetryEvery time.Duration
	// LastStep is the learned last step (nil: learn.Default()); NoLastStep
	// turns it off (rankings are the fixed fusion). See laststep.go.
	LastStep   *learn.Model
	NoLastStep bool
}

// Index ranks the tools of a catalog. It is safe for concurrent use: Rank
// may run while Sync or Follow update the index.
type Index struct {
	base  embed.Embedder
	aware embed.CatalogAware // base, if it adapts to the catalog
	opts  Options
	log   *slog.Logger

	upd     sync.Mutex // serialises updates and saves; guards the fields below
	loaded  bool       // the cache was looked at
	path    string     // the cache file ("" without a cache)
	state   []byte     // fitted embedder state
	fitDocs int
	drift   int
	dirty   bool

	mu sync.RWMutex // guards v
	v  *view

	cachePath atomic.Pointer[string] // ix.path, readable without upd

	// The answerability's calibration (probes.go): probes is read by Rank;
	// probeDrift (tools changed since the probes were ranked) and
	// cachedProbes (what the cache file held) are guarded by upd.
	probes       atomic.Pointer[probeState]
	probeDrift   int
	cachedProbes *probeState

	brk breaker

	scratch sync.Pool // *rankScratch
}

// view is what Rank reads: the documents, their vectors and the lexicon.
// Incremental updates change it in place under Index.mu; rebuilds replace it.
type view struct {
	emb    embed.Embedder // the embedder for queries (fitted, or the base)
	st     *store         // nil until the first vector
	dim    int
	slots  []slot
	free   []int
	byName map[string]int
	mat    []float32 // slot*dim, unit vectors
	qmat   []int8    // the same rows quantised (see quant.go)
	qscale []float32 // by slot: row ≈ qmat row · qscale
	colSum []float64 // sum of the live rows (the query's background)
	nvec   int       // live rows with a vector
	// exactOnly disables the int8 scan (tests compare both paths).
	exactOnly bool
	lex       *lexicon
	short     shortTerms // per-field terms for the learned last step
	rev       uint64
	gen       uint64 // bumped by every in-place change (slot scores go stale)
	missing   int    // live documents without a vector
	err       error  // why they lack one
}

type slot struct {
	name, hash string
	live, vec  bool
	doc        *document // kept only while the vector is missing, to retry
}

func newView(emb embed.Embedder, st *store) *view {
	v := &view{emb: emb, st: st, byName: map[string]int{}, lex: newLexicon()}
	if st != nil {
		v.dim = st.dim
	}
	return v
}

// New makes an empty index over emb. Call Sync to build it.
func New(emb embed.Embedder, opts Options) *Index {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LexicalWeight <= 0 || opts.LexicalWeight > 1 {
		opts.LexicalWeight = 0.5
	}
	if opts.ContextWeight <= 0 {
		opts.ContextWeight = 0.3
	}
	if opts.RefitShare <= 0 {
		opts.RefitShare = 0.25
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Workers <= 0 {
		opts.Workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if opts.SaveDelay <= 0 {
		opts.SaveDelay = 2 * time.Second
	}
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = 30 * time.Second
	}
	ix := &Index{base: emb, opts: opts, log: opts.Logger}
	ix.aware, _ = emb.(embed.CatalogAware)
	return ix
}

// Sync brings the index in line with a catalog snapshot: documents whose
// text changed are embedded again, new ones are added, vanished ones are
// removed, and vectors are reused from memory or the cache file. The index
// is saved when anything changed. An error means some tools could not be
// embedded (the index still answers, lexically for those); Rank says so.
func (ix *Index) Sync(ctx context.Context, cat *registry.Catalog) error {
	ix.upd.Lock()
	defer ix.upd.Unlock()
	err := ix.updateLocked(ctx, catalogSource(cat), nil, nil, true)
	if cerr := ix.calibrateLocked(ctx); cerr != nil {
		ix.log.Warn("index: the answerability is not calibrated to this catalog", "err", cerr)
	}
	if serr := ix.saveLocked(); serr != nil {
		ix.log.Warn("index: could not save the cache; the next start embeds again", "err", serr)
	}
	return err
}

// Follow applies registry changes until ctx ends or changes is closed, and
// saves the index after a quiet period (and when it stops). Tools left
// without a vector because the embedder failed are retried periodically.
func (ix *Index) Follow(ctx context.Context, changes <-chan registry.Change) {
	save := time.NewTimer(time.Hour)
	save.Stop()
	retry := time.NewTicker(ix.opts.RetryEvery)
	defer retry.Stop()
	var last *registry.Catalog
	defer func() {
		ix.upd.Lock()
		if err := ix.saveLocked(); err != nil {
			ix.log.Warn("index: could not save the cache", "err", err)
		}
		ix.upd.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case ch, ok := <-changes:
			if !ok {
				return
			}
			last = ch.Catalog
			ix.upd.Lock()
			err := ix.updateLocked(ctx, catalogSource(ch.Catalog), ch.Upserted, ch.Removed, false)
			if cerr := ix.calibrateLocked(ctx); cerr != nil && ctx.Err() == nil {
				ix.log.Warn("index: the answerability is not calibrated to this catalog", "err", cerr)
			}
			ix.upd.Unlock()
			if err != nil && ctx.Err() == nil {
				ix.log.Warn("index: update incomplete; affected tools rank lexically until retried", "err", err)
			}
			save.Reset(ix.opts.SaveDelay)
		case <-save.C:
			ix.upd.Lock()
			if err := ix.saveLocked(); err != nil {
				ix.log.Warn("index: could not save the cache", "err", err)
			}
			ix.upd.Unlock()
		case <-retry.C:
			if last == nil || ix.missing() == 0 {
				continue
			}
			ix.upd.Lock()
			err := ix.updateLocked(ctx, catalogSource(last), nil, nil, true)
			if err == nil {
				if cerr := ix.calibrateLocked(ctx); cerr != nil && ctx.Err() == nil {
					ix.log.Warn("index: the answerability is not calibrated to this catalog", "err", cerr)
				}
			}
			ix.upd.Unlock()
			if err == nil {
				ix.log.Info("index: embedded the tools that were missing vectors")
				save.Reset(ix.opts.SaveDelay)
			}
		}
	}
}

func (ix *Index) missing() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.v == nil {
		return 0
	}
	return ix.v.missing
}

// Stats describes the index.
type Stats struct {
	Tools   int `json:"tools"`
	Vectors int `json:"vectors"`
	Missing int `json:"missing"`
	Dim     int `json:"dim"`
	// Embedder is the embedder's own ID (what thresholds are calibrated
	// for); Model is the ID of the embedder that made the vectors, which for
	// a CatalogAware embedder includes the digest of its fit.
	Embedder string `json:"embedder"`
	Model    string `json:"model"`
	Revision uint64 `json:"revision"`
	Cache    string `json:"cache,omitempty"`
}

// Stats reports the index size and state.
func (ix *Index) Stats() Stats {
	s := Stats{Embedder: ix.base.ID()}
	if p := ix.cachePath.Load(); p != nil {
		s.Cache = *p
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if v := ix.v; v != nil {
		s.Tools, s.Missing, s.Dim, s.Revision, s.Model = len(v.byName), v.missing, v.dim, v.rev, v.emb.ID()
		if v.st != nil {
			s.Vectors = v.st.count()
		}
	}
	return s
}

// source is what an update reads: a catalog snapshot's documents.
type source struct {
	rev  uint64
	dirs []string
	n    int
	all  func() []document
	get  func(name string) (document, bool)
	has  func(name string) bool
}

func catalogSource(cat *registry.Catalog) source {
	return source{rev: cat.Revision, dirs: cat.Dirs, n: len(cat.Tools),
		all: func() []document {
			docs := make([]document, len(cat.Tools))
			parallelRows(len(docs), 64, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					docs[i] = newDocument(cat.Tools[i])
				}
			})
			return docs
		},
		get: func(name string) (document, bool) {
			t, ok := cat.Get(name)
			if !ok {
				return document{}, false
			}
			return newDocument(t), true
		},
		has: func(name string) bool { _, ok := cat.Get(name); return ok },
	}
}

// updateLocked applies a catalog: with full, the whole catalog (names not in
// it are removed); otherwise only the named tools.
func (ix *Index) updateLocked(ctx context.Context, cat source, upserted, removed []string, full bool) error {
	// The documents to (re)index and the names to drop. At the first
	// update, the documents are built while the cache file is read.
	var docs []document
	var drop []string
	if !ix.loaded {
		ix.loaded = true
		var wg sync.WaitGroup
		if full {
			wg.Go(func() { docs = cat.all() })
		}
		ix.loadLocked(cat.dirs)
		wg.Wait()
	} else if full {
		docs = cat.all()
	}
	ix.mu.RLock()
	cur := ix.v
	ix.mu.RUnlock()

	if full {
		if cur != nil {
			for name := range cur.byName {
				if !cat.has(name) {
					drop = append(drop, name)
				}
			}
		}
	} else {
		for _, n := range upserted {
			if d, ok := cat.get(n); ok {
				docs = append(docs, d)
			} else {
				drop = append(drop, n)
			}
		}
		drop = append(drop, removed...)
	}

	if ix.needRebuild(ctx, cur, docs, cat.n) {
		if !full {
			docs = cat.all()
		}
		return ix.rebuildLocked(ctx, cat, docs)
	}

	// Incremental: keep documents whose text is unchanged and vector known.
	var todo []document
	for i := range docs {
		d := &docs[i]
		if s, ok := cur.byName[d.name]; ok && cur.slots[s].hash == d.hash && cur.slots[s].vec {
			continue
		}
		todo = append(todo, *d)
	}
	vecs, fresh, err := ix.vectors(ctx, cur.emb, cur.st, todo)
	if errors.Is(err, errDimChanged) {
		ix.log.Warn("index: the embedder's dimension changed; rebuilding", "err", err)
		return ix.rebuildLocked(ctx, cat, cat.all())
	}
	ix.drift += fresh
	ix.mu.Lock()
	v := ix.v
	if len(v.slots) == 0 && len(v.byName) == 0 {
		v.reserve(len(todo)) // a view loaded from the cache: fill it in one go
	}
	if v.st == nil && vecs.store != nil {
		v.st, v.dim = vecs.store, vecs.store.dim
	}
	var stale []string // vectors of removed tools and of replaced texts
	for _, n := range drop {
		if s, ok := v.byName[n]; ok {
			stale = append(stale, v.slots[s].hash)
		}
		v.remove(n)
	}
	for i := range todo {
		if s, ok := v.byName[todo[i].name]; ok && v.slots[s].hash != todo[i].hash {
			stale = append(stale, v.slots[s].hash)
		}
		v.upsert(&todo[i], vecs.get(todo[i].hash), err)
	}
	v.rev = cat.rev
	st := v.st
	ix.mu.Unlock()
	ix.probeDrift += len(todo) + len(drop)
	if fresh > 0 {
		ix.dirty = true
	}
	if st != nil && len(stale) > 0 {
		if rerr := st.remove(ctx, stale...); rerr != nil {
			ix.log.Warn("index: removing stale vectors", "err", rerr)
		}
		ix.dirty = true
	}
	if full {
		ix.pruneLocked(ctx)
	}
	return err
}

// needRebuild says whether the view must be built anew rather than updated:
// at the first update, and when a CatalogAware embedder needs a (re)fit.
func (ix *Index) needRebuild(ctx context.Context, cur *view, docs []document, n int) bool {
	if cur == nil {
		return true
	}
	if ix.aware == nil {
		return false
	}
	if _, fitted := cur.emb.(embed.Fitted); !fitted {
		return true
	}
	return ix.refitDue(ctx, cur.st, docs, n)
}

// refitDue says whether so much of the catalog changed since the last fit
// (documents embedded since, plus those this update would embed) that the
// embedder should be fitted again. One edit never triggers it.
func (ix *Index) refitDue(ctx context.Context, st *store, docs []document, n int) bool {
	pending := 0
	for i := range docs {
		if st == nil || !st.has(ctx, docs[i].hash) {
			pending++
		}
	}
	total := ix.drift + pending
	return total > 1 && float64(total) > ix.opts.RefitShare*float64(max(ix.fitDocs, n))
}

// rebuildLocked builds a new view of the whole catalog (fitting the embedder
// when it is CatalogAware and no fit is current) and swaps it in; Rank keeps
// reading the old view meanwhile.
func (ix *Index) rebuildLocked(ctx context.Context, cat source, docs []document) error {
	ix.mu.RLock()
	cur := ix.v
	ix.mu.RUnlock()

	emb, st := ix.base, (*store)(nil)
	if cur != nil {
		emb, st = cur.emb, cur.st
	}
	var fitErr error
	refit := false
	if ix.aware != nil {
		_, fitted := emb.(embed.Fitted)
		if !fitted || ix.refitDue(ctx, st, docs, len(docs)) {
			texts := make([]string, len(docs))
			for i := range docs {
				texts[i] = docs[i].text
			}
			start := time.Now()
			f, err := ix.aware.Fit(ctx, texts)
			if err != nil {
				fitErr = fmt.Errorf("fitting embedder %s to the catalog: %w", ix.aware.ID(), err)
			} else {
				ix.log.Info("index: fitted the embedder to the catalog", "embedder", f.ID(), "tools", len(docs), "took", time.Since(start))
				emb, st, refit = f, nil, true
				ix.state, ix.fitDocs, ix.drift = f.State(), len(docs), 0
				ix.dirty = true
			}
		}
	}
	var vecs vecSet
	var fresh int
	var err error
	if fitErr != nil {
		// Without a fit there are no vectors: serve lexically, say why.
		vecs, err = vecSet{store: st}, fitErr
	} else {
		vecs, fresh, err = ix.vectors(ctx, emb, st, docs)
		if errors.Is(err, errDimChanged) {
			vecs, fresh, err = ix.vectors(ctx, emb, nil, docs)
		}
	}
	if st == nil && vecs.store != nil {
		st = vecs.store
	}
	if !refit { // the fit's own documents are not drift
		ix.drift += fresh
	}
	nv := newView(emb, st)
	nv.reserve(len(docs))
	for i := range docs {
		nv.upsert(&docs[i], vecs.get(docs[i].hash), err)
	}
	nv.rev = cat.rev
	ix.mu.Lock()
	ix.v = nv
	ix.mu.Unlock()
	ix.probeDrift += len(docs)
	if fresh > 0 {
		ix.dirty = true
	}
	ix.pruneLocked(ctx)
	return err
}

// pruneLocked deletes stored vectors that no live document uses any more.
func (ix *Index) pruneLocked(ctx context.Context) {
	ix.mu.RLock()
	v := ix.v
	ix.mu.RUnlock()
	if v == nil || v.st == nil {
		return
	}
	live := map[string]bool{}
	withVec := 0
	ix.mu.RLock()
	for _, s := range v.slots {
		if s.live {
			live[s.hash] = true
			if s.vec {
				withVec++
			}
		}
	}
	ix.mu.RUnlock()
	if v.st.count() <= withVec { // every stored vector is in use (listing 100k costs ~0.3 s)
		return
	}
	var stale []string
	for h := range v.st.ids(ctx) {
		if !live[h] {
			stale = append(stale, h)
		}
	}
	if len(stale) > 0 {
		if err := v.st.remove(ctx, stale...); err != nil {
			ix.log.Warn("index: pruning stale vectors", "err", err)
		}
		ix.dirty = true
	}
}

// errDimChanged means the embedder now returns vectors of another size.
var errDimChanged = errors.New("embedding dimension changed")

// vecSet is the vectors found or made for a set of documents.
type vecSet struct {
	store *store
	m     map[string][]float32
}

func (s vecSet) get(hash string) []float32 { return s.m[hash] }

// vectors finds or computes the vector of each document: from the store
// when its hash is there, otherwise from the embedder in batches (stored as
// they arrive). It returns how many were embedded. With a nil store one is
// created at the dimension of the first vector.
func (ix *Index) vectors(ctx context.Context, emb embed.Embedder, st *store, docs []document) (vecSet, int, error) {
	out := vecSet{store: st, m: map[string][]float32{}}
	var todo []*document
	seen := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		if seen[d.hash] {
			continue
		}
		seen[d.hash] = true
		if st != nil {
			if v, ok := st.get(ctx, d.hash); ok {
				out.m[d.hash] = v
				continue
			}
		}
		todo = append(todo, d)
	}
	if len(todo) == 0 {
		return out, 0, nil
	}
	progress := ix.opts.Progress
	if progress != nil {
		progress(0, len(todo))
	}
	start := time.Now()

	// Batches are embedded by a few workers (the built-in embedder is
	// CPU-bound; a server takes concurrent requests); results are checked
	// and stored here, one at a time.
	type batchResult struct {
		batch []*document
		vs    [][]float32
		err   error
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var batches [][]*document
	for i := 0; i < len(todo); i += ix.opts.BatchSize {
		batches = append(batches, todo[i:min(i+ix.opts.BatchSize, len(todo))])
	}
	jobs := make(chan []*document)
	results := make(chan batchResult)
	var wg sync.WaitGroup
	for w := 0; w < min(ix.opts.Workers, len(batches)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				texts := make([]string, len(batch))
				for j, d := range batch {
					texts[j] = d.text
				}
				vs, err := emb.EmbedDocuments(wctx, texts)
				if err == nil && len(vs) != len(batch) {
					err = fmt.Errorf("embedder %s returned %d vectors for %d texts", emb.ID(), len(vs), len(batch))
				}
				results <- batchResult{batch, vs, err}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, b := range batches {
			select {
			case jobs <- b:
			case <-wctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	fresh := 0
	var firstErr error
	store := func(r batchResult) error {
		if r.err != nil {
			return fmt.Errorf("embedding %d tools with %s: %w", len(todo)-fresh, emb.ID(), r.err)
		}
		if out.store == nil {
			ns, err := newStore(emb.ID(), len(r.vs[0]))
			if err != nil {
				return err
			}
			out.store = ns
		}
		put := make([]vecDoc, 0, len(r.batch))
		for j, d := range r.batch {
			if len(r.vs[j]) != out.store.dim {
				return fmt.Errorf("%w: %s gave %d dimensions, the index holds %d", errDimChanged, emb.ID(), len(r.vs[j]), out.store.dim)
			}
			if err := checkVector(r.vs[j], out.store.dim); err != nil {
				return fmt.Errorf("embedder %s, tool %s: %w", emb.ID(), d.name, err)
			}
			put = append(put, vecDoc{hash: d.hash, name: d.name, vec: r.vs[j]})
		}
		if err := out.store.put(ctx, put); err != nil {
			return err
		}
		for _, p := range put {
			out.m[p.hash] = normalized(p.vec)
		}
		fresh += len(r.batch)
		if progress != nil {
			progress(fresh, len(todo))
		}
		return nil
	}
	// Receive until the workers are done; after an error, drain (the
	// workers stop taking batches once wctx is cancelled).
	for r := range results {
		if firstErr == nil {
			if err := store(r); err != nil {
				firstErr = err
				cancel()
			}
		}
	}
	if firstErr != nil {
		return out, fresh, firstErr
	}
	ix.log.Debug("index: embedded tools", "n", fresh, "embedder", emb.ID(), "took", time.Since(start))
	return out, fresh, nil
}

// upsert puts a document (and its vector, nil if unknown) into the view.
func (v *view) upsert(d *document, vec []float32, why error) {
	v.gen++
	s, ok := v.byName[d.name]
	hadVec := ok && v.slots[s].vec
	if ok {
		v.lex.remove(s)
		if !v.slots[s].vec {
			v.missing--
		}
	} else if n := len(v.free); n > 0 {
		s, v.free = v.free[n-1], v.free[:n-1]
	} else {
		s = len(v.slots)
		v.slots = append(v.slots, slot{})
	}
	v.byName[d.name] = s
	v.lex.add(s, d.fields)
	v.short.set(s, v.lex)
	sl := slot{name: d.name, hash: d.hash, live: true}
	if v.dim == 0 && vec != nil {
		v.dim = len(vec)
	}
	if vec != nil && len(vec) == v.dim {
		v.setRow(s, vec, hadVec)
		sl.vec = true
	} else {
		v.setRow(s, nil, hadVec)
		sl.doc = d
		v.missing++
		if why != nil {
			v.err = why
		}
	}
	v.slots[s] = sl
	if v.missing == 0 {
		v.err = nil
	}
}

// remove drops a document from the view.
func (v *view) remove(name string) {
	v.gen++
	s, ok := v.byName[name]
	if !ok {
		return
	}
	hadVec := v.slots[s].vec
	if !hadVec {
		v.missing--
	}
	v.lex.remove(s)
	v.short.clear(s)
	delete(v.byName, name)
	v.slots[s] = slot{}
	v.setRow(s, nil, hadVec)
	v.free = append(v.free, s)
	if v.missing == 0 {
		v.err = nil
	}
}

// loadLocked reads the cache file for these tool directories, if any, and
// installs its vectors as the starting view (with no documents yet: the
// update that follows fills them in, reusing the vectors). A corrupt,
// half-written or incompatible file is logged and removed; never fatal.
func (ix *Index) loadLocked(dirs []string) {
	if ix.opts.NoCache {
		return
	}
	dir := ix.opts.CacheDir
	if dir == "" {
		d, err := DefaultCacheDir(ix.base.ID())
		if err != nil {
			ix.log.Warn("index: no cache; every start embeds the catalog", "err", err)
			return
		}
		dir = d
	}
	ix.path = cacheFile(dir, ix.base.ID(), dirs)
	ix.cachePath.Store(&ix.path)
	h, body, err := readCache(ix.path)
	if errors.Is(err, errNoCache) {
		return
	}
	discard := func(why string, err error) {
		ix.log.Warn("index: cache unusable, rebuilding it", "file", ix.path, "why", why, "err", err)
		os.Remove(ix.path)
	}
	if err != nil {
		discard("unreadable", err)
		return
	}
	if h.Embedder != ix.base.ID() {
		discard("made by another embedder "+h.Embedder, nil)
		return
	}
	var emb embed.Embedder = ix.base
	if ix.aware != nil {
		if len(h.State) == 0 {
			discard("no fitted state", nil)
			return
		}
		f, err := ix.aware.Restore(h.State)
		if err != nil {
			discard("fitted state does not restore", err)
			return
		}
		if f.ID() != h.Model {
			discard("fitted state gives "+f.ID()+", vectors are "+h.Model, nil)
			return
		}
		emb = f
	} else if h.Model != ix.base.ID() {
		discard("vectors of "+h.Model, nil)
		return
	}
	if d := ix.base.Dim(); d != 0 && h.Dim != d {
		discard(fmt.Sprintf("dimension %d, the embedder has %d", h.Dim, d), nil)
		return
	}
	st, err := importStore(body, h.Model, h.Dim)
	if err != nil {
		discard("vectors do not decode", err)
		return
	}
	ix.state, ix.fitDocs, ix.drift = h.State, h.FitDocs, h.Drift
	if p := h.Probes; p != nil && sort.Float64sAreSorted(p.Logits) && len(p.Logits) > 0 {
		ix.cachedProbes = &probeState{model: p.Model, digest: p.Digest, logits: p.Logits}
	}
	ix.mu.Lock()
	ix.v = newView(emb, st)
	ix.mu.Unlock()
}

// saveLocked writes the cache file if the index changed since the last save.
func (ix *Index) saveLocked() error {
	if ix.opts.NoCache || ix.path == "" || !ix.dirty {
		return nil
	}
	ix.mu.RLock()
	v := ix.v
	ix.mu.RUnlock()
	if v == nil || v.st == nil {
		return nil
	}
	var buf writeBuffer
	if err := v.st.export(&buf); err != nil {
		return fmt.Errorf("exporting vectors: %w", err)
	}
	h := cacheHeader{Embedder: ix.base.ID(), Model: v.emb.ID(), Dim: v.st.dim, FitDocs: ix.fitDocs, Drift: ix.drift}
	if ps := ix.probes.Load(); ps != nil {
		h.Probes = &cacheProbes{Model: ps.model, Digest: ps.digest, Logits: ps.logits}
	}
	if _, ok := v.emb.(embed.Fitted); ok {
		h.State = ix.state
	}
	if err := writeCache(ix.path, h, buf.b); err != nil {
		return err
	}
	ix.dirty = false
	return nil
}

// writeBuffer is a minimal growable byte sink.
type writeBuffer struct{ b []byte }

func (w *writeBuffer) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
