package index

// Usage: what this installation's agents called for which request, as a
// signal of its own (not text pasted into the tools' documents).
//
// For a message, each past request near it votes for the tool it led to.
// A past request's nearness is s = a·dense + (1−a)·lexical: the cosine of
// the two texts' vectors (Options.UsageEmbedder, the built-in embedder:
// local, cheap, and stable, so the vectors can be cached by text), and
// the cosine of their IDF-weighted words (IDF over the past requests).
// Its vote is the kernel exp(β·(s−1)). A tool's usage evidence is the
// share of the votes it gets, against a fixed mass k0 that stands for
// "none of the past requests": P(t) = Σ_{requests of t} vote /
// (Σ all votes + k0). Far requests give tiny votes, so a message like no
// past request gets nothing; requests near it that went to different
// tools split the evidence. Each agent's requests vote among themselves
// and the agents' shares are averaged, so one agent's flood of records
// moves a tool at most by its share among the agents; a request whose
// calls all failed does not vote; one merged entry (identical requests of
// an agent for a tool) is one vote however often it was made.
//
// A candidate's score becomes min(1, score + w·P(t)), tools the usage
// points to join the ranking, and the answerability moves toward 1 by
// w·max P(t) and toward 0 by w·P(none), where "none" are the requests
// that ended with no tool called. w is chosen from the installation's own
// history: leave-one-out over a sample of its past requests (each ranked
// as a new one, without its own entry), the w of a small grid with the
// best Recall@5 whose gain passes a sign test (usagefit.go);
// with little or misleading history it comes out 0. With no usage the
// ranking is untouched.
//
// β, k0 and a were chosen on usage simulated from the training sources
// (each catalog's requests split into past and new; with all past
// requests, two per tool, and 30% credited to a wrong tool): see
// train/usage.

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"
)

// Use is one entry of the usage history as the index uses it: identical
// requests of an agent for a tool, merged.
type Use struct {
	Request string
	// Tool is the tool called; "" when the request was answered and no
	// tool was used.
	Tool  string
	Agent string
	// Count calls, of which Failed failed.
	Count, Failed int
	Last          time.Time
}

// The usage signal's constants (see the file comment).
const (
	usageBeta  = 10.0
	usageK0    = 0.01
	usageDense = 0.6
	// usagePool: the dense part is computed for the entries of the best
	// usagePool tools of the ranking and for entries sharing a word with
	// the message (an inverted index): the rest would vote nothing.
	usagePool = 30
	// usageInject bounds the tools the usage adds below the ranking.
	usageInject = 10
	// usageLOO is the sample of past requests the weight is chosen on.
	usageLOO = 150
)

// usageGrid are the weights the leave-one-out choice considers.
var usageGrid = [...]float64{0, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 3, 5}

// usageView is the usage history, ready to score: built by SetUsage,
// read-only afterwards.
type usageView struct {
	n      int
	text   []string // per entry: the request
	tool   []string // per entry ("" for no tool)
	agent  []int32  // per entry
	agents int
	dim    int
	vecs   []float32 // n × dim unit vectors (nil: no dense part)
	// words: per entry, its terms' ids and weights (IDF, unit norm);
	// post: per term id, the entries that have it.
	words  [][]termWeight
	post   [][]int32
	dict   map[string]int32
	idf    []float64
	byTool map[string][]int32
	// w is the weight chosen by leave-one-out; loo what it saw.
	w   float64
	loo UsageFit
}

type termWeight struct {
	id int32
	w  float32
}

// UsageFit says how the usage weight was chosen.
type UsageFit struct {
	// Entries are the usage entries in effect; Sample the past requests
	// the weight was chosen on.
	Entries, Sample int
	// Weight is the chosen w; Recall the sample's Recall@5 with it, and
	// Base without usage.
	Weight, Recall, Base float64
}

// usageVectors caches the usage requests' vectors by text, for the life
// of the index (and its cache file: usagecache.go).
type usageVectors struct {
	mu   sync.Mutex
	byID string // the embedder the vectors are of
	m    map[string][]float32
}

