package index

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolsrv/toolsrv/internal/vec"
)

// Exact pruning: a top-k ranking that scores exactly only the tools that
// may be among the k best, and returns the very hits (names, scores and
// their parts, order) that scoring every tool gives (rankAll).
//
// Every tool's score is bounded from below and above without its exact
// parts:
//
//   - the lexical part: the message's terms are split (lexicalFor) into
//     essential ones, whose postings are summed into each tool's partial
//     score, and the rest, the terms whose bounds (termBound: the largest
//     frequency over the shortest length) add up to little, whose
//     postings (the longest lists: common words) are not read at all. A
//     tool's BM25 score is then at least its partial score and at most
//     that plus the rest's bound (MaxScore's split of essential and
//     non-essential terms);
//   - the dense part: the 4-bit scan (vec.Rows) gives every tool's cosine
//     within a rigorous error bound.
//
// The k-th best lower bound (a score at least k tools reach) rules out
// every tool whose upper bound is below it; the others are scored exactly,
// with the same arithmetic as rankAll (vec.Dot, docScore: to the bit), and
// the best k of those are the answer. A tool whose bounds tie with the
// k-th best is kept, so ties fall as rankAll breaks them (by name).
//
// Named tools are set apart first, as rankAll puts them first. Where the
// bounds cannot separate the best from the rest (fewer than k tools with a
// score above 0: the others tie at 0 and go by name), rankAll answers.

// pruneMinRows is the catalog size from which a top-k ranking is pruned;
// below it scoring every tool is as fast.
const pruneMinRows = 2048

// slotState is what the scan needs of a slot, packed: whether it holds a
// live document, and whether that has a vector.
type slotState uint8

const (
	slotLive slotState = 1 << iota
	slotVec
)

// setSlot sets slot s and its state.
func (v *view) setSlot(s int, sl slot) {
	v.slots[s] = sl
	var st slotState
	if sl.live {
		st |= slotLive
	}
	if sl.vec {
		st |= slotVec
	}
	v.state[s] = st
}

// restShare is how much of the lexical part the terms left unread may add
// to any tool's score: the common words whose bounds add up to at most this
// share of a full lexical match (times the lexical weight) go unread. More
// leaves more tools the bounds cannot rule out; less reads longer lists.
// Chosen on 103,260 tools made of the training data's tldr tools (twenty
// copies, each with another's description as its prompt), 300 of its
// requests, CPU per ranking: 0 1.55–1.75 ms, 0.02 1.49–1.50 ms, 0.05
// 1.49–1.53 ms, 0.1 1.80 ms.
const restShare = 0.02

// lexical is the lexical side of one ranking: the message's terms (plan)
// and, for a ranking of every tool, every slot's score (all); for a pruned
// one, the partial scores of the essential terms (acc, touched) and a
// bound of what the other terms may add to any slot (rest).
type lexical struct {
	plan bm25Plan
	// terms are the message's terms that count in this view (known), for
	// the learned last step's features.
	terms map[string]float64
	sc    *rankScratch // whose buffers it uses
	all   []float64
	// pruned: rankPruned may answer; the fields below are set.
	pruned  bool
	acc     []float64 // by slot: the essential terms' part of its score
	touched []int32   // the slots acc is not 0 for
	rest    float64   // at least what the other terms add to any slot
	read    []bool    // by plan term: its postings are in acc
	// optRest is the bounds of the optional terms summed: they are never
	// read into acc (they add only to a slot a word matched, which acc
	// cannot tell before every word is read), so rest always holds them.
	optRest float64
	// wordsUB is the bounds of the words (the terms not optional) summed:
	// no slot's words score more.
	wordsUB float64
}

