package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/registry"
)

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

// Update applies one change now, as Follow does for each change it
// receives: the tools ch names are looked up in ch.Catalog (embedded when
// their text changed, removed when they are not there). It returns once
// the index shows them; an error means some could not be embedded (they
// rank lexically until a later update embeds them). It does not save the
// cache.
func (ix *Index) Update(ctx context.Context, ch registry.Change) error {
	ix.upd.Lock()
	defer ix.upd.Unlock()
	return ix.updateLocked(ctx, catalogSource(ch.Catalog), ch.Upserted, ch.Removed, false)
}

// source is what an update reads: a catalog snapshot's documents.
type source struct {
	rev  uint64
	dirs []string
	n    int
	// all makes the documents of the whole catalog, recalling from memo
	// (nil: none) those it knows.
	all func(memo *docMemo) []document
	get func(name string) (document, bool)
	has func(name string) bool
}

func catalogSource(cat *registry.Catalog) source {
	return source{rev: cat.Revision, dirs: cat.Dirs, n: len(cat.Tools),
		all: func(memo *docMemo) []document {
			docs := make([]document, len(cat.Tools))
			parallelRows(len(docs), 64, func(lo, hi int) {
				var scratch []byte
				for i := lo; i < hi; i++ {
					if d, ok := memo.recall(cat.Tools[i]); ok {
						docs[i] = d
						continue
					}
					docs[i] = newDocumentScratch(cat.Tools[i], &scratch)
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
	// update the cache is read first: its document memo saves making
	// most documents (Preload reads it ahead, while the registry loads).
	var docs []document
	var drop []string
	if ix.preloaded != nil && !slices.Equal(ix.preloaded, cat.dirs) {
		ix.unloadLocked() // Preload read another catalog's cache
	}
	ix.preloaded = nil
	if !ix.loaded {
		ix.loaded = true
		ix.loadLocked(ctx, cat.dirs)
	}
	if full {
		docs = ix.documentsLocked(cat)
		ix.adoptPrefillLocked(docs)
	}
	ix.pre = nil
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
			docs = cat.all(nil)
		}
		return ix.rebuildLocked(ctx, cat, docs)
	}

	// Incremental: keep documents whose text is unchanged and vector known.
	// The text is both what is embedded (hash) and what is indexed
	// lexically (lexKey): an edit past the embedded start of a long prompt
	// changes only the second.
	var todo []document
	var retag []int // kept documents whose tool's Hash changed (the memo's key)
	for i := range docs {
		d := &docs[i]
		if s, ok := cur.byName[d.name]; ok && cur.slots[s].hash == d.hash && cur.slots[s].lex == d.lexKey && cur.slots[s].vec {
			if d.toolHash != "" && cur.slots[s].tool != d.toolHash {
				retag = append(retag, i)
			}
			continue
		}
		todo = append(todo, *d)
	}
	vecs, fresh, err := ix.vectors(ctx, cur.emb, cur.st, todo)
	if errors.Is(err, errDimChanged) {
		ix.log.Warn("index: the embedder's dimension changed; rebuilding", "err", err)
		return ix.rebuildLocked(ctx, cat, cat.all(nil))
	}
	ix.drift += fresh
	lx := ix.takeLexLocked(todo)
	ix.mu.Lock()
	v := ix.v
	if len(v.slots) == 0 && len(v.byName) == 0 {
		v.reserve(len(todo)) // a view loaded from the cache: fill it in one go
	}
	if v.st == nil && vecs.store != nil {
		v.st, v.dim = vecs.store, vecs.store.dim
	}
	for _, i := range retag {
		v.slots[v.byName[docs[i].name]].tool = docs[i].toolHash
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
	}
	ix.noteTokenized(v.upsertAll(todo, vecs, err, lx))
	v.rev = cat.rev
	st := v.st
	stale = v.unused(stale)
	ix.mu.Unlock()
	ix.probeDrift += len(todo) + len(drop)
	if fresh > 0 || vecs.fromLibrary > 0 {
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

// noteTokenized records that an update tokenized n documents (their
// lexical entries are then to be saved).
func (ix *Index) noteTokenized(n int) {
	ix.tokenized += n
	if n > 0 {
		ix.lexDirty = true
	}
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
		if st == nil || !st.has(docs[i].hash) {
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
				texts[i] = docs[i].text()
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
	ix.noteTokenized(nv.upsertAll(docs, vecs, err, ix.takeLexLocked(docs)))
	nv.rev = cat.rev
	ix.mu.Lock()
	ix.v = nv
	ix.mu.Unlock()
	ix.probeDrift += len(docs)
	if fresh > 0 || vecs.fromLibrary > 0 {
		ix.dirty = true
	}
	ix.pruneLocked(ctx)
	return err
}

// pruneLocked deletes stored vectors that no live document uses any more,
// and the int8 rows the cache file gave (the view holds them now).
func (ix *Index) pruneLocked(ctx context.Context) {
	ix.mu.RLock()
	v := ix.v
	ix.mu.RUnlock()
	if v == nil || v.st == nil {
		return
	}
	v.st.forgetRows() // the view has them now
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
	for h := range v.st.ids() {
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
