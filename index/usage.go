package index

// Usage: what this installation's agents called for which request, as a
// signal of its own (not text pasted into the tools' documents).
//
// For a message, each past request near it votes for the tool it led to.
// A past request's nearness is s = a·dense + (1−a)·lexical: the cosine of
// the two texts' vectors (Options.UsageEmbedder, the built-in embedder:
// local, cheap, and stable, so the vectors can be cached by text), and
// the cosine of their IDF-weighted words (IDF over the past requests,
// each counted as far as its voice is heard: usagevoice.go). Its vote is
// the kernel exp(β·(s−1)). A tool's usage evidence is the share of the
// votes it gets, against a fixed mass k0 that stands for "none of the
// past requests": P(t) = Σ_{requests of t} vote / (Σ all votes + k0).
// Far requests give tiny votes, so a message like no past request gets
// nothing; requests near it that went to different tools split the
// evidence. Each voice's requests (the owner's, an established
// principal's, the crowd's: usagevoice.go) vote among themselves and the
// voices' shares are weighed by what each has earned, so no flood of
// records, nor crowd of made-up names, moves a tool by more than its
// voice's weight; a request whose calls all failed does not vote; one
// merged entry (identical requests of a principal for a tool) is one vote
// however often it was made; and each vote is weighed by its entry's
// trust, how far its principal's other entries agree with its label, and
// its cross trust, how far the others do (usagetrust.go).
//
// A candidate's score becomes min(1, score + w·P(t)), tools the usage
// points to join the ranking, and the answerability moves toward 1 by
// w·max P(t) and toward 0 by w·P(none), where "none" are the requests
// that ended with no tool called. w is chosen from the installation's own
// history: leave-one-out over a sample of its past requests (each ranked
// as a new one, without its entries), the w of a small grid with the
// best Recall@5 whose gain is clear (clearGain, usagefit.go);
// with little or misleading history it comes out 0. With no usage the
// ranking is untouched.
//
// β, k0 and a were chosen on usage simulated from the training sources
// (each catalog's requests split into past and new; with all past
// requests, two per tool, and 30% credited to a wrong tool): the
// protocol of bench/scripts/usage-check.py, run on the catalogs
// "learn export" writes from train/data.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/internal/parallel"
)

// Use is one entry of the usage history as the index uses it: identical
// requests of an agent for a tool, merged.
type Use struct {
	Request string
	// Tool is the tool called; "" when the request was answered and no
	// tool was used.
	Tool string
	// Principal is who recorded it (its unit of belief: the usage
	// package's Unit), and Role what the principal's word is to the
	// ranking (usagevoice.go).
	Principal string
	Role      Role
	// Count calls, of which Failed failed; First and Last the times of
	// the first and the latest (zero: unknown).
	Count, Failed int
	First, Last   time.Time
	// ID identifies the entry from one version of the history to the next
	// (History.Since); "": none.
	ID string
	// key is ID's digest (useKey), for a Use made again from a view's
	// row, whose ID is gone (zero: take it from ID).
	key [16]byte
}

// idKey is the digest of e's ID (zero: none).
func (e *Use) idKey() [16]byte {
	if e.key != ([16]byte{}) {
		return e.key
	}
	return useID(e.ID)
}

// The usage signal's constants (see the file comment).
const (
	usageBeta  = 10.0
	usageK0    = 0.01
	usageDense = 0.6
	// usagePool: the dense part is computed for the entries of the best
	// usagePool tools of the ranking and for entries sharing a word with
	// the message (an inverted index): the rest would vote nothing.
	usagePool = 10
	// usageInject bounds the tools the usage adds below the ranking.
	usageInject = 10
	// usageLexical and usagePerTool bound the entries a message is
	// compared with, usageKeep the tools it gives evidence for (see
	// evidence). Half of each (64, 32) gave the same Recall@5 on the
	// histories simulated from the training sources (all past requests,
	// two per tool, 30% wrong: within +0.002), for half the comparisons.
	usageLexical = 32
	usageCommon  = 1024
	usagePerTool = 16
	usageKeep    = 64
	// usageLOO is the sample of past requests the weight is chosen on.
	usageLOO = 150
	// usageMinNet is the fewest sampled requests a weight must help more
	// than it hurts to be used (clearGain).
	usageMinNet = 3
)

// usageGrid are the weights the leave-one-out choice considers.
var usageGrid = [...]float64{0, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 5}

// usageView is the usage history, ready to score: built by SetUsage,
// read-only afterwards.
type usageView struct {
	n      int
	text   []string // per entry: the request
	toolID []int32  // per entry: its tool's index in tools
	tools  []string // the tools named, "" among them if any
	// principal: per entry, its principal's id; principals their names,
	// voice their roles, belief and voices (usagevoice.go); ids the
	// entries' Use.ID digests (zero: none): what a delta (usagedelta.go)
	// needs.
	principal   []int32
	nprincipals int
	principals  []string
	voice       voices
	ids         [][16]byte
	// calls: per entry, its calls that succeeded (what the owner's
	// repeats count by: usagevoice.go); first when it was first recorded
	// (Unix seconds, 0: unknown; what cross trust tells a principal's
	// older entries by: usagetrust.go).
	calls []int32
	first []int64
	// failed: the failed calls of the entries that have any, by ID
	// digest; silent: the entries of the history that do not vote (every
	// call failed, or no words), by ID digest. Neither changes a ranking:
	// they are what the principals' success (principalStats) counts, kept
	// so that a view built again from its rows (rebuilt) believes each
	// principal as the whole build did. In memory only: a view read from
	// the saved file has no rows and is never built again from them.
	failed map[[16]byte]int32
	silent map[[16]byte]Use
	// fullN is the entries of the last full build, drift the entries
	// added and removed by deltas since.
	fullN, drift int
	dim          int
	// qvecs: n × dim unit vectors quantised to int8, one scale per row
	// (qscale; nil: no dense part): the candidates are compared in the
	// vectorised int8 kernel of the dense scan (quant.go).
	qvecs  []int8
	qscale []float32
	// words: the entries' terms' ids and weights (IDF, unit norm), entry
	// i's at words[wordsAt[i]:wordsAt[i+1]] (one array: few cache misses
	// when candidates are compared); post: per term id, the entries that
	// have it and their weight.
	words   []termWeight
	wordsAt []int32
	post    [][]termWeight
	dict    map[string]int32
	idf     []float64
	byTool  map[string][]int32
	// trust is each entry's vote's weight by how far its principal's
	// other entries agree with it, cross by how far the other principals'
	// do (usagetrust.go; nil: all 1).
	trust []float32
	cross []float32
	// made is the history the view is of (SetUsageSaved; zero: SetUsage),
	// history its History.Source (in memory only: a view read from the
	// saved file has none, nor its rows' texts). rows: every row that is
	// the history's has its ID, so that the history can be made again from
	// the rows (rebuilt).
	made    viewHeader
	history string
	rows    bool
	// scratch holds *usageScratch for evidence.
	scratch sync.Pool
	// w is the weight chosen by leave-one-out; loo what it saw.
	w   float64
	loo UsageFit
}