// lexicalFor is the lexical side of q (lexQ its terms) in v: pruned when
// q asks for the best few of a large catalog, every slot's score
// otherwise. alpha is the hybrid's lexical weight. Caller holds Index.mu
// for reading.
func (v *view) lexicalFor(q Query, lexQ map[string]float64, alpha float64, sc *rankScratch) *lexical {
	if sc == nil {
		sc = new(rankScratch)
	}
	known := v.known(lexQ)
	lx := &lexical{plan: v.lex.plan(known), terms: known, sc: sc}
	if q.K <= 0 || q.Exhaustive || len(v.slots) < v.pruneFrom || len(v.state) != len(v.slots) {
		lx.all = sc.lexBuf(len(v.slots))
		v.lex.scoreAll(&lx.plan, lx.all)
		return lx
	}
	lx.pruned = true
	lx.acc = sc.accBuf(len(v.slots))
	lx.touched = sc.touched[:0]
	lx.read = make([]bool, len(lx.plan.terms))
	// The cheapest terms to leave out first: those with the longest
	// lists among the least weighty. A dense ranking reads none (its
	// lexical part counts for nothing); the others, all but the common
	// words whose bounds add up to restShare of a full match.
	weight := alpha
	if q.Mode == Lexical {
		weight = 1
	}
	order := make([]int, 0, len(lx.plan.terms))
	for i, t := range lx.plan.terms {
		switch {
		case t.id < 0:
		case t.opt:
			lx.optRest += t.ub
		default:
			lx.wordsUB += t.ub
			order = append(order, i)
		}
	}
	lx.rest = lx.optRest
	slices.SortFunc(order, func(a, b int) int {
		return compareFloat(lx.plan.terms[a].ub, lx.plan.terms[b].ub)
	})
	budget := 0.0
	if q.Mode != Dense && lx.plan.norm > 0 {
		budget = restShare * lx.plan.norm / weight
	}
	if q.Mode == Dense {
		budget = math.Inf(1)
	}
	for _, i := range order {
		if t := lx.plan.terms[i]; lx.rest+t.ub <= budget {
			lx.rest += t.ub
		} else {
			lx.read[i] = true
		}
	}
	// Read in score's order: with every term read, acc is then every
	// slot's score to the bit.
	for i, t := range lx.plan.terms {
		if lx.read[i] {
			lx.touched = v.lex.addScores(&lx.plan, t, lx.acc, lx.touched)
		}
	}
	sc.touched = lx.touched
	return lx
}

// readAll reads every term but the optional ones, so that acc holds every
// slot's score to the bit (summed in score's order) when the message has
// no optional term, and rest only theirs.
func (lx *lexical) readAll(l *lexicon) {
	for _, s := range lx.touched {
		lx.acc[s] = 0
	}
	lx.touched = lx.touched[:0]
	for i, t := range lx.plan.terms {
		if t.id >= 0 && !t.opt {
			lx.read[i] = true
			lx.touched = l.addScores(&lx.plan, t, lx.acc, lx.touched)
		}
	}
	lx.rest = lx.optRest
}

// allRead says whether every term of the message was read: acc is then
// every slot's score, to the bit.
func (lx *lexical) allRead() bool {
	for i, t := range lx.plan.terms {
		if t.id >= 0 && !lx.read[i] {
			return false
		}
	}
	return true
}

