package index

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
)

// A delta brings a saved usage view up to date with what changed in the
// history since it was saved (History.Since), instead of reading and
// building the whole history again: the first `toolsrv rank` after a
// recorded call reads a few entries, not 50,000. The removed and changed
// entries' rows go (by their Use.ID), the added ones are tokenized and
// embedded, the IDF of the words known stays as the last full build made
// it (a new word gets the IDF of a word of one request), and the weight
// stays as leave-one-out chose it then. Once the entries added and
// removed since the last full build reach a twentieth of it, the history
// is built whole again and the weight chosen again (as the answerability's
// probes are ranked again after a twentieth of the catalog changed). So a
// view is that of its history up to these small drifts.

// usageDeltaRoom is the rows of vectors a saved view is read with room
// for, so that a delta adding as many appends them in place.
const usageDeltaRoom = 64

// useID is the digest of a Use.ID (zero for none).
func useID(id string) [16]byte {
	if id == "" {
		return [16]byte{}
	}
	return usageKey(id)
}

// deltaOf brings u, a view of version of the history h (the view in
// effect, or one read from the saved file), up to the version want with
// what changed since (h.Since), puts it in effect and saves it in the
// background: a copy of u changed in place when the change is small
// (applyDelta), else, when u has its rows (a view built here of entries
// with IDs, not read from the file), the history built whole from them
// and the change. False
// when it can do neither (h.Since failed, or the change is too large for
// a view without its rows): the caller reads the history whole. The
// caller holds usage.apply.
func (ix *Index) deltaOf(ctx context.Context, u *usageView, version int64, want viewHeader, h History) (UsageFit, bool) {
	changed, removed, err := h.Since(ctx, version)
	if err != nil {
		return UsageFit{}, false
	}
	d := u
	if u == ix.usage.Load() {
		d = u.clone() // rankings read u meanwhile
	}
	if ix.applyDelta(ctx, d, changed, removed) {
		d.made, d.history = want, h.Source
		ix.usage.view.Store(d)
		if ix.opts.UsageViewPath != "" {
			gen := ix.usageSaveGen()
			ix.usage.saved.wg.Go(func() { ix.saveUsageView(gen, want, d) })
		}
		return d.loo, true
	}
	if !u.rows || u.text == nil || ctx.Err() != nil {
		return UsageFit{}, false
	}
	fit, err := ix.setUsage(ctx, u.rebuilt(changed, removed, h.Extra), &want, h.Source, withIDs(changed))
	return fit, err == nil
}

// clone is a copy of u that a delta may change while rankings read u (the
// words are rebuilt by the delta, the postings and tools' entries by its
// reindex).
func (u *usageView) clone() *usageView {
	return &usageView{n: u.n, nprincipals: u.nprincipals, fullN: u.fullN, drift: u.drift, dim: u.dim, text: slices.Clone(u.text),
		toolID: slices.Clone(u.toolID), tools: slices.Clone(u.tools), principal: slices.Clone(u.principal),
		principals: slices.Clone(u.principals), voice: u.voice.clone(), calls: slices.Clone(u.calls), first: slices.Clone(u.first),
		ids: slices.Clone(u.ids), failed: maps.Clone(u.failed), silent: maps.Clone(u.silent), trust: slices.Clone(u.trust), cross: slices.Clone(u.cross),
		qvecs: slices.Clone(u.qvecs), qscale: slices.Clone(u.qscale), words: u.words, wordsAt: u.wordsAt,
		idf: slices.Clone(u.idf), dict: maps.Clone(u.dict), w: u.w, loo: u.loo, made: u.made, history: u.history, rows: u.rows}
}