// termWeight is a term's id and weight in an entry's words, or an
// entry's id and the term's weight in it in a term's postings.
type termWeight struct {
	id int32
	w  float32
}

// UsageFit says how the usage weight was chosen.
type UsageFit struct {
	// Entries are the usage entries in effect; Sample the past requests
	// the weight was chosen on.
	Entries int `json:"entries"`
	Sample  int `json:"sample"`
	// Weight is the chosen w; Recall the sample's Recall@5 with it, and
	// Base without usage.
	Weight float64 `json:"weight"`
	Recall float64 `json:"recall5"`
	Base   float64 `json:"recall5Without"`
}

// usageSignal is the usage history as the index ranks with it: the view
// in effect (nil: none), read by every ranking (Load); the cache of the
// requests' vectors; and the state of the saved view (usagesaved.go).
// Histories are applied one at a time (apply): each builds a view, or
// brings a copy of the one in effect up to date (usagedelta.go), and
// swaps it in; rankings go on with the view before meanwhile. The view is
// the index's one copy of the history: its rows (request, tool, agent,
// ID) are what a whole build starts from again when the history's catalog,
// examples or drift call for one, so that only a view read from the saved
// file (which keeps no texts) needs the history read whole.
type usageSignal struct {
	view  atomic.Pointer[usageView]
	apply sync.Mutex
	// secret is History.Secret of the history being applied (apply
	// held): what chooses the judged samples (usagevoice.go).
	secret []byte
	// vecs caches the usage requests' vectors by text.
	vecs usageVectors
	// saved is when this index last saved its usage view; wg the saves
	// under way (WaitSaves).
	saved struct {
		sync.Mutex
		at  time.Time
		gen uint64 // SetUsage's latest; an older save gives way
		wg  sync.WaitGroup
	}
}

// Load is the view in effect (nil: no usage).
func (s *usageSignal) Load() *usageView { return s.view.Load() }

// usageVectors caches the usage requests' vectors by text, for the life
// of the index (and its cache file: usagecache.go).
type usageVectors struct {
	mu   sync.Mutex
	byID string // the embedder the vectors are of
	vecs *usageVecs
}

// usageVecs are request vectors by text key: each text's row in q (dim
// int8 components) and scale (the vector ≈ q·scale; 0: no vector). No
// pointer in it: a start that loads 50,000 of them gives the collector
// nothing to scan.
type usageVecs struct {
	dim   int
	row   map[[16]byte]int32
	q     []int8
	scale []float32
}

// add appends a zero row for k and returns its index.
func (v *usageVecs) add(k [16]byte) int32 {
	r := int32(len(v.scale))
	v.row[k] = r
	v.scale = append(v.scale, 0)
	v.q = append(v.q, make([]int8, v.dim)...)
	return r
}

// SetUsage replaces the usage history the index ranks with (nil or empty:
// none), in any order. It embeds the requests it has no vector for (a few
// tens of microseconds each with the built-in embedder; cached by text,
// in memory and in the cache directory) and chooses the usage weight by
// leave-one-out over a sample of the history (a ranking each). Rankings
// go on meanwhile with the history before.
func (ix *Index) SetUsage(ctx context.Context, uses []Use) (UsageFit, error) {
	ix.usage.apply.Lock()
	defer ix.usage.apply.Unlock()
	ix.usage.secret = nil
	return ix.setUsage(ctx, uses, nil, "", false)
}

// History names a usage history and how to read it, for SetUsageSaved.
type History struct {
	// Source names where the history is kept: views of different sources
	// never mix. Version grows with every change of the history.
	Source  string
	Version int64
	// Extra are entries that are not the history's own but join it in the
	// view (the tools' examples), given whole each time: other Extra make
	// another view, as another Source does, built from the view in effect
	// when it has its rows (no read of the history).
	Extra []Use
	// Load gives all its entries.
	Load func(context.Context) ([]Use, error)
	// Since, if set, gives the entries added or changed after version v
	// and the IDs (Use.ID) of those removed; an error when it cannot tell.
	Since func(ctx context.Context, v int64) (changed []Use, removed []string, err error)
	// Secret is a secret of the installation (usage.Keyed) that chooses
	// which of a principal's entries judge it (usagevoice.go), so that no
	// principal can tell which of its claims will be checked; the same
	// secret makes the same view. nil: a fixed choice anyone can predict.
	Secret []byte
}

