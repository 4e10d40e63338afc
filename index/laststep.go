package index

// The learned last step (package learn): the best hybrid candidates are
// re-scored by a small model over features this file computes, and the
// ranking says how likely it is that any tool serves the message
// (Ranking.Answerable). It applies to hybrid rankings with a query vector,
// when the index's embedder is of the family the model was trained on;
// otherwise rankings are the fixed fusion, as before.

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"

	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/text"
)

// Document fields, by their position in document.fields (newDocument).
const (
	fieldName = iota
	fieldDescription
	fieldKeywords
	fieldArgs
	numShortFields // the prompt (field 4) is not recorded per field
)

// fieldPrompt is the position of the prompt in document.fields.
const fieldPrompt = numShortFields

// shortTerms records, per slot, the distinct terms of a document's short
// fields (name, description, keywords, argument names) as sorted
// id<<4 | field mask, so the last step can tell in which field a query word
// matched. Guarded like the rest of the view.
type shortTerms struct {
	bySlot [][]uint32
	buf    []uint32 // scratch (updates are serialised)
}

// set records the short-field terms lex.add just saw (lex.short) for
// slot s.
func (st *shortTerms) set(s int, lex *lexicon) {
	for len(st.bySlot) <= s {
		st.bySlot = append(st.bySlot, nil)
	}
	out := append(st.buf[:0], lex.short...)
	slices.Sort(out)
	// merge entries of the same term (their masks OR together)
	w := 0
	for _, x := range out {
		if w > 0 && out[w-1]>>4 == x>>4 {
			out[w-1] |= x & 0xf
			continue
		}
		out[w] = x
		w++
	}
	st.buf = out
	st.bySlot[s] = slices.Clone(out[:w])
}

func (st *shortTerms) clear(s int) {
	if s < len(st.bySlot) {
		st.bySlot[s] = nil
	}
}

// mask returns the field mask of term id in slot s (0: in no short field).
func (st *shortTerms) mask(s int, id int32) uint32 {
	if s >= len(st.bySlot) {
		return 0
	}
	row := st.bySlot[s]
	i := sort.Search(len(row), func(i int) bool { return row[i]>>4 >= uint32(id) })
	if i < len(row) && row[i]>>4 == uint32(id) {
		return row[i] & 0xf
	}
	return 0
}

// lastStep returns the model that applies to rankings of v, or nil.
func (ix *Index) lastStep(v *view, q Query, qvec []float32) *learn.Model {
	if q.poolOnly || qvec == nil || v.dim != len(qvec) {
		return nil
	}
	return ix.model(q)
}

// model is the learned model for hybrid rankings of this index's embedder
// (nil: none, or turned off).
func (ix *Index) model(q Query) *learn.Model {
	if ix.opts.NoLastStep || q.NoLastStep || q.Mode != Hybrid && q.Mode != "" {
		return nil
	}
	m := ix.opts.LastStep
	if m == nil {
		d, err := learn.Default()
		if err != nil {
			return nil
		}
		m = d
	}
	if !m.Applies(ix.base.ID()) {
		return nil
	}
	return m
}

// LearnedID is the ID of the learned last step this index's hybrid
// rankings use ("" when none applies or it is turned off): what a
// thresholds file tuned on these scores names.
func (ix *Index) LearnedID() string {
	if m := ix.model(Query{}); m != nil {
		return m.ID
	}
	return ""
}

// rankLearned is v.rank followed by the learned last step when it applies.
// Caller holds Index.mu for reading.
func (ix *Index) rankLearned(v *view, q Query, lexQ map[string]float64, lx *lexical, qvec []float32, u *usageView, uq usageQuery) Ranking {
	alpha := ix.opts.LexicalWeight
	m := ix.lastStep(v, q, qvec)
	bq := q
	if m != nil && bq.K > 0 && bq.K < m.Pool {
		bq.K = m.Pool
	}
	if u != nil && bq.K > 0 && bq.K < usagePool {
		bq.K = usagePool
	}
	r := v.rank(bq, lx, qvec, alpha)
	if m != nil {
		v.applyLastStep(m, ix.probeLogitsFor(m), &r, q.Text, lx.query(), qvec)
	}
	if u != nil && u.speaks() {
		p, none := u.evidence(uq, r.Hits, -1)
		applyUsage(&r, p, none, u.w, func(t string) (bool, bool) {
			_, ok := v.byName[t]
			return ok, q.Allow == nil || q.Allow(t)
		})
	}
	if q.K > 0 && len(r.Hits) > q.K {
		r.Hits = r.Hits[:q.K]
	}
	return r
}

