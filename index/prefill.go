package index

import (
	"slices"
	"strings"
)

// The prefill is Preload's head start on the first update. Preload runs
// while the registry loads the catalog; from the caches it has just read
// (the vectors, and the lexical cache with its document memo) it builds,
// in a view of its own, the catalog the caches were written for: every
// tool of the memo whose vector and lexical entry are cached, in the
// catalog's order (by name), so that an unchanged catalog gets the very
// view a fresh build gives. The first update adopts that view
// (adoptPrefillLocked) and, as for any update, indexes only the documents
// whose embedded text or lexical fields differ from the view's and drops
// the tools the catalog no longer has. Filling the index was the largest
// step left after the registry published a warm 10k catalog (its lexical
// entries are applied one document at a time); it now runs beside the
// registry's load.
//
// The view is only ever right where a slot's document (hash and lexKey)
// is the catalog's: vectors and lexical entries are addressed by content.
// Before adopting it, the update checks that two of the catalog's
// documents the view holds tokenize to the cached entries, as it does
// before applying the lexical cache (takeLexLocked); a disagreement drops
// the prefill and the update proceeds as without one.

// prefillLocked builds ix.pre from the caches loadLocked read.
func (ix *Index) prefillLocked() {
	ix.mu.RLock()
	cur := ix.v
	ix.mu.RUnlock()
	c := ix.lexc
	if cur == nil || cur.st == nil || len(cur.byName) > 0 || c == nil || c.memo == nil || len(c.memo.m) < bulkMin {
		return
	}
	docs := make([]document, 0, len(c.memo.m))
	vecs := vecSet{store: cur.st, m: make(map[string][]float32, len(c.memo.m))}
	for k, e := range c.memo.m {
		vec, ok := cur.st.get(e.hash)
		if _, cached := c.at[e.key]; !ok || !cached {
			continue
		}
		docs = append(docs, document{name: k.name, hash: e.hash, lexKey: e.key, toolHash: k.tool})
		vecs.m[e.hash] = vec
	}
	slices.SortFunc(docs, func(a, b document) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(docs); i++ {
		if docs[i].name == docs[i-1].name {
			return // two tools of one name: not a catalog
		}
	}
	v := newView(cur.emb, cur.st)
	v.reserve(len(docs))
	// A document without fields is indexed empty when its entry does not
	// decode (tokenized, counted): then the prefill is not used.
	if n := v.upsertAll(docs, vecs, nil, c.applier()); n > 0 {
		return
	}
	ix.pre = v
}

// adoptPrefillLocked installs ix.pre as the view the update starts from
// (see the file comment); docs are the catalog's documents.
func (ix *Index) adoptPrefillLocked(docs []document) {
	pre := ix.pre
	ix.pre = nil
	ix.mu.RLock()
	cur := ix.v
	ix.mu.RUnlock()
	if pre == nil || ix.lexc == nil || cur == nil || cur.st != pre.st || len(cur.byName) > 0 {
		return
	}
	lx := ix.lexc.applier()
	checked := 0
	for i := 0; i < len(docs) && checked < 2; i++ {
		d := &docs[i]
		if s, ok := pre.byName[d.name]; !ok || pre.slots[s].lex != d.lexKey {
			continue
		}
		if !lx.agrees(d) {
			ix.log.Warn("index: the lexical cache disagrees with tokenizing; ignoring it", "file", lexPath(ix.path), "tool", d.name)
			return
		}
		checked++
	}
	ix.mu.Lock()
	ix.v = pre
	ix.mu.Unlock()
	ix.prefilled++
}