// SetUsageSaved is SetUsage of the history h names, reading as little of
// it as it can:
//
//   - the view in effect of the same version of it: nothing changes;
//   - of an older version (a server's reload): a copy of it brought up to
//     date with what changed since (h.Since), the weight as it was chosen
//     (usagedelta.go); once the entries added and removed since the last
//     whole build reach a twentieth of it, built whole again from its own
//     rows and the change;
//   - the view in effect of the same history (Source) on another catalog,
//     last step, embedder or Extra: built whole from its rows and what
//     changed since;
//   - with Options.UsageViewPath, the view saved for the same version of
//     the same history on the same catalog (by another process: toolsrv
//     rank) is taken from the file; one saved for an older version is
//     brought up to date with what changed since;
//   - otherwise the history is read (h.Load) and built whole.
//
// The view in effect is saved, in the background (WaitSaves). An error of
// h.Load is returned as it is, and the history in effect stays.
func (ix *Index) SetUsageSaved(ctx context.Context, h History) (UsageFit, error) {
	ix.usage.apply.Lock()
	defer ix.usage.apply.Unlock()
	ix.usage.secret = h.Secret
	source := h.Source
	if len(h.Extra) > 0 {
		source += "\x00extra " + extraDigest(h.Extra)
	}
	if len(h.Secret) > 0 {
		d := sha256.Sum256(append([]byte("usage view secret\x00"), h.Secret...))
		source += "\x00secret " + hex.EncodeToString(d[:8])
	}
	want := viewHeader{base: ix.usageViewBase(source), version: h.Version}
	cur := ix.usage.Load()
	if cur != nil && cur.made.version <= want.version && cur.history == h.Source && h.Source != "" {
		if cur.made.base == want.base {
			if cur.made.version == want.version {
				return cur.loo, nil
			}
			if h.Since != nil {
				if fit, ok := ix.deltaOf(ctx, cur, cur.made.version, want, h); ok {
					return fit, nil
				}
			}
		} else if cur.rows && cur.text != nil && (cur.made.version == want.version || h.Since != nil) {
			// Another catalog, last step, embedder or Extra: the same
			// history built whole again from the view's rows.
			var changed []Use
			var removed []string
			var err error
			if cur.made.version < want.version {
				changed, removed, err = h.Since(ctx, cur.made.version)
			}
			if err == nil {
				return ix.setUsage(ctx, cur.rebuilt(changed, removed, h.Extra), &want, h.Source, withIDs(changed))
			}
		}
	}
	if u, version := ix.loadUsageView(want.base); u != nil {
		switch {
		case version == want.version:
			ix.usageSaveGen() // a save under way is of an older history
			u.made, u.history = want, h.Source
			ix.usage.view.Store(u)
			return u.loo, nil
		case version < want.version && h.Since != nil:
			if fit, ok := ix.deltaOf(ctx, u, version, want, h); ok {
				return fit, nil
			}
		}
	}
	uses, err := h.Load(ctx)
	if err != nil {
		return UsageFit{}, err
	}
	return ix.setUsage(ctx, append(uses, h.Extra...), &want, h.Source, withIDs(uses))
}

// withIDs reports whether every one of uses has an ID.
func withIDs(uses []Use) bool {
	for i := range uses {
		if uses[i].ID == "" && uses[i].key == ([16]byte{}) {
			return false
		}
	}
	return true
}