// applyLastStep re-scores the best m.Pool hits of r (sorted, hybrid scores)
// and sets r.Answerable (calibrated with the catalog's probe logits, if
// any). Named tools stay first with score 1; the other pool hits get
// answerability × their share; the rest keep their order below the pool,
// their hybrid scores scaled under the pool's lowest score.
func (v *view) applyLastStep(m *learn.Model, probes []float64, r *Ranking, text string, lq lexQuery, qvec []float32) {
	hits := r.Hits
	named := 0
	for named < len(hits) && hits[named].Named {
		named++
	}
	pool := hits[named:min(len(hits), named+m.Pool)]
	if len(pool) == 0 {
		a := 0.0
		if named > 0 {
			a = 1
		}
		r.Answerable = &a
		return
	}
	tw, tv := v.queryTerms(text)
	fs := v.poolFeatures(lq, qvec, pool, tw, tv)
	logits := make([]float64, len(pool))
	shares := make([]float64, len(pool))
	qf := fs.query
	m.Scores(fs.cand, logits, shares, &qf)
	p := m.Calibrated(m.Logit(&qf), probes)
	lastHybrid := pool[len(pool)-1].Score
	order := make([]int, len(pool))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		if shares[order[a]] != shares[order[b]] {
			return shares[order[a]] > shares[order[b]]
		}
		return pool[order[a]].Name < pool[order[b]].Name
	})
	re := make([]Hit, len(pool))
	low := 1.0
	for i, j := range order {
		re[i] = pool[j]
		re[i].Score = p * shares[j]
		low = min(low, re[i].Score)
	}
	copy(pool, re)
	for i := named + len(pool); i < len(hits); i++ {
		if lastHybrid > 0 {
			hits[i].Score = 0.5 * low * hits[i].Score / lastHybrid
		} else {
			hits[i].Score = 0
		}
	}
	if named > 0 {
		p = 1
	}
	r.Answerable = &p
}

// poolSet is the features of one pool of candidates.
type poolSet struct {
	cand  [][learn.NumCand]float64
	query [learn.NumAns]float64 // the query's own part (AnsUnknown, AnsTerms, AnsCatalog)
}

type queryTerm struct {
	id   int32 // -1: no tool has it
	w    float64
	rare bool
	opt  bool // a tie-breaker (bm25Plan): counts only beside a word
}

// lexQuery is a message's lexical terms that count in a view (view.known)
// and whether its optional terms only break ties (some tool holds a real
// word of it: bm25Plan).
type lexQuery struct {
	terms map[string]float64
	ties  bool
}

// query is the lexical query lx scores.
func (lx *lexical) query() lexQuery {
	return lexQuery{terms: lx.terms, ties: lx.plan.words > 0}
}

// lexQueryOf is lexQ as a view's lexical side sees it (lexical.query).
// Caller holds Index.mu for reading.
func (v *view) lexQueryOf(lexQ map[string]float64) lexQuery {
	known := v.known(lexQ)
	ties := false
	for t := range known {
		if !text.Optional(t) && v.lex.df(t) > 0 {
			ties = true
			break
		}
	}
	return lexQuery{terms: known, ties: ties}
}