// SetUsage replaces the usage history the index ranks with (nil or empty:
// none). It embeds the requests it has no vector for (a few tens of
// microseconds each with the built-in embedder; cached by text, in memory
// and in the cache directory) and chooses the usage weight by
// leave-one-out over a sample of the history (a ranking each). Rankings
// go on meanwhile with the history before.
func (ix *Index) SetUsage(ctx context.Context, uses []Use) (UsageFit, error) {
	u, err := ix.buildUsage(ctx, uses)
	if err != nil || u == nil {
		ix.usage.Store(u)
		return UsageFit{}, err
	}
	if err := ix.fitUsage(ctx, u); err != nil {
		return UsageFit{}, err
	}
	ix.usage.Store(u)
	return u.loo, nil
}

// ShareUsage makes the index rank with the usage history from has (a
// session's index of the same catalog and more).
func (ix *Index) ShareUsage(from *Index) { ix.usage.Store(from.usage.Load()) }

// UsageFit says how the usage in effect was weighed (zero: no usage).
func (ix *Index) UsageFit() UsageFit {
	if u := ix.usage.Load(); u != nil {
		return u.loo
	}
	return UsageFit{}
}

// buildUsage makes the view of uses (nil when none votes).
func (ix *Index) buildUsage(ctx context.Context, uses []Use) (*usageView, error) {
	u := &usageView{dict: map[string]int32{}, byTool: map[string][]int32{}}
	agents := map[string]int32{}
	var texts []string
	df := map[string]int{}
	var entryTerms [][]string
	for _, e := range uses {
		if e.Tool != "" && e.Count > 0 && e.Failed >= e.Count {
			continue // failed calls never raise a tool
		}
		ts := uniq(terms(e.Request))
		if len(ts) == 0 {
			continue
		}
		a, ok := agents[e.Agent]
		if !ok {
			a = int32(len(agents))
			agents[e.Agent] = a
		}
		i := int32(u.n)
		u.n++
		u.tool = append(u.tool, e.Tool)
		u.agent = append(u.agent, a)
		u.byTool[e.Tool] = append(u.byTool[e.Tool], i)
		texts = append(texts, e.Request)
		entryTerms = append(entryTerms, ts)
		for _, t := range ts {
			df[t]++
		}
	}
	if u.n == 0 {
		return nil, nil
	}
	u.agents = len(agents)
	u.text = texts
	// Terms, their IDF over the past requests, each entry's unit
	// IDF-weighted word vector and the inverted index.
	keys := make([]string, 0, len(df))
	for t := range df {
		keys = append(keys, t)
	}
	sort.Strings(keys)
	u.idf = make([]float64, len(keys))
	u.post = make([][]int32, len(keys))
	for id, t := range keys {
		u.dict[t] = int32(id)
		u.idf[id] = math.Log(1 + float64(u.n)/float64(df[t]))
	}
	u.words = make([][]termWeight, u.n)
	for i, ts := range entryTerms {
		var norm float64
		for _, t := range ts {
			w := u.idf[u.dict[t]]
			norm += w * w
		}
		norm = math.Sqrt(norm)
		row := make([]termWeight, len(ts))
		for k, t := range ts {
			id := u.dict[t]
			row[k] = termWeight{id, float32(u.idf[id] / norm)}
			u.post[id] = append(u.post[id], int32(i))
		}
		sort.Slice(row, func(a, b int) bool { return row[a].id < row[b].id })
		u.words[i] = row
	}
	vecs, dim, err := ix.usageEmbed(ctx, texts)
	if err != nil {
		return nil, err
	}
	u.vecs, u.dim = vecs, dim
	return u, nil
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

// usageEmbed returns the unit vectors of texts (n × dim), embedding those
// not cached; nil without a usage embedder.
func (ix *Index) usageEmbed(ctx context.Context, texts []string) ([]float32, int, error) {
	e := ix.opts.UsageEmbedder
	if e == nil {
		return nil, 0, nil
	}
	c := &ix.usageVecs
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID != e.ID() || c.m == nil {
		c.byID, c.m = e.ID(), ix.loadUsageVectors(e.ID())
	}
	dim := e.Dim()
	out := make([]float32, len(texts)*dim)
	added := 0
	for i, t := range texts {
		k := usageKey(t)
		v, ok := c.m[string(k[:])]
		if !ok {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, 0, err
				}
			}
			raw, err := e.EmbedQuery(ctx, t)
			if err != nil || len(raw) != dim || checkVector(raw, dim) != nil {
				v = make([]float32, dim) // no vector: the entry votes by its words only
			} else {
				v = normalized(raw)
			}
			c.m[string(k[:])] = v
			added++
		}
		copy(out[i*dim:], v)
	}
	if added > 0 {
		ix.saveUsageVectors(e.ID(), c.m)
	}
	return out, dim, nil
}