// extraDigest tells one History.Extra from another.
func extraDigest(extra []Use) string {
	h := sha256.New()
	for _, e := range extra {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00%d\x00%d\x00", e.Principal, e.Role, e.Tool, e.Request, e.ID, e.Count, e.Failed)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rebuilt is the history u is of as Uses again (the entries that vote,
// with their calls and failures, and those that do not), with
// removed and changed taken out and changed put in, and the entries
// that are not the history's (no ID, or one of Extra's: History.Extra)
// replaced by extra. u must have its rows (u.rows, u.text).
func (u *usageView) rebuilt(changed []Use, removed []string, extra []Use) []Use {
	gone := make(map[[16]byte]bool, len(changed)+len(removed)+len(extra))
	for _, id := range removed {
		gone[useID(id)] = true
	}
	for _, e := range changed {
		gone[useID(e.ID)] = true
	}
	for i := range extra {
		gone[extra[i].idKey()] = true
	}
	out := make([]Use, 0, u.n+len(changed)+len(extra))
	for i := 0; i < u.n; i++ {
		if id := u.ids[i]; id != ([16]byte{}) && !gone[id] {
			p := u.principal[i]
			failed := int(u.failed[id])
			out = append(out, Use{Request: u.text[i], Tool: u.toolOf(int32(i)), Principal: u.principals[p], Role: u.voice.role[p],
				Count: int(max(u.calls[i], 1)) + failed, Failed: failed, First: timeOf(u.first[i]), key: id})
		}
	}
	for id, e := range u.silent {
		if !gone[id] {
			out = append(out, e)
		}
	}
	out = append(out, changed...)
	return append(out, extra...)
}

// keep keeps e, an entry of the history that does not vote, aside (for
// rebuilt; an entry without an ID is none of the history's rows).
func (u *usageView) keep(e Use) {
	if id := e.idKey(); id != ([16]byte{}) && u.silent != nil {
		e.key = id
		u.silent[id] = e
	}
}

// keepFailed keeps the failed calls of e, an entry that votes, aside.
func (u *usageView) keepFailed(e Use) {
	if id := e.idKey(); id != ([16]byte{}) && e.Failed > 0 && u.failed != nil {
		u.failed[id] = int32(min(e.Failed, math.MaxInt32))
	}
}

// setUsage builds, fits and puts in effect the view of uses, of the
// history hdr names (nil: none; source its History.Source; rows: every
// entry of it in uses has its ID), and saves it (with
// Options.UsageViewPath). The caller holds usage.apply.
func (ix *Index) setUsage(ctx context.Context, uses []Use, hdr *viewHeader, source string, rows bool) (UsageFit, error) {
	u, stats, err := ix.buildUsage(ctx, orderedUses(uses))
	if err != nil || u == nil {
		if err == nil {
			ix.removeUsageVectors()
		}
		if err == nil && hdr != nil {
			ix.saveUsageView(ix.usageSaveGen(), *hdr, nil)
		}
		ix.usage.view.Store(nil)
		return UsageFit{}, err
	}
	// The principals heard first (each vote in full), then the words
	// weighed by voice, then each entry's trust against them.
	if err := ix.hear(ctx, u, stats); err != nil {
		return UsageFit{}, err
	}
	u.reweigh()
	if err := u.setTrust(ctx, 0); err != nil {
		return UsageFit{}, err
	}
	if err := u.setCross(ctx, 0); err != nil {
		return UsageFit{}, err
	}
	if err := ix.fitUsage(ctx, u); err != nil {
		return UsageFit{}, err
	}
	if hdr != nil {
		u.made, u.history, u.rows = *hdr, source, rows
	}
	ix.usage.view.Store(u)
	if hdr != nil && ix.opts.UsageViewPath != "" {
		// Saved in the background: a ranking waiting for the history
		// (rank's first) does not wait for the file too (WaitSaves).
		gen, h := ix.usageSaveGen(), *hdr
		ix.usage.saved.wg.Go(func() { ix.saveUsageView(gen, h, u) })
	}
	return u.loo, nil
}

// orderedUses is uses by agent, tool and request (a new slice): the same
// entries, in whatever order they come, make the same view and weight.
// Agents and tools are ranked first (a few names each, many entries), so
// that most comparisons are of two numbers.
func orderedUses(uses []Use) []Use {
	rank := func(name func(*Use) string) []int32 {
		ids := map[string]int32{}
		var names []string
		of := make([]int32, len(uses))
		for i := range uses {
			n := name(&uses[i])
			id, ok := ids[n]
			if !ok {
				id = int32(len(names))
				ids[n] = id
				names = append(names, n)
			}
			of[i] = id
		}
		order := make([]int32, len(names))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
		pos := make([]int32, len(names))
		for p, id := range order {
			pos[id] = int32(p)
		}
		for i, id := range of {
			of[i] = pos[id]
		}
		return of
	}
	agent := rank(func(u *Use) string { return u.Principal })
	tool := rank(func(u *Use) string { return u.Tool })
	perm := make([]int32, len(uses))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := cmp.Compare(agent[a], agent[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(tool[a], tool[b]); c != 0 {
			return c
		}
		return strings.Compare(uses[a].Request, uses[b].Request)
	})
	out := make([]Use, len(uses))
	for i, p := range perm {
		out[i] = uses[p]
	}
	return out
}

// ShareUsage makes the index rank with the usage history from has (a
// session's index of the same catalog and more).
func (ix *Index) ShareUsage(from *Index) { ix.usage.view.Store(from.usage.Load()) }

// UsageFit says how the usage in effect was weighed (zero: no usage).
func (ix *Index) UsageFit() UsageFit {
	if u := ix.usage.Load(); u != nil {
		return u.loo
	}
	return UsageFit{}
}

// buildUsage makes the view of uses (nil when none votes), and its
// principals' calls (all their entries').
func (ix *Index) buildUsage(ctx context.Context, uses []Use) (*usageView, []principalStats, error) {
	u := &usageView{dict: map[string]int32{}, byTool: map[string][]int32{}, failed: map[[16]byte]int32{}, silent: map[[16]byte]Use{}}
	agents := map[string]int32{}
	byName := map[string]*principalStats{}
	for i := range uses {
		e := &uses[i]
		st := byName[e.Principal]
		if st == nil {
			st = &principalStats{role: e.Role}
			byName[e.Principal] = st
		}
		st.calls += int64(max(e.Count, 1))
		st.ok += int64(max(e.Count, 1) - min(max(e.Failed, 0), max(e.Count, 1)))
	}
	toolIDs := map[string]int32{}
	texts := make([]string, 0, len(uses))
	df := map[string]int{}
	entryTerms := make([][]string, 0, len(uses))
	u.toolID = make([]int32, 0, len(uses))
	u.principal = make([]int32, 0, len(uses))
	// The requests' words, tokenized on all cores.
	toks := make([][]string, len(uses))
	parallel.Each(len(uses), func(i int) {
		if e := &uses[i]; e.Tool == "" || e.Count <= 0 || e.Failed < e.Count {
			toks[i] = uniq(terms(e.Request))
		}
	})
	for k, e := range uses {
		ts := toks[k]
		if len(ts) == 0 || e.Tool != "" && e.Count > 0 && e.Failed >= e.Count {
			// Failed calls never raise a tool; what they say of their
			// principal is kept.
			u.keep(e)
			continue
		}
		u.keepFailed(e)
		a, ok := agents[e.Principal]
		if !ok {
			a = int32(len(agents))
			agents[e.Principal] = a
			u.principals = append(u.principals, e.Principal)
		}
		u.ids = append(u.ids, e.idKey())
		i := int32(u.n)
		u.n++
		tid, ok := toolIDs[e.Tool]
		if !ok {
			tid = int32(len(u.tools))
			toolIDs[e.Tool] = tid
			u.tools = append(u.tools, e.Tool)
		}
		u.toolID = append(u.toolID, tid)
		u.principal = append(u.principal, a)
		u.calls = append(u.calls, int32(min(max(e.Count, 1)-max(e.Failed, 0), math.MaxInt32)))
		u.first = append(u.first, unixOf(e.First))
		u.byTool[e.Tool] = append(u.byTool[e.Tool], i)
		texts = append(texts, e.Request)
		entryTerms = append(entryTerms, ts)
		for _, t := range ts {
			df[t]++
		}
	}
	if u.n == 0 {
		return nil, nil, nil
	}
	u.nprincipals = len(agents)
	stats := make([]principalStats, len(u.principals))
	for p, name := range u.principals {
		stats[p] = *byName[name]
	}
	u.initVoices(stats)
	u.fullN = u.n
	u.text = texts
	// Terms, their IDF over the past requests, each entry's unit
	// IDF-weighted word vector and the inverted index.
	keys := make([]string, 0, len(df))
	for t := range df {
		keys = append(keys, t)
	}
	sort.Strings(keys)
	u.idf = make([]float64, len(keys))
	u.post = make([][]termWeight, len(keys))
	for id, t := range keys {
		u.dict[t] = int32(id)
		u.idf[id] = math.Log(1 + float64(u.n)/float64(df[t]))
	}
	u.wordsAt = make([]int32, 0, u.n+1)
	total := 0
	for _, ts := range entryTerms {
		total += len(ts)
	}
	u.words = make([]termWeight, 0, total)
	for id, t := range keys {
		u.post[id] = make([]termWeight, 0, df[t])
	}
	for i, ts := range entryTerms {
		u.wordsAt = append(u.wordsAt, int32(len(u.words)))
		var norm float64
		for _, t := range ts {
			w := u.idf[u.dict[t]]
			norm += w * w
		}
		norm = math.Sqrt(norm)
		at := len(u.words)
		u.words = u.words[:at+len(ts)]
		row := u.words[at:]
		for k, t := range ts {
			id := u.dict[t]
			row[k] = termWeight{id, float32(u.idf[id] / norm)}
			u.post[id] = append(u.post[id], termWeight{int32(i), row[k].w})
		}
		slices.SortFunc(row, func(a, b termWeight) int { return cmp.Compare(a.id, b.id) })
	}
	u.wordsAt = append(u.wordsAt, int32(len(u.words)))
	qvecs, qscale, dim, err := ix.usageEmbed(ctx, texts)
	if err != nil {
		return nil, nil, err
	}
	if qvecs != nil {
		u.dim, u.qvecs, u.qscale = dim, qvecs, qscale
	}
	return u, stats, nil
}

// unixOf is t in Unix seconds (0: zero); timeOf the reverse.
func unixOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func timeOf(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0)
}

// uniq returns the distinct strings of ts, in their first order.
func uniq(ts []string) []string {
	out := ts[:0:0]
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// usageEmbed returns the quantised unit vectors of texts, the whole
// history's requests (n × dim int8 components, n scales), embedding those
// not cached; nil without a usage embedder. A text the embedder fails on
// gets a zero row: it votes by its words only.
func (ix *Index) usageEmbed(ctx context.Context, texts []string) ([]int8, []float32, int, error) {
	e := ix.opts.UsageEmbedder
	if e == nil {
		return nil, nil, 0, nil
	}
	keys := make([][16]byte, len(texts)) // on all cores
	parallel.Each(len(texts), func(i int) { keys[i] = usageKey(texts[i]) })
	c := &ix.usage.vecs
	c.mu.Lock()
	defer c.mu.Unlock()
	dim := e.Dim()
	if c.byID != e.ID() || c.vecs == nil || c.vecs.dim != dim {
		c.byID, c.vecs = e.ID(), ix.loadUsageVectors(e.ID(), dim)
	}
	v := c.vecs
	q := make([]int8, len(texts)*dim)
	scale := make([]float32, len(texts))
	added := 0
	used := make([]bool, len(v.scale), len(v.scale)+len(texts)) // the rows texts take
	for i, t := range texts {
		r, ok := v.row[keys[i]]
		if !ok {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, nil, 0, err
				}
			}
			r = v.add(keys[i])
			raw, err := e.EmbedQuery(ctx, t)
			if err == nil && len(raw) == dim && checkVector(raw, dim) == nil {
				v.scale[r] = quantizeRow(v.q[int(r)*dim:(int(r)+1)*dim], normalized(raw))
			}
			added++
			used = append(used, false)
		}
		used[r] = true
		copy(q[i*dim:(i+1)*dim], v.q[int(r)*dim:])
		scale[i] = v.scale[r]
	}
	// texts are the whole history: the vectors of requests no longer in
	// it go (see usagecache.go).
	if pruned := v.keepOnly(used); added > 0 || pruned {
		ix.saveUsageVectors(e.ID(), v)
	}
	return q, scale, dim, nil
}