// release clears what lx used of its scratch (acc is zero again).
func (lx *lexical) release() {
	if lx.pruned {
		for _, s := range lx.touched {
			lx.acc[s] = 0
		}
		lx.sc.touched = lx.touched[:0]
		lx.pruned = false
	}
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Margins that keep each bound on its side of the exact score: the
// partial and exact lexical sums add the same terms in different orders,
// which moves a sum by a few units in its last place.
const (
	sumBelow = 1 - 1e-12
	sumAbove = 1 + 1e-12
)

// cand is a tool the bounds could not rule out: its slot and upper bound.
type cand struct {
	slot int32
	hi   float64
	fine bool // hi is from the int8 row (else from the 4-bit one)
}

// pruneChunk is how many rows the scan takes at a time (their dot
// products stay in the first-level cache).
const pruneChunk = 256

// chunkSpread is how far apart the scan's first chunks are (spreadChunk).
const chunkSpread = 16

// spreadChunk is the i-th of n chunks in the scan's order: 0,
// chunkSpread, 2·chunkSpread, …, then 1, chunkSpread+1, …: each chunk
// once.
func spreadChunk(i, n int) int {
	rows := (n + chunkSpread - 1) / chunkSpread // chunks in each pass but maybe the last ones
	full := n % chunkSpread                     // passes with rows chunks (0: all)
	if full == 0 {
		full = chunkSpread
	}
	// Pass r takes chunks r, r+chunkSpread, …: rows of them for r < full,
	// rows−1 after.
	if i < full*rows {
		return i/rows + chunkSpread*(i%rows)
	}
	i -= full * rows
	return full + i/(rows-1) + chunkSpread*(i%(rows-1))
}

// scoring is what the bounds of one ranking are made from.
type scoring struct {
	alpha, a1 float64 // the lexical and dense weights of the score
	qvec      []float32
	q8        vec.Query8 // qvec for the int8 rows
	lexOnly   bool       // the score is the lexical part
	denseOnly bool       // the score is the dense part
	dense     bool       // the dense part is there (a query vector)
	bg, span  float64    // span 0: the dense part is 0 for every tool
	norm      float64
	// What the unread terms may add to a slot's lexical part: restW the
	// unread words' bounds, optRest the optional terms' (never read),
	// which add at most tieShare of the slot's words (tieBreak), whose
	// sum is at most wordsUB; rest, a bound of lexRest for every slot.
	rest, restW, optRest, wordsUB float64
	qq                            vec.Query
	dotErr                        float64
	lexHiUnread                   float64 // the lexical upper bound of a slot no read term has
}

// partScan is one worker of boundAll's scan: its floor and candidates,
// and what it bounds scores with.
type partScan struct {
	v                  *view
	sg                 *scoring
	lx                 *lexical
	floor              *vec.Floor
	cands              []cand
	wL, wD             float64 // the lexical and dense weights of the score
	invSpan, aboveNorm float64
	allowed, isNamed   func(int) bool
	m                  float64 // the floor: the highest of the workers'
	work               *scanWork
}

// scanWork is what boundAll's workers share: the next chunk to take (in
// spreadChunk's order), and the highest of their floors. Each worker's
// floor is a lower bound of the k-th best score (the k-th best of the
// lower bounds it has seen), so the highest is one too; a worker that
// another core's load slows takes fewer chunks.
type scanWork struct {
	next   atomic.Int64
	chunks int
	floor  atomic.Uint64 // math.Float64bits of the highest floor (−Inf at first)
}

// raise makes m the shared floor if it is higher.
func (w *scanWork) raise(m float64) {
	for {
		old := w.floor.Load()
		if m <= math.Float64frombits(old) || w.floor.CompareAndSwap(old, math.Float64bits(m)) {
			return
		}
	}
}

// scan bounds the slots of the chunks it takes, until none is left (dots
// holds a chunk's integer dot products, pass the rows of a chunk that
// reach the floor).
func (ps *partScan) scan(n int, dots []int32, pass []int32) []int32 {
	v, sg, w := ps.v, ps.sg, ps.work
	// Each slot's upper bound, from its upper cosine and partial lexical
	// score (vec.Reach: the lexical part min(1, (acc+rest)·sumAbove/norm),
	// the dense part from the cosine plus the float32 rounding, over the
	// background; multiplications, whose rounding the margins cover).
	reach := vec.Reach{WA: ps.wL, RA: sg.rest, KA: ps.aboveNorm, WB: ps.wD, RB: sg.dotErr - sg.bg, KB: ps.invSpan}
	// The optional terms add at most tieShare of a slot's words, so
	// (acc+restW)·(1+tieShare) bounds its lexical part as well: the lower
	// of the two for a slot no read term has (most of them) when the
	// optional terms weigh more than tieShare of the unread words.
	if sg.optRest > 0 && sg.restW*(1+tieShare) < sg.rest {
		reach.RA, reach.KA = sg.restW, ps.aboveNorm*(1+tieShare)
	}
	if sg.span <= 0 {
		reach.WB = 0 // no dense part
	}
	// The chunks in a spread order (every chunkSpread-th first, then the
	// ones after those, ...): the floor rises to near its final height
	// within the first few, and fewer slots reach it.
	for {
		i := int(w.next.Add(1) - 1)
		if i >= w.chunks {
			return pass
		}
		c := pruneChunk * spreadChunk(i, w.chunks)
		ce := min(c+pruneChunk, n)
		ps.m = max(ps.floor.Min(), math.Float64frombits(w.floor.Load()))
		if sg.span > 0 {
			v.q4.Dots(&sg.qq, c, ce, dots)
		} else {
			clear(dots[:ce-c])
		}
		pass = v.q4.Reaching(&sg.qq, &reach, c, dots[:ce-c], ps.lx.acc[c:ce], ps.m, pass[:0])
		for _, s := range pass {
			ps.reached(int(s), ps.lx.acc[s], dots[int(s)-c])
		}
	}
}

// reached takes slot s, whose upper bound may reach the floor (a its
// read terms' sum, d its row's integer dot product): when it does, it is
// a candidate, and it may raise the floor. A slot whose lower bound (at
// least its upper bound − the dense part's width) may be above the floor
// gets it, and if that does raise the floor, its int8 row's bounds, ten
// times tighter, which raise it further: the floor is then soon near the
// k-th best score.
func (ps *partScan) reached(s int, a float64, d int32) {
	v, sg := ps.v, ps.sg
	st := v.state[s]
	if st&slotLive == 0 {
		return
	}
	llo, lhi := sg.lexBounds(a)
	if ps.wL == 0 {
		llo, lhi = 0, 0
	}
	var cos, slack, dhi float64
	if st&slotVec != 0 && sg.span > 0 {
		cos, slack = v.q4.Bound(&sg.qq, s, d)
		slack += sg.dotErr
		dhi = min(1, max(0, (cos+slack-sg.bg)/sg.span))
	}
	h := ps.wL*lhi + ps.wD*dhi
	if h < ps.m {
		return
	}
	var dlo float64
	if dhi > 0 {
		if width := min(dhi, 2*slack*ps.invSpan); h-ps.wD*width <= ps.m {
			ps.cands = append(ps.cands, cand{int32(s), h, false})
			return
		}
		dlo = min(1, max(0, (cos-slack-sg.bg)/sg.span))
		if ps.wL*llo+ps.wD*dlo <= ps.m {
			ps.cands = append(ps.cands, cand{int32(s), h, false})
			return
		}
		dlo, dhi = sg.refine(v, s)
	}
	lo := ps.wL*llo + ps.wD*dlo
	h = ps.wL*lhi + ps.wD*dhi
	if lo > ps.m && !ps.isNamed(s) && ps.allowed(s) {
		ps.floor.Push(lo)
		if f := ps.floor.Min(); f > ps.m {
			ps.m = f
			ps.work.raise(f)
		}
	}
	if h >= ps.m {
		ps.cands = append(ps.cands, cand{int32(s), h, true})
	}
}

// refine bounds the dense part of live slot s, which has a vector, from
// its int8 row (vec.Query8.ErrBound: within about 0.013 of the cosine,
// the float32 rounding of its exact value included).
func (sg *scoring) refine(v *view, s int) (dlo, dhi float64) {
	rs := v.q8scale[s]
	var d [1]int32
	vec.DotsInt8(sg.q8.Q, v.q8[s*v.dim:(s+1)*v.dim], d[:])
	c, e := float64(d[0])*sg.q8.Scale*float64(rs), sg.q8.ErrBound(rs, v.dim)+boundSlack
	return min(1, max(0, (c-e-sg.bg)/sg.span)), min(1, max(0, (c+e-sg.bg)/sg.span))
}

// boundSlack covers the rounding of the float64 arithmetic of a bound.
const boundSlack = 1e-9

// denseOf is the exact dense part of live slot s, as rankAll computes it.
func (sg *scoring) denseOf(v *view, s int) float64 {
	if sg.span > 0 && v.slots[s].vec {
		return calibrate(float64(dot(sg.qvec, v.rows[s])), sg.bg, sg.span)
	}
	return 0
}

// lexBounds bounds the lexical part of a slot whose read terms sum to a.
func (sg *scoring) lexBounds(a float64) (lo, hi float64) {
	if sg.norm <= 0 {
		return 0, 0
	}
	if a == 0 {
		return 0, sg.lexHiUnread
	}
	return math.Min(1, a*sumBelow/sg.norm), math.Min(1, (a+sg.lexRest(a))*sumAbove/sg.norm)
}

// lexRest bounds what the unread terms add to a slot whose read words sum
// to a: the unread words' bounds, and the optional terms', which add at
// most tieShare of the slot's words.
func (sg *scoring) lexRest(a float64) float64 {
	return sg.restW + math.Min(sg.optRest, tieShare*(a+sg.restW))
}

// setRest sets sg's bounds of the unread terms from lx's.
func (sg *scoring) setRest(lx *lexical) {
	sg.optRest, sg.restW, sg.wordsUB = lx.optRest, math.Max(0, lx.rest-lx.optRest), lx.wordsUB
	// Every slot's words sum to at most wordsUB: the bound of lexRest
	// that the scan's kernel takes, a constant.
	sg.rest = sg.restW + math.Min(sg.optRest, tieShare*math.Max(sg.wordsUB, sg.restW))
	sg.lexHiUnread = 0
	if sg.norm > 0 {
		sg.lexHiUnread = math.Min(1, sg.lexRest(0)*sumAbove/sg.norm)
	}
}

// rankPruned is the top q.K of v by exact pruning (see the file comment),
// or ok false when rankAll must answer. named are the tools the message
// names. Caller holds Index.mu for reading.
func (v *view) rankPruned(q Query, lx *lexical, qvec []float32, alpha float64, named map[string]bool) (Ranking, bool) {
	sc := lx.sc
	allowed := func(s int) bool { return q.Allow == nil || q.Allow(v.slots[s].name) }
	sg := scoring{alpha: alpha, a1: 1 - alpha, norm: lx.plan.norm, qvec: qvec}
	sg.setRest(lx)
	// As rankAll: with a query vector of the rows' dimension, the dense
	// part is there (0 for every tool when the background leaves no
	// span), and the score is the mode's; without, the lexical part.
	sg.dense = qvec != nil && v.dim == len(qvec)
	if sg.dense {
		if v.q4 == nil || v.q4.Len() < len(v.slots) || len(v.q8) < len(v.slots)*v.dim {
			return Ranking{}, false
		}
		if bg, ok := v.background(qvec); ok && 1-bg > 0 {
			sg.bg, sg.span = bg, 1-bg
			sg.qq = v.q4.Query(qvec)
			sg.q8 = vec.QuantizeQuery8(qvec)
			sg.dotErr = vec.DotErr(v.dim)
		}
	}
	switch {
	case !sg.dense || q.Mode == Lexical:
		sg.lexOnly = true
	case q.Mode == Dense:
		sg.denseOnly = true
	}
	if sg.lexOnly && !(sg.norm > 0) {
		return Ranking{}, false // every score is 0: by name
	}

	// The named tools lead, as in rankAll.
	var lead []Hit
	var namedSlots []int
	for name := range named {
		s := v.byName[name]
		if v.slots[s].live && allowed(s) {
			namedSlots = append(namedSlots, s)
		}
	}
	slices.Sort(namedSlots)
	isNamed := func(s int) bool { return len(namedSlots) > 0 && slices.Contains(namedSlots, s) }
	k := q.K - len(namedSlots)
	if k <= 0 {
		return Ranking{}, false // the named tools fill the ranking: rankAll sorts them
	}

	var cands []cand
	var theta float64
	if sg.lexOnly {
		cands, theta = v.boundLexical(&sg, lx, k, allowed, isNamed, sc)
		if theta > 0 && sg.lexHiUnread >= theta {
			// A tool no read term has may still be among the best: read
			// the rest and bound again.
			lx.readAll(v.lex)
			sg.setRest(lx)
			cands, theta = v.boundLexical(&sg, lx, k, allowed, isNamed, sc)
		}
	} else {
		cands, theta = v.boundAll(&sg, lx, k, allowed, isNamed, sc)
	}
	if !(theta > 0) {
		// At least as many tools as asked for may score 0, and those go by
		// name: rankAll sorts them.
		return Ranking{}, false
	}

	// Score exactly the tools that may be among the best, best bound
	// first, until the next bound falls below the k-th best score found:
	// no tool after it can enter. Each tool's dense part first; its
	// lexical part, where the unread terms leave it uncertain, only if the
	// tool may still enter then.
	var mark []int32
	var tf []float32
	allRead := lx.allRead()
	if !allRead {
		mark = sc.markBuf(len(v.lex.postings))
		tf = sc.tfBuf(len(lx.plan.terms))
		lx.plan.mark(mark)
		defer lx.plan.unmark(mark)
	}
	lexical := func(s int) float64 {
		if lx.plan.norm <= 0 {
			return 0
		}
		sum := lx.acc[s]
		if !allRead {
			sum = v.lex.docScore(&lx.plan, s, mark, tf)
		}
		return math.Min(1, sum/lx.plan.norm)
	}
	score := func(h *Hit) {
		switch {
		case sg.lexOnly:
			h.Score = h.Lexical
		case sg.denseOnly:
			h.Score = h.Dense
		default:
			h.Score = alpha*h.Lexical + (1-alpha)*h.Dense
		}
	}
	byRank := func(a, b Hit) int { return compareHits(&a, &b) }
	for _, s := range namedSlots {
		h := Hit{Name: v.slots[s].name, Lexical: lexical(s), Dense: sg.denseOf(v, s), Named: true, Score: 1}
		lead = append(lead, h)
	}
	slices.SortFunc(lead, byRank)
	top := vec.NewBest(k, better)
	sc.rescored = 0
	heapByHi(cands)
	for len(cands) > 0 {
		c := cands[0]
		cands = popByHi(cands)
		worst, full := top.Worst()
		if c.hi < theta || full && c.hi < worst.Score {
			break
		}
		s := int(c.slot)
		if isNamed(s) || !allowed(s) {
			continue
		}
		if full && !c.fine && !sg.lexOnly && sg.span > 0 && v.slots[s].vec {
			// The int8 row's bounds first: most candidates stop there.
			_, dhi := sg.refine(v, s)
			hi := dhi
			if !sg.denseOnly {
				_, lhi := sg.lexBounds(lx.acc[s])
				hi = alpha*lhi + (1-alpha)*dhi
			}
			if hi < worst.Score {
				continue
			}
		}
		h := Hit{Name: v.slots[s].name, Dense: sg.denseOf(v, s)}
		if full && !allRead && !sg.denseOnly {
			// With the dense part exact, the score is at most this.
			_, lhi := sg.lexBounds(lx.acc[s])
			hi := lhi
			if !sg.lexOnly {
				hi = alpha*lhi + (1-alpha)*h.Dense
			}
			if hi < worst.Score {
				continue
			}
		}
		h.Lexical = lexical(s)
		score(&h)
		top.Push(h)
		sc.rescored++
	}
	return Ranking{Hits: append(lead, top.Sorted(byRank)...), Revision: v.rev}, true
}

// heapByHi orders cands as a heap whose root has the highest bound.
func heapByHi(cands []cand) {
	for i := len(cands)/2 - 1; i >= 0; i-- {
		siftByHi(cands, i)
	}
}

// popByHi removes the root of the heap cands.
func popByHi(cands []cand) []cand {
	n := len(cands) - 1
	cands[0] = cands[n]
	cands = cands[:n]
	siftByHi(cands, 0)
	return cands
}

func siftByHi(h []cand, i int) {
	for {
		l, w := 2*i+1, i
		if l < len(h) && h[l].hi > h[w].hi {
			w = l
		}
		if r := l + 1; r < len(h) && h[r].hi > h[w].hi {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// boundLexical bounds the score of the slots a read term has (a lexical
// score: the others' is at most sg.lexHiUnread) and returns those that
// may be among the best k, and theta, the k-th best lower bound.
func (v *view) boundLexical(sg *scoring, lx *lexical, k int, allowed, isNamed func(int) bool, sc *rankScratch) ([]cand, float64) {
	sc.parts(1, k)
	floor := sc.floor(0)
	cands := sc.cands[0][:0]
	for _, s32 := range lx.touched {
		s := int(s32)
		if v.state[s]&slotLive == 0 {
			continue
		}
		lo, hi := sg.lexBounds(lx.acc[s])
		m := floor.Min()
		if hi < m {
			continue
		}
		if lo > m && !isNamed(s) && allowed(s) {
			floor.Push(lo)
		}
		cands = append(cands, cand{s32, hi, false})
	}
	sc.cands[0] = cands
	return cands, floor.Min()
}

// boundAll bounds the score of every slot (the 4-bit scan, on every core)
// and returns those that may be among the best k, and theta, the k-th
// best lower bound.
func (v *view) boundAll(sg *scoring, lx *lexical, k int, allowed, isNamed func(int) bool, sc *rankScratch) ([]cand, float64) {
	n := len(v.slots)
	parts := rowParts(n, v.dim)
	sc.parts(parts, k)
	// The weights of the parts in the score. (A dense ranking reads no
	// term: acc is 0, and its lexical part counts for nothing.)
	wL, wD := sg.alpha, sg.a1
	if sg.denseOnly {
		wL, wD = 0, 1
	}
	invSpan, aboveNorm := 0.0, 0.0
	if sg.span > 0 {
		invSpan = 1 / sg.span
	}
	if sg.norm > 0 {
		aboveNorm = sumAbove / sg.norm
	}
	work := &scanWork{chunks: (n + pruneChunk - 1) / pruneChunk}
	work.floor.Store(math.Float64bits(math.Inf(-1)))
	scan := func(p int) {
		ps := partScan{v: v, sg: sg, lx: lx, floor: sc.floor(p), cands: sc.cands[p][:0],
			wL: wL, wD: wD, invSpan: invSpan, aboveNorm: aboveNorm,
			allowed: allowed, isNamed: isNamed, work: work}
		sc.pass[p] = ps.scan(n, sc.dots[p], sc.pass[p])
		sc.cands[p] = ps.cands
	}
	// One worker here, the others on goroutines of their own.
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() { scan(p) })
	}
	scan(0)
	wg.Wait()
	// The k-th best lower bound of all: the best k of every part are among
	// the parts' floors.
	theta := sc.floor(0).Min()
	if parts > 1 {
		all := vec.NewFloor(k)
		for p := range parts {
			for _, x := range sc.floors[p].Values() {
				all.Push(x)
			}
		}
		theta = all.Min()
	}
	var cands []cand
	for p := range parts {
		for _, c := range sc.cands[p] {
			if c.hi >= theta {
				cands = append(cands, c)
			}
		}
	}
	return cands, theta
}