// usageQuery is a message's side of the usage signal.
type usageQuery struct {
	words []termWeight
	vec   []float32 // nil: lexical only
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
	if u.vecs != nil && ix.opts.UsageEmbedder != nil {
		if v, err := ix.opts.UsageEmbedder.EmbedQuery(ctx, text); err == nil && len(v) == u.dim && checkVector(v, u.dim) == nil {
			q.vec = normalized(v)
		}
	}
	return q
}

// evidence is P(t) for the tools the past requests near q point to, and
// P(none); exclude is an entry left out (-1: none).
func (u *usageView) evidence(q usageQuery, pool []Hit, exclude int32) (map[string]float64, float64) {
	mark := make(map[int32]bool)
	var cand []int32
	add := func(i int32) {
		if i != exclude && !mark[i] {
			mark[i] = true
			cand = append(cand, i)
		}
	}
	for _, tw := range q.words {
		for _, i := range u.post[tw.id] {
			add(i)
		}
	}
	for k, h := range pool {
		if k == usagePool {
			break
		}
		for _, i := range u.byTool[h.Name] {
			add(i)
		}
	}
	if len(cand) == 0 {
		return nil, 0
	}
	type agentSum struct {
		total float64
		tools map[string]float64
	}
	sums := make([]agentSum, u.agents)
	for _, i := range cand {
		s := lexicalCos(q.words, u.words[i])
		if q.vec != nil {
			d := float64(dot(q.vec, u.vecs[int(i)*u.dim:int(i+1)*u.dim]))
			s = usageDense*d + (1-usageDense)*s
		}
		k := math.Exp(usageBeta * (s - 1))
		a := &sums[u.agent[i]]
		a.total += k
		if a.tools == nil {
			a.tools = map[string]float64{}
		}
		a.tools[u.tool[i]] += k
	}
	active := 0
	for _, a := range sums {
		if a.total > 0 {
			active++
		}
	}
	p := map[string]float64{}
	for _, a := range sums {
		if a.total == 0 {
			continue
		}
		for t, k := range a.tools {
			p[t] += k / (a.total + usageK0) / float64(active)
		}
	}
	none := p[""]
	delete(p, "")
	return p, none
}

// lexicalCos is the cosine of two sorted unit word vectors.
func lexicalCos(a, b []termWeight) float64 {
	var s float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].id == b[j].id:
			s += float64(a[i].w) * float64(b[j].w)
			i++
			j++
		case a[i].id < b[j].id:
			i++
		default:
			j++
		}
	}
	return s
}

// applyUsage adds w·P(t) to the hits' scores, adds the tools the usage
// points to (at most usageInject that the ranking lacks), re-sorts (named
// tools stay first) and moves the answerability. known says whether a
// tool is in the catalog (and allowed): a removed tool's usage does
// nothing.
func applyUsage(r *Ranking, p map[string]float64, none, w float64, known func(string) (bool, bool)) {
	if w == 0 || (len(p) == 0 && none == 0) {
		return
	}
	in := make(map[string]bool, len(r.Hits))
	for _, h := range r.Hits {
		in[h.Name] = true
	}
	var extra []Hit
	for t := range p {
		if in[t] {
			continue
		}
		if ok, allowed := known(t); ok && allowed {
			extra = append(extra, Hit{Name: t})
		}
	}
	sort.Slice(extra, func(a, b int) bool {
		if p[extra[a].Name] != p[extra[b].Name] {
			return p[extra[a].Name] > p[extra[b].Name]
		}
		return extra[a].Name < extra[b].Name
	})
	if len(extra) > usageInject {
		extra = extra[:usageInject]
	}
	r.Hits = append(r.Hits, extra...)
	named := 0
	for named < len(r.Hits) && r.Hits[named].Named {
		named++
	}
	best := 0.0
	rest := r.Hits[named:]
	for i := range rest {
		if pt := p[rest[i].Name]; pt > 0 {
			rest[i].Score = math.Min(1, rest[i].Score+w*pt)
			best = math.Max(best, pt)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool {
		if rest[a].Score != rest[b].Score {
			return rest[a].Score > rest[b].Score
		}
		return rest[a].Name < rest[b].Name
	})
	if r.Answerable != nil && named == 0 {
		a := *r.Answerable
		a += (1 - a) * math.Min(1, w*best)
		a -= a * math.Min(1, w*none)
		r.Answerable = &a
	}
}