// applyDelta applies to u (a view no ranking uses yet) the entries
// changed since it was made and the IDs removed; false (u then unusable)
// when the change is too large for a delta or cannot be applied.
func (ix *Index) applyDelta(ctx context.Context, u *usageView, changed []Use, removed []string) bool {
	rowOf := make(map[[16]byte]int32, u.n)
	for i, id := range u.ids {
		if id != ([16]byte{}) {
			rowOf[id] = int32(i)
		}
	}
	dead := make([]bool, u.n)
	drop := 0
	kill := func(id [16]byte) {
		delete(u.failed, id)
		delete(u.silent, id)
		if r, ok := rowOf[id]; ok && !dead[r] {
			dead[r] = true
			drop++
		}
	}
	for _, id := range removed {
		kill(useID(id))
	}
	var adds []Use
	var addTerms [][]string
	for _, e := range changed {
		if e.ID == "" {
			return false // no telling which row it replaces
		}
		kill(useID(e.ID))
		ts := uniq(terms(e.Request))
		if len(ts) == 0 || e.Tool != "" && e.Count > 0 && e.Failed >= e.Count {
			u.keep(e) // failed calls never raise a tool
			continue
		}
		u.keepFailed(e)
		adds = append(adds, e)
		addTerms = append(addTerms, ts)
	}
	if u.drift+drop+len(adds) > u.fullN/20 || u.n-drop+len(adds) == 0 || len(u.trust) != u.n || len(u.calls) != u.n || len(u.first) != u.n ||
		(u.cross != nil && len(u.cross) != u.n) {
		return false
	}
	// The new requests' vectors: a few, embedded here.
	var addQ []int8
	var addScale []float32
	if u.dim > 0 {
		e := ix.opts.UsageEmbedder
		if e == nil || e.Dim() != u.dim {
			return false
		}
		addQ = make([]int8, len(adds)*u.dim)
		addScale = make([]float32, len(adds))
		for k, a := range adds {
			raw, err := e.EmbedQuery(ctx, a.Request)
			if err == nil && len(raw) == u.dim && checkVector(raw, u.dim) == nil {
				addScale[k] = quantizeRow(addQ[k*u.dim:(k+1)*u.dim], normalized(raw))
			}
		}
		if ctx.Err() != nil {
			return false
		}
	}

	// The rows that stay, in place: each dead row's slot takes the last
	// row (no copy of the megabytes of vectors, no new memory for them).
	// src[p] is the row now at p; every row moved comes from the tail,
	// which no move writes.
	src := make([]int32, u.n)
	for i := range src {
		src[i] = int32(i)
	}
	end := u.n
	for d := 0; d < end; d++ {
		for d < end && dead[src[d]] {
			end--
			src[d] = src[end]
		}
	}
	src = src[:end]
	dim := u.dim
	for p, i := range src {
		if int(i) == p {
			continue
		}
		u.toolID[p], u.principal[p], u.ids[p], u.trust[p], u.calls[p], u.first[p] = u.toolID[i], u.principal[i], u.ids[i], u.trust[i], u.calls[i], u.first[i]
		if u.cross != nil {
			u.cross[p] = u.cross[i]
		}
		if u.text != nil {
			u.text[p] = u.text[i]
		}
		if dim > 0 {
			u.qscale[p] = u.qscale[i]
			copy(u.qvecs[p*dim:(p+1)*dim], u.qvecs[int(i)*dim:(int(i)+1)*dim])
		}
	}
	n := end + len(adds)
	toolID, agent, ids, calls, first := u.toolID[:end], u.principal[:end], u.ids[:end], u.calls[:end], u.first[:end]
	for p := range u.voice.entries {
		u.voice.entries[p] = 0
	}
	for _, p := range agent {
		u.voice.entries[p]++
	}
	var text []string
	if u.text != nil {
		clear(u.text[end:]) // no request of a row gone left behind
		text = u.text[:end]
	}
	var qscale []float32
	var qvecs []int8
	if dim > 0 {
		qscale, qvecs = u.qscale[:end], u.qvecs[:end*dim]
	}
	wordsAt := make([]int32, 0, n+1)
	words := make([]termWeight, 0, len(u.words)+8*len(adds))
	for _, i := range src {
		wordsAt = append(wordsAt, int32(len(words)))
		words = append(words, u.row(i)...)
	}
	toolOf := make(map[string]int32, len(u.tools))
	for i, t := range u.tools {
		toolOf[t] = int32(i)
	}
	agentOf := make(map[string]int32, len(u.principals))
	for i, a := range u.principals {
		agentOf[a] = int32(i)
	}
	for k, e := range adds {
		t, ok := toolOf[e.Tool]
		if !ok {
			t = int32(len(u.tools))
			toolOf[e.Tool] = t
			u.tools = append(u.tools, e.Tool)
		}
		a, ok := agentOf[e.Principal]
		if !ok {
			a = int32(len(u.principals))
			agentOf[e.Principal] = a
			u.principals = append(u.principals, e.Principal)
			u.voice.join(e.Role)
		}
		u.voice.entries[a]++
		toolID, agent, ids = append(toolID, t), append(agent, a), append(ids, useID(e.ID))
		calls = append(calls, int32(min(max(e.Count, 1)-max(e.Failed, 0), math.MaxInt32)))
		first = append(first, unixOf(e.First))
		if u.text != nil {
			text = append(text, e.Request)
		}
		wordsAt = append(wordsAt, int32(len(words)))
		at := len(words)
		var norm float64
		for _, term := range addTerms[k] {
			id, ok := u.dict[term]
			if !ok {
				id = int32(len(u.idf))
				u.dict[term] = id
				u.idf = append(u.idf, math.Log(1+float64(n)))
			}
			norm += u.idf[id] * u.idf[id]
			words = append(words, termWeight{id: id})
		}
		norm = math.Sqrt(norm)
		row := words[at:]
		for j := range row {
			row[j].w = float32(u.idf[row[j].id] / norm)
		}
		slices.SortFunc(row, func(a, b termWeight) int { return cmp.Compare(a.id, b.id) })
		if u.dim > 0 {
			qscale = append(qscale, addScale[k])
			qvecs = append(qvecs, addQ[k*u.dim:(k+1)*u.dim]...)
		}
	}
	wordsAt = append(wordsAt, int32(len(words)))
	u.n, u.toolID, u.principal, u.ids, u.text, u.calls, u.first = n, toolID, agent, ids, text, calls, first
	u.wordsAt, u.words, u.qscale, u.qvecs = wordsAt, words, qscale, qvecs
	u.nprincipals = len(u.principals)
	u.drift += drop + len(adds)
	u.loo.Entries = n
	u.trust = u.trust[:end]
	if u.cross != nil {
		u.cross = u.cross[:end]
	}
	u.reindex()
	// The added entries' trust and cross trust, against the history as it
	// is now (the others' stays as it was, and the principals' belief,
	// until the next whole build).
	return u.setTrust(ctx, end) == nil && u.setCross(ctx, end) == nil
}