// poolFeatures computes the last step's features for pool (hits of v,
// best hybrid first, none named). Caller holds Index.mu for reading.
func (v *view) poolFeatures(lq lexQuery, qvec []float32, pool []Hit, tw []float32, tv [][]float32) poolSet {
	n := len(pool)
	fs := poolSet{cand: make([][learn.NumCand]float64, n)}
	qts, inv := v.queryWords(lq, &fs.query)
	slots := make([]int, n)
	for i, h := range pool {
		slots[i] = v.byName[h.Name]
	}
	v.coverAll(fs.cand, slots, qts, inv)
	cos, bg, mean, sd := v.poolCosines(qvec, slots)
	if len(tv) > 0 && v.nvec > 0 {
		v.termFeatures(fs.cand, slots, tw, tv)
	}
	lexRank := rankOrder(pool, func(h Hit) float64 { return h.Lexical })
	denseRank := rankOrder(pool, func(h Hit) float64 { return h.Dense })
	for i, h := range pool {
		f := &fs.cand[i]
		f[learn.CandScore] = h.Score
		f[learn.CandLexical] = h.Lexical
		f[learn.CandDense] = h.Dense
		f[learn.CandCosBg] = cos[i] - bg
		f[learn.CandZPool] = (cos[i] - mean) / sd
		v.fieldFeatures(f, slots[i], qts, inv)
		f[learn.CandRank] = math.Log2(float64(i + 1))
		if i+1 < n {
			f[learn.CandMarginNext] = h.Score - pool[i+1].Score
		}
		f[learn.CandGapTop] = pool[0].Score - h.Score
		f[learn.CandLexRank] = math.Log2(float64(lexRank[i] + 1))
		f[learn.CandDenseRank] = math.Log2(float64(denseRank[i] + 1))
	}
	return fs
}

// queryWords returns the query's words, weight = query weight × IDF, the
// rarest word the catalog knows (the highest IDF among those some tool
// has) marked, and inv, 1 / their total weight (0 without words); it sets
// the query's own features in q (AnsUnknown, AnsTerms, AnsCatalog). As in
// the lexical score, where lq's optional terms only break ties they are
// not in the total nor the rarest word, and they add to a tool's coverage
// only beside a word, at most tieShare of it (tieBreak).
func (v *view) queryWords(lq lexQuery, q *[learn.NumAns]float64) (qts []queryTerm, inv float64) {
	lexQ := lq.terms
	qts = make([]queryTerm, 0, len(lexQ))
	var total, unknown float64
	rareIdx, rareIDF := -1, -1.0
	keys := make([]string, 0, len(lexQ))
	for t := range lexQ {
		keys = append(keys, t)
	}
	sort.Strings(keys) // a fixed order: sums do not depend on map order
	for _, t := range keys {
		qw := lexQ[t]
		idf := v.lex.idf(t)
		w := qw * idf
		opt := lq.ties && text.Optional(t)
		if !opt {
			total += w
		}
		id, ok := v.lex.dict[t]
		if !ok || id < 0 || len(v.lex.postings[id]) == 0 {
			if !ok || id >= 0 {
				unknown += w
			}
			if ok && id < 0 { // stopword: not a query word
				if !opt {
					total -= w
				}
				continue
			}
			qts = append(qts, queryTerm{id: -1, w: w, opt: opt})
			continue
		}
		if idf > rareIDF && !opt {
			rareIdx, rareIDF = len(qts), idf
		}
		qts = append(qts, queryTerm{id: id, w: w, opt: opt})
	}
	if rareIdx >= 0 {
		qts[rareIdx].rare = true
	}
	if total > 0 {
		inv = 1 / total
		q[learn.AnsUnknown] = unknown / total
	}
	q[learn.AnsTerms] = math.Log1p(float64(len(qts)))
	q[learn.AnsCatalog] = math.Log10(float64(max(1, len(v.byName))))
	return qts, inv
}