// usageQuery is a message's side of the usage signal.
type usageQuery struct {
	words []termWeight
	vec   quantQuery // no q: lexical only
}

// usageQueryOf prepares text (its vector comes from the usage embedder).
func (ix *Index) usageQueryOf(ctx context.Context, u *usageView, text string) usageQuery {
	var q usageQuery
	var norm float64
	for _, t := range uniq(terms(text)) {
		if id, ok := u.dict[t]; ok {
			w := u.idf[id]
			q.words = append(q.words, termWeight{id, float32(w)})
			norm += w * w
		}
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range q.words {
			q.words[i].w = float32(float64(q.words[i].w) / norm)
		}
	}
	sort.Slice(q.words, func(a, b int) bool { return q.words[a].id < q.words[b].id })
	if u.qvecs != nil && ix.opts.UsageEmbedder != nil {
		if v, err := ix.opts.UsageEmbedder.EmbedQuery(ctx, text); err == nil && len(v) == u.dim && checkVector(v, u.dim) == nil {
			q.vec = quantizeQuery(normalized(v))
		}
	}
	return q
}

// usageEvidence is what the history says of a message.
type usageEvidence struct {
	// p is each tool's share of the votes, P(t) (by every voice but the
	// authors', each as far as it is believed: usagevoice.go), and none
	// that of requests answered without a tool.
	p    map[string]float64
	none float64
	// owner is, per tool, how firmly the owner's own calls say it
	// (ownerFirmness); calls how many successful ones said it.
	owner map[string]float64
	calls map[string]int
	// author is, per tool, its author's examples' share of theirs.
	author map[string]float64
}

// evidence is what the history says of q (see usageEvidence), and its
// none (applyUsage takes both); exclude is a past request left out (-1:
// none): entry exclude and every other entry of the same request text
// (its calls of other tools, other principals' entries), as leave-one-out
// needs (usagefit.go).
func (u *usageView) evidence(q usageQuery, pool []Hit, exclude int32) (usageEvidence, float64) {
	sc := u.getScratch()
	defer u.putScratch(sc)
	if !u.vote(q, pool, leftOut{exclude, true}, ranking, usageCommon, sc) {
		return usageEvidence{}, 0
	}
	type tp struct {
		t int32
		p float64
	}
	ts := make([]tp, 0, len(sc.tools))
	var ev usageEvidence
	var best float64
	for _, t := range sc.tools {
		v := sc.toolP[t]
		if u.tools[t] == "" {
			ev.none = v
			continue
		}
		best = max(best, v)
		ts = append(ts, tp{t, v})
	}
	// Evidence under a thousandth of the best moves no score.
	ts = slices.DeleteFunc(ts, func(x tp) bool { return x.p < best/1000 || x.p == 0 })
	if len(ts) > usageKeep {
		// The tools with the most evidence; the rest would move no
		// score by more than a small fraction of theirs.
		slices.SortFunc(ts, func(a, b tp) int {
			if c := cmp.Compare(b.p, a.p); c != 0 {
				return c
			}
			return strings.Compare(u.tools[a.t], u.tools[b.t])
		})
		ts = ts[:usageKeep]
	}
	ev.p = make(map[string]float64, len(ts))
	for _, x := range ts {
		ev.p[u.tools[x.t]] = x.p
	}
	for _, t := range sc.apart {
		name := u.tools[t]
		if name == "" {
			continue
		}
		if f := sc.ownerP[t] * ownerFirmness(sc.ownerN[t]); f > 0 {
			if ev.owner == nil {
				ev.owner, ev.calls = map[string]float64{}, map[string]int{}
			}
			ev.owner[name], ev.calls[name] = f, int(sc.ownerN[t])
		}
		if a := sc.authorP[t]; a > 0 {
			if ev.author == nil {
				ev.author = map[string]float64{}
			}
			ev.author[name] = a
		}
	}
	return ev, ev.none
}

