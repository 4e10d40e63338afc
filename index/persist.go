package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/internal/fileio"
)

// Preload reads the cache file of a catalog over dirs ahead of the first
// Sync, so that it can be read while the registry reads the tool files,
// and fills a view of the catalog the cache was written for (prefill.go).
// Sync then reuses both when its catalog has these directories (and reads
// the right file when it has not). It does nothing after the first Sync.
func (ix *Index) Preload(ctx context.Context, dirs []string) {
	ix.upd.Lock()
	defer ix.upd.Unlock()
	if ix.loaded {
		return
	}
	ix.loaded = true
	ix.preloaded = slices.Clone(dirs)
	if ix.preloaded == nil {
		ix.preloaded = []string{}
	}
	ix.loadLocked(ctx, dirs)
	ix.prefillLocked()
}

// unloadLocked forgets what loadLocked read, before any update used it.
func (ix *Index) unloadLocked() {
	ix.loaded = false
	ix.path = ""
	ix.cachePath.Store(nil)
	ix.state, ix.fitDocs, ix.drift = nil, 0, 0
	ix.cachedProbes = nil
	ix.lexc = nil
	ix.pre = nil
	ix.mu.Lock()
	ix.v = nil
	ix.mu.Unlock()
}

// loadLocked reads the cache file for these tool directories, if any, and
// installs its vectors as the starting view (with no documents yet: the
// update that follows fills them in, reusing the vectors). A corrupt,
// half-written or incompatible file is logged and removed; never fatal.
func (ix *Index) loadLocked(ctx context.Context, dirs []string) {
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
	if !ix.openCacheDirLocked(dir) {
		return
	}
	ix.path = cacheFile(dir, ix.base.ID(), dirs)
	if ix.aware == nil && ix.lib == nil {
		ix.lib = newLibrary(dir, ix.base.ID(), ix.opts.ReadOnlyCache, ix.log)
	}
	path := ix.path
	ix.cachePath.Store(&path)
	ix.loadLexLocked()
	h, body, err := readCache(ix.path)
	if errors.Is(err, fileio.ErrNoFile) {
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
	st, err := importStore(ctx, body, h.Model, h.Dim)
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

// openCacheDirLocked makes the cache directory private to this user
// (fileio.PrivateDir: created 0700, or made 0700 if others may enter it)
// and removes the temporary files a killed writer left there; a directory
// of another user, or a shared one, is refused: no cache then. A
// read-only index leaves the directory to the index that writes it.
func (ix *Index) openCacheDirLocked(dir string) bool {
	if ix.opts.ReadOnlyCache {
		return true
	}
	if err := fileio.PrivateDir(dir, os.Geteuid(), ix.log); err != nil {
		ix.log.Warn("index: the cache directory is refused; every start embeds the catalog", "err", err)
		return false
	}
	removed, err := fileio.RemoveStaleTemps(dir)
	if err != nil {
		ix.log.Warn("index: looking for stale temporary files", "dir", dir, "err", err)
	}
	if len(removed) > 0 {
		ix.log.Info("index: removed the temporary files of writers that died", "dir", dir, "files", removed)
	}
	return true
}

// loadLexLocked reads the lexical cache beside the cache file, if there
// is a usable one.
func (ix *Index) loadLexLocked() {
	c, err := readLexCache(lexPath(ix.path), ix.programLocked())
	switch {
	case errors.Is(err, fileio.ErrNoFile):
	case err != nil:
		ix.log.Info("index: lexical cache unusable; tokenizing the catalog", "file", lexPath(ix.path), "err", err)
	default:
		ix.lexc = c
	}
}

// programLocked is fileio.ExecutableID, found once.
func (ix *Index) programLocked() string {
	if ix.program == "" {
		ix.program = fileio.ExecutableID()
	}
	return ix.program
}

// takeLexLocked hands the lexical cache to the update about to index docs,
// once, unless the first two documents it has entries for show that it
// disagrees with tokenizing them (then it is dropped, and rewritten at the
// next save).
func (ix *Index) takeLexLocked(docs []document) *lexApply {
	lx := ix.lexc.applier()
	ix.lexc = nil
	if lx == nil {
		return nil
	}
	checked := 0
	for i := 0; i < len(docs) && checked < 2; i++ {
		if !lx.has(docs[i].lexKey) {
			continue
		}
		if !lx.agrees(&docs[i]) {
			ix.log.Warn("index: the lexical cache disagrees with tokenizing; ignoring it", "file", lexPath(ix.path), "tool", docs[i].name)
			return nil
		}
		checked++
	}
	return lx
}

// saveLocked writes the cache file if the index changed since the last
// save, and the lexical cache if documents were tokenized since.
func (ix *Index) saveLocked() error {
	if ix.opts.NoCache || ix.opts.ReadOnlyCache || ix.path == "" || !ix.dirty && !ix.lexDirty {
		return nil
	}
	ix.mu.RLock()
	v := ix.v
	ix.mu.RUnlock()
	if v != nil && ix.lexDirty {
		program := ix.programLocked()
		ix.mu.RLock()
		err := writeLexCache(lexPath(ix.path), v, program)
		ix.mu.RUnlock()
		if err != nil {
			return err
		}
		ix.lexDirty = false
	}
	if v == nil || v.st == nil || !ix.dirty {
		return nil
	}
	h := cacheHeader{Embedder: ix.base.ID(), Model: v.emb.ID(), Dim: v.st.dim, FitDocs: ix.fitDocs, Drift: ix.drift}
	if ps := ix.probes.Load(); ps != nil {
		h.Probes = &cacheProbes{Model: ps.model, Digest: ps.digest, Logits: ps.logits}
	}
	if _, ok := v.emb.(embed.Fitted); ok {
		h.State = ix.state
	}
	if err := writeCache(ix.path, h, v.st.export); err != nil {
		return err
	}
	ix.dirty = false
	if ix.lib != nil {
		return ix.lib.save(context.Background())
	}
	return nil
}