// coverAll sets each candidate's coverage anywhere in the document
// (CandCovAll) and whether it has the rarest word (CandRare): it looks each
// candidate's own words up among the query's (a candidate has a few dozen
// words; a common word, thousands of tools), and adds the weights of those
// it has in the query's order.
func (v *view) coverAll(cand [][learn.NumCand]float64, slots []int, qts []queryTerm, inv float64) {
	type known struct{ id, k int32 }
	byID := make([]known, 0, len(qts))
	for k, qt := range qts {
		if qt.id >= 0 {
			byID = append(byID, known{qt.id, int32(k)})
		}
	}
	if len(byID) == 0 {
		return
	}
	slices.SortFunc(byID, func(a, b known) int { return cmp.Compare(a.id, b.id) })
	var maybe [16]uint64 // a bit for each query word's id mod 1024: most words miss it
	for _, x := range byID {
		maybe[x.id>>6&15] |= 1 << (x.id & 63)
	}
	has := make([]bool, len(qts))
	for i, s := range slots {
		clear(has)
		for _, id := range v.lex.docTerms[s] {
			if maybe[id>>6&15]&(1<<(id&63)) == 0 {
				continue
			}
			if j, ok := slices.BinarySearchFunc(byID, id, func(x known, id int32) int { return cmp.Compare(x.id, id) }); ok {
				has[byID[j].k] = true
			}
		}
		f := &cand[i]
		var opt float64
		for k, qt := range qts {
			switch {
			case !has[k]:
			case qt.opt:
				opt += qt.w * inv
			default:
				f[learn.CandCovAll] += qt.w * inv
				if qt.rare {
					f[learn.CandRare] = 1
				}
			}
		}
		if opt > 0 {
			f[learn.CandCovAll] = tieBreak(f[learn.CandCovAll], opt)
		}
	}
}

// poolCosines returns the candidates' exact cosines with the query (the
// background for a tool without a vector), the background (the query's
// mean cosine over the catalog), and the cosines' mean and standard
// deviation (at least 1e-3) within the pool.
func (v *view) poolCosines(qvec []float32, slots []int) (cos []float64, bg, mean, sd float64) {
	n := len(slots)
	bg, _ = v.background(qvec)
	cos = make([]float64, n)
	for i, s := range slots {
		if v.slots[s].vec {
			cos[i] = float64(dot(qvec, v.rows[s]))
		} else {
			cos[i] = bg
		}
		mean += cos[i]
	}
	mean /= float64(n)
	for _, c := range cos {
		sd += (c - mean) * (c - mean)
	}
	sd = math.Max(math.Sqrt(sd/float64(n)), 1e-3)
	return cos, bg, mean, sd
}

// termFeatures sets CandTermMean, CandTermMin and CandTermRel: each query
// word (unit vectors tv, weights tw) against each candidate, its cosine
// with the tool's vector above its mean cosine over the catalog (what the
// catalog's average tool has of it).
func (v *view) termFeatures(cand [][learn.NumCand]float64, slots []int, tw []float32, tv [][]float32) {
	n := len(slots)
	var wsum float64
	for _, w := range tw {
		wsum += float64(w)
	}
	mins := make([]float64, n)
	for i := range mins {
		mins[i] = math.Inf(1)
	}
	ct := make([]float64, n)
	for t, e := range tv {
		w := float64(tw[t]) / wsum
		tbg, _ := v.background(e)
		best := math.Inf(-1)
		for i, s := range slots {
			c := 0.0
			if v.slots[s].vec {
				c = float64(dot(e, v.rows[s])) - tbg
			}
			ct[i] = c
			best = max(best, c)
		}
		for i := range slots {
			f := &cand[i]
			f[learn.CandTermMean] += w * ct[i]
			mins[i] = min(mins[i], ct[i])
			if best > 1e-6 {
				f[learn.CandTermRel] += w * ct[i] / best
			}
		}
	}
	for i := range slots {
		cand[i][learn.CandTermMin] = mins[i]
	}
}

// fieldFeatures sets the features of the fields of the tool in slot s: the
// share of its name's words the query has (CandNameHit) and the query's
// coverage in its name, description, keywords and arguments.
func (v *view) fieldFeatures(f *[learn.NumCand]float64, s int, qts []queryTerm, inv float64) {
	var nameTerms, nameHits float64
	for _, x := range v.short.row(s) {
		if x&(1<<fieldName) == 0 {
			continue
		}
		nameTerms++
		id := int32(x >> 4)
		for _, qt := range qts {
			if qt.id == id {
				nameHits++
				break
			}
		}
	}
	if nameTerms > 0 {
		f[learn.CandNameHit] = nameHits / nameTerms
	}
	covs := [...]struct {
		feature, field int
	}{{learn.CandCovName, fieldName}, {learn.CandCovDesc, fieldDescription},
		{learn.CandCovKeywords, fieldKeywords}, {learn.CandCovArgs, fieldArgs}}
	var opt [len(covs)]float64
	for _, qt := range qts {
		if qt.id < 0 {
			continue
		}
		mk := v.short.mask(s, qt.id)
		for k, c := range covs {
			switch {
			case mk&(1<<c.field) == 0:
			case qt.opt:
				opt[k] += qt.w * inv
			default:
				f[c.feature] += qt.w * inv
			}
		}
	}
	for k, c := range covs {
		if opt[k] > 0 {
			f[c.feature] = tieBreak(f[c.feature], opt[k])
		}
	}
}