// voting says how a vote counts the entries near a message.
type voting struct {
	// trusted: each vote weighed by its entry's trust and cross trust
	// (usagetrust.go); else in full.
	trusted bool
	// weighed: the principals' votes are their voices' (usagevoice.go),
	// each voice's shares weighed by its weight over max(1, the weights
	// of the voices heard); else each principal's shares alike,
	// averaged.
	weighed bool
	// only, if ≥ 0, is the one principal whose entries vote; except, if
	// ≥ 0, one whose entries do not, but for those first recorded before
	// olderThan (Unix seconds; 0: none).
	only, except int32
	olderThan    int64
	// judge, if > 0, is the weight of the voice being judged (cross
	// trust): the others are heard over the weights of the voices heard,
	// or judge if that is more (rather than 1), so that what a believed
	// principal says of another counts in full, and what a crowd says of
	// a believed principal counts as little as the crowd weighs beside it.
	judge float64
	// apart: the owner's calls and the authors' examples are also
	// counted apart (sc.ownerP, ownerN, authorP; a ranking's evidence).
	apart bool
}

// ranking is how a ranking's evidence is voted.
var ranking = voting{trusted: true, weighed: true, only: -1, except: -1, apart: true}

// vote sets sc.toolP of sc.tools to the tools' shares of the votes of the
// past requests near q (false: none is near), counted as o says; words
// more than common past requests share are passed over but for the
// rarest (candidates); out is left out of the votes. The authors'
// examples never vote here: they are counted apart (o.apart) or not at
// all.
func (u *usageView) vote(q usageQuery, pool []Hit, out leftOut, o voting, common int, sc *usageScratch) bool {
	sc.qwords = q.words
	for _, tw := range q.words {
		sc.qw[tw.id] = tw.w
	}
	cand := u.candidates(q, pool, out, sc, common)
	if len(cand) == 0 {
		return false
	}
	// Each candidate's kernel and vote, each unit's (voice's, or
	// principal's) sum, and the tools' shares (dense arrays: a vote
	// costs no map lookup).
	votes := slices.Grow(sc.votes[:0], len(cand))[:len(cand)]
	kern := slices.Grow(sc.kern[:0], len(cand))[:len(cand)]
	sc.votes, sc.kern = votes, kern
	active := 0
	var heard, authorSum float64
	unitOf := func(i int32) int32 {
		if o.weighed {
			return u.voice.of[u.principal[i]]
		}
		return u.principal[i]
	}
	for c, i := range cand {
		votes[c], kern[c] = 0, 0
		p := u.principal[i]
		if (o.only >= 0 && p != o.only) || (o.except >= 0 && p == o.except && !(u.first[i] > 0 && u.first[i] < o.olderThan)) {
			continue
		}
		var s float64
		for _, tw := range u.row(i) {
			s += float64(sc.qw[tw.id] * tw.w)
		}
		if q.vec.q != nil {
			var ip [1]int32
			dotsI8(q.vec.q, u.qvecs[int(i)*u.dim:int(i+1)*u.dim], ip[:])
			d := float64(ip[0]) * q.vec.scale * float64(u.qscale[i])
			s = usageDense*d + (1-usageDense)*s
		}
		k := math.Exp(usageBeta * (s - 1))
		kern[c] = k
		if u.voice.role[p] == RoleAuthor {
			if o.apart {
				authorSum += k
			}
			continue
		}
		v := k
		if o.trusted && u.trust != nil {
			v *= float64(u.trust[i])
		}
		votes[c] = v
		a := unitOf(i)
		if sc.sum[a] == 0 && v > 0 {
			active++
			sc.units = append(sc.units, a)
			if o.weighed {
				heard += u.voice.weight[a]
			}
		}
		sc.sum[a] += v
	}
	norm := float64(active)
	switch {
	case o.weighed && o.judge > 0:
		norm = max(o.judge, heard)
	case o.weighed:
		norm = max(1, heard)
	}
	if active == 0 && authorSum == 0 {
		return false
	}
	mark := func(t int32) {
		if !sc.isApart[t] {
			sc.isApart[t] = true
			sc.apart = append(sc.apart, t)
		}
	}
	for c, i := range cand {
		t := u.toolID[i]
		if votes[c] == 0 {
			if kern[c] > 0 && o.apart && u.voice.role[u.principal[i]] == RoleAuthor {
				mark(t)
				sc.authorP[t] += kern[c] / (authorSum + usageK0)
			}
			continue
		}
		a := unitOf(i)
		share := votes[c] / (sc.sum[a] + usageK0)
		if o.trusted && int(i) < len(u.cross) {
			// What other principals contradict is lost, not given to
			// the principal's other tools. (An entry a delta is adding
			// has no cross trust yet: it counts in full while the
			// added ones' are set, as every entry does in a whole
			// build's first pass.)
			share *= float64(u.cross[i])
		}
		if sc.toolP[t] == 0 {
			sc.tools = append(sc.tools, t)
		}
		if o.weighed {
			sc.toolP[t] += u.voice.weight[a] * share / norm
		} else {
			sc.toolP[t] += share / norm
		}
		if o.apart && u.voice.role[u.principal[i]] == RoleOwner {
			mark(t)
			sc.ownerP[t] += share
			if kern[c] >= usageOwnerNear {
				sc.ownerN[t] += float64(u.calls[i])
			}
		}
	}
	return true
}

// candidates are the entries evidence compares q with; its cost is
// bounded whatever the size of the history. They are the usageLexical
// entries sharing the most rare words with the message (IDF-weighted; a
// word more than common (usageCommon) past requests share says little of which is
// near, but the rarest word of the message is used in any case), and for
// each of the best usagePool tools of the ranking, its usagePerTool
// entries sharing the most rare words with it (the entries a message with
// no word in common can still be near by meaning). Entries beyond those
// would share fewer words than the candidates, and their votes,
// exp(β·(s−1)), are small against the best ones'.
func (u *usageView) candidates(q usageQuery, pool []Hit, out leftOut, sc *usageScratch, common int) []int32 {
	lex := sc.lex
	touched := sc.touched[:0]
	defer func() { sc.touched = touched }()
	words := append([]termWeight(nil), q.words...)
	slices.SortFunc(words, func(a, b termWeight) int { return cmp.Compare(len(u.post[a.id]), len(u.post[b.id])) })
	for k, tw := range words {
		post := u.post[tw.id]
		if k > 0 && len(post) > common {
			break
		}
		for _, e := range post {
			if lex[e.id] == 0 {
				touched = append(touched, e.id)
			}
			lex[e.id] += tw.w * e.w
		}
	}
	// seen marks the candidates (cleared of them before returning: the
	// scratch bitmap is all zero between rankings).
	seen := sc.seen
	cand := sc.cand[:0]
	defer func() {
		for _, i := range cand {
			seen[i/64] &^= 1 << (i % 64)
		}
		sc.cand = cand
	}()
	add := func(i int32) {
		if out.entry >= 0 && (i == out.entry || out.request && u.text[i] == u.text[out.entry]) {
			return
		}
		if seen[i/64]&(1<<(i%64)) == 0 {
			seen[i/64] |= 1 << (i % 64)
			cand = append(cand, i)
		}
	}
	// touched is a set: reordering it in place loses nothing. Each group
	// of voices has slots of its own (the owner's; the established
	// principals'; the others'; the authors': voiceGroup), so that no
	// crowd of requests, however many and however alike, pushes another
	// voice's near requests out of the vote.
	var groups [voiceGroups][]int32
	for g := range groups {
		groups[g] = sc.groups[g][:0]
	}
	for _, i := range touched {
		g := u.voiceGroup(i)
		groups[g] = append(groups[g], i)
	}
	for g := range groups {
		for _, i := range topByScore(groups[g], lex, usageLexical) {
			add(i)
		}
		sc.groups[g] = groups[g]
	}
	for k, h := range pool {
		if k == usagePool {
			break
		}
		own := u.byTool[h.Name]
		if len(own) > usagePerTool {
			sc.own = append(sc.own[:0], own...)
			own = topByScore(sc.own, lex, usagePerTool)
		}
		for _, i := range own {
			add(i)
		}
	}
	return cand // sc's: valid until sc is put back
}

// leftOut is what a vote leaves out: no entry (entry −1), one entry, or
// with request, every entry of the same request text as well.
type leftOut struct {
	entry   int32
	request bool
}

// usageScratch is the per-ranking memory of evidence, zero between
// uses: arrays by entry, term, unit (voice or principal) and tool, and
// the slots set.
type usageScratch struct {
	lex     []float32    // by entry: the rare words' lexical cosine
	touched []int32      // entries with lex set
	qw      []float32    // by term: the message's weight
	qwords  []termWeight // the terms with qw set
	sum     []float64    // by unit: the sum of its votes
	units   []int32      // units with sum set
	toolP   []float64    // by tool id: its evidence
	tools   []int32      // tools with toolP set
	// by tool id, apart: the owner's share, its successful calls near,
	// and the authors' share; isApart marks the tools in apart.
	ownerP, ownerN, authorP []float64
	isApart                 []bool
	apart                   []int32
	seen                    []uint64  // by entry: a candidate already (bitmap)
	cand                    []int32   // the candidates being gathered
	votes, kern             []float64 // by candidate: its vote, its kernel
	own                     []int32   // a tool's entries being selected
	groups                  [voiceGroups][]int32
}

func (u *usageView) getScratch() *usageScratch {
	if sc, ok := u.scratch.Get().(*usageScratch); ok {
		return sc
	}
	nt := len(u.tools)
	return &usageScratch{lex: make([]float32, u.n), qw: make([]float32, len(u.idf)),
		sum: make([]float64, max(u.nprincipals, len(u.voice.weight))), toolP: make([]float64, nt),
		ownerP: make([]float64, nt), ownerN: make([]float64, nt), authorP: make([]float64, nt), isApart: make([]bool, nt),
		seen: make([]uint64, (u.n+63)/64)}
}

// putScratch zeroes what sc's use set and keeps it for the next.
func (u *usageView) putScratch(sc *usageScratch) {
	for _, i := range sc.touched {
		sc.lex[i] = 0
	}
	for _, tw := range sc.qwords {
		sc.qw[tw.id] = 0
	}
	for _, a := range sc.units {
		sc.sum[a] = 0
	}
	for _, t := range sc.tools {
		sc.toolP[t] = 0
	}
	for _, t := range sc.apart {
		sc.ownerP[t], sc.ownerN[t], sc.authorP[t], sc.isApart[t] = 0, 0, 0, false
	}
	sc.touched, sc.units, sc.tools, sc.apart, sc.qwords = sc.touched[:0], sc.units[:0], sc.tools[:0], sc.apart[:0], nil
	u.scratch.Put(sc)
}

// toolOf is entry i's tool ("" for no tool).
func (u *usageView) toolOf(i int32) string { return u.tools[u.toolID[i]] }