// termEmbedder is an embedder that can say which words of a message it
// pools, with their weights and unit vectors (the built-in one can).
type termEmbedder interface {
	QueryTerms(ctx context.Context, text string) ([]float32, [][]float32, error)
}

// queryTerms returns the message's words as the view's embedder weighs
// them, if it can say.
func (v *view) queryTerms(text string) ([]float32, [][]float32) {
	te, ok := v.emb.(termEmbedder)
	if !ok {
		return nil, nil
	}
	w, vecs, err := te.QueryTerms(context.Background(), text)
	if err != nil || len(vecs) == 0 || len(vecs[0]) != v.dim {
		return nil, nil
	}
	return w, vecs
}

func (st *shortTerms) row(s int) []uint32 {
	if s < len(st.bySlot) {
		return st.bySlot[s]
	}
	return nil
}

// rankOrder returns each hit's 0-based rank by key (higher first; ties keep
// the hits' order).
func rankOrder(hits []Hit, key func(Hit) float64) []int {
	idx := make([]int, len(hits))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return key(hits[idx[a]]) > key(hits[idx[b]]) })
	out := make([]int, len(hits))
	for r, i := range idx {
		out[i] = r
	}
	return out
}

// Candidates are the last step's inputs for one message: the pool (the best
// hybrid hits, named tools left out, best first) and each one's features.
type Candidates struct {
	Hits []Hit
	Cand [][learn.NumCand]float64
	// Query holds the query's own answerability features (AnsUnknown,
	// AnsTerms, AnsCatalog); learn.Model.Scores fills in the rest.
	Query [learn.NumAns]float64
	// Named are tools the message names (they rank first, outside the pool).
	Named []string
}

// Candidates computes the learned last step's features for the best pool
// hybrid candidates of q (q.K and q.Mode are ignored): what train/laststep
// fits the model on. It needs the embedder; a degraded ranking returns
// the hits with Degraded set in the ranking and no features.
func (ix *Index) Candidates(ctx context.Context, q Query, pool int) (Candidates, Ranking, error) {
	q.K, q.Mode, q.poolOnly = pool, Hybrid, true
	r, err := ix.Rank(ctx, q)
	if err != nil || r.Degraded {
		return Candidates{}, r, err
	}
	ix.mu.RLock()
	v := ix.v
	emb := v.emb
	ix.mu.RUnlock()
	qvec, err := emb.EmbedQuery(ctx, q.Text)
	if err != nil {
		return Candidates{}, r, err
	}
	if ctxText := contextText(q.Context); ctxText != "" {
		cvec, err := emb.EmbedQuery(ctx, ctxText)
		if err != nil {
			return Candidates{}, r, err
		}
		n1, n2 := normalized(qvec), normalized(cvec)
		for i := range n1 {
			n1[i] += float32(ix.opts.ContextWeight) * n2[i]
		}
		qvec = n1
	}
	qvec = normalized(qvec)
	var c Candidates
	hits := r.Hits
	for len(hits) > 0 && hits[0].Named {
		c.Named = append(c.Named, hits[0].Name)
		hits = hits[1:]
	}
	c.Hits = hits
	if len(hits) == 0 {
		return c, r, nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.v != v {
		return Candidates{}, r, context.Canceled
	}
	tw, tv := v.queryTerms(q.Text)
	fs := v.poolFeatures(v.lexQueryOf(ix.lexicalQuery(q)), qvec, hits, tw, tv)
	c.Cand, c.Query = fs.cand, fs.query
	return c, r, nil
}