// row is entry i's words.
func (u *usageView) row(i int32) []termWeight { return u.words[u.wordsAt[i]:u.wordsAt[i+1]] }

// topByScore reorders ids so that the n with the highest score come
// first (ties: the earlier entry) and returns them; all of ids when there
// are no more than n. It selects in linear time on average.
func topByScore(ids []int32, score []float32, n int) []int32 {
	if len(ids) <= n {
		return ids
	}
	better := func(a, b int32) bool {
		if score[a] != score[b] {
			return score[a] > score[b]
		}
		return a < b
	}
	lo, hi := 0, len(ids)-1
	for lo < hi {
		// Hoare partition around the middle element.
		pivot := ids[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for better(ids[i], pivot) {
				i++
			}
			for better(pivot, ids[j]) {
				j--
			}
			if i <= j {
				ids[i], ids[j] = ids[j], ids[i]
				i++
				j--
			}
		}
		switch {
		case n-1 <= j:
			hi = j
		case n-1 >= i:
			lo = i
		default:
			return ids[:n]
		}
	}
	return ids[:n]
}

// applyUsage moves the ranking r by the history's evidence ev (none its
// none; see evidence), in three steps, each re-sorting (named tools stay
// first) and moving the answerability:
//
//   - the votes: w·P(t) added to each tool's score (w chosen by
//     leave-one-out, usagefit.go), the answerability raised by w·max P and
//     lowered by w·P(none);
//   - the owner's word: a tool the owner called successfully, again and
//     again, for requests like this one gets (1−score)·firmness more, and
//     the answerability (1−a)·firmness (usagevoice.go);
//   - the authors' examples: usageAuthorW·P_author(t) more, but never
//     past a tool that scored more before and is supported (by its own
//     text or the history, supported): examples bring their tool in where
//     there is room, they push no other out.
//
// It adds the tools the evidence points to that the ranking lacks (at
// most usageInject per step). known says whether a tool is in the
// catalog (and allowed): a removed tool's usage does nothing.
func applyUsage(r *Ranking, ev usageEvidence, none, w float64, known func(string) (bool, bool)) {
	named := 0
	for named < len(r.Hits) && r.Hits[named].Named {
		named++
	}
	// The votes.
	if w > 0 && (len(ev.p) > 0 || none > 0) {
		inject(r, ev.p, known)
		best := 0.0
		rest := r.Hits[named:]
		for i := range rest {
			if pt := ev.p[rest[i].Name]; pt > 0 {
				before := rest[i].Score
				rest[i].Score = math.Min(1, rest[i].Score+w*pt)
				rest[i].Usage += rest[i].Score - before
				best = math.Max(best, pt)
			}
		}
		sortRest(r.Hits[named:])
		if r.Answerable != nil && named == 0 {
			a := *r.Answerable
			a += (1 - a) * math.Min(1, w*best)
			a -= a * math.Min(1, w*none)
			r.Answerable = &a
		}
	}
	// The owner's word.
	if len(ev.owner) > 0 {
		inject(r, ev.owner, known)
		best := 0.0
		rest := r.Hits[named:]
		for i := range rest {
			if f := ev.owner[rest[i].Name]; f > 0 {
				before := rest[i].Score
				rest[i].Score += (1 - rest[i].Score) * f
				rest[i].Usage += rest[i].Score - before
				best = math.Max(best, f)
			}
		}
		sortRest(rest)
		if r.Answerable != nil && named == 0 {
			a := *r.Answerable
			a += (1 - a) * best
			r.Answerable = &a
		}
	}
	// The authors' examples.
	if len(ev.author) > 0 {
		inject(r, ev.author, known)
		rest := r.Hits[named:] // best first
		best := 0.0
		lowest := math.Inf(1) // the lowest supported score so far
		for i := range rest {
			h := &rest[i]
			sup := supported(h) && h.Score > 0 // before the examples
			pa := ev.author[h.Name]
			if pa > 0 {
				best = max(best, pa)
				score := math.Min(1, h.Score+usageAuthorW*pa)
				if lowest < math.Inf(1) {
					// Just below the supported tools before it.
					score = math.Min(score, lowest*(1-1e-3))
				}
				if score > h.Score {
					h.Usage += score - h.Score
					h.Score = score
				}
			}
			if sup {
				lowest = min(lowest, h.Score)
			}
		}
		sortRest(rest)
		if r.Answerable != nil && named == 0 {
			a := *r.Answerable
			a += (1 - a) * math.Min(1, usageAuthorW*best)
			r.Answerable = &a
		}
	}
}

// supported reports whether a hit is supported by more than its
// author's examples: it scores at least usageSupportFloor, and its text
// matches a real word of the message (Words: a class, a number or a
// phrase of stop words alone is no match), or resembles it (dense at
// least usageSupportDense), or the history raised it, or the message
// names it. A tool only weakly near the message (a dense score under
// usageSupportDense and no word of it) is not.
func supported(h *Hit) bool {
	return h.Score >= usageSupportFloor && (h.Words || h.Dense >= usageSupportDense || h.Usage > 0 || h.Named)
}

// inject adds to r the tools of p it lacks (the usageInject with the most
// of p that the catalog has and allows), with no score.
func inject(r *Ranking, p map[string]float64, known func(string) (bool, bool)) {
	in := make(map[string]bool, len(r.Hits))
	for _, h := range r.Hits {
		in[h.Name] = true
	}
	type cand struct {
		name string
		p    float64
	}
	extra := make([]cand, 0, len(p))
	for t, pt := range p {
		if !in[t] {
			extra = append(extra, cand{t, pt})
		}
	}
	slices.SortFunc(extra, func(a, b cand) int {
		if c := cmp.Compare(b.p, a.p); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	// Asked in order, so that the rest are never looked up.
	n := 0
	for _, c := range extra {
		if n == usageInject {
			break
		}
		if ok, allowed := known(c.name); ok && allowed {
			r.Hits = append(r.Hits, Hit{Name: c.name})
			n++
		}
	}
}

// sortRest sorts hits best first, ties by name.
func sortRest(hits []Hit) {
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
