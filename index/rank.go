package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Mode chooses which scores a ranking uses.
type Mode string

// Ranking modes.
const (
	Hybrid  Mode = "hybrid" // α·lexical + (1−α)·dense (the default)
	Lexical Mode = "bm25"   // BM25 only (never calls the embedder)
	Dense   Mode = "dense"  // vector similarity only
)

// ParseMode accepts "hybrid", "bm25" (or "lexical") and "dense".
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "", "hybrid":
		return Hybrid, nil
	case "bm25", "lexical":
		return Lexical, nil
	case "dense", "vector":
		return Dense, nil
	}
	return "", fmt.Errorf("unknown ranking mode %q: use hybrid, bm25 or dense", s)
}

// Query is one ranking request.
type Query struct {
	// Text is the user message.
	Text string
	// Context holds the last few conversation messages (oldest first); they
	// count with Options.ContextWeight next to Text.
	Context []string
	// K is the number of hits wanted; 0 means every tool.
	K int
	// Allow, if set, keeps only the tools it returns true for (e.g. an agent
	// profile's Allows).
	Allow func(name string) bool
	// Mode is Hybrid when empty.
	Mode Mode
	// NoLastStep ranks with the fixed fusion even when the learned last
	// step applies (laststep.go).
	NoLastStep bool
	// poolOnly ranks without the re-scoring (Candidates: the pool the
	// last step sees).
	poolOnly bool
}

// Ranking is the answer to a Query: hits best first.
type Ranking struct {
	Hits []Hit `json:"hits"`
	// Degraded is set when the dense scores could not be used (embedder
	// failed, missed the deadline, or tools lack vectors); Reason says why.
	// The scores are then lexical only.
	Degraded bool   `json:"degraded,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Revision is the catalog revision the index reflected.
	Revision uint64 `json:"revision"`
	// Answerable is the learned last step's probability that some tool of
	// the catalog serves the message (nil when the last step did not apply;
	// then the scores are the fixed fusion's).
	Answerable *float64 `json:"answerable,omitempty"`
}

// Hit is one ranked tool. Score is calibrated to [0,1] and comparable
// across queries; Dense and Lexical are its calibrated components.
type Hit struct {
	Name    string  `json:"name"`
	Score   float64 `json:"score"`
	Dense   float64 `json:"dense"`
	Lexical float64 `json:"lexical"`
	// Named is set when the message names the tool verbatim.
	Named bool `json:"named,omitempty"`
}

// ErrNotBuilt is returned by Rank before the first Sync.
var ErrNotBuilt = errors.New("index: not built yet: call Sync with a catalog first")

// Rank ranks the catalog's tools for q. It honours ctx's deadline: if the
// embedder has not answered shortly before it (or fails), the ranking is
// made from lexical scores alone and marked Degraded. Rank returns an error
// only before the first Sync.
func (ix *Index) Rank(ctx context.Context, q Query) (Ranking, error) {
	if q.Mode == "" {
		q.Mode = Hybrid
	}
	ix.mu.RLock()
	v := ix.v
	ix.mu.RUnlock()
	if v == nil {
		return Ranking{}, ErrNotBuilt
	}

	// Start the query embedding at once; score lexically meanwhile.
	var emb <-chan embedResult
	var degraded string
	empty := len(tokens(q.Text)) == 0 && len(tokens(contextText(q.Context))) == 0
	if q.Mode != Lexical && !empty { // a message without words matches nothing
		ix.mu.RLock()
		missing, verr, n, e := v.missing, v.err, len(v.byName), v.emb
		ix.mu.RUnlock()
		switch {
		case missing > 0:
			degraded = fmt.Sprintf("%d of %d tools have no vector yet", missing, n)
			if verr != nil {
				degraded += ": " + verr.Error()
			}
		default:
			if why := ix.brk.open(); why != "" {
				degraded = why
			} else {
				emb = ix.embedQuery(ctx, e, q)
			}
		}
	}
	lexQ := ix.lexicalQuery(q)
	sc, _ := ix.scratch.Get().(*rankScratch)
	if sc == nil {
		sc = new(rankScratch)
	}
	defer ix.scratch.Put(sc)
	ix.mu.RLock()
	gen := v.gen
	lex, norm := v.lexScores(lexQ, sc)
	ix.mu.RUnlock()

	var qvec []float32
	if emb != nil {
		wait := waitBudget(ctx)
		timer := time.NewTimer(wait)
		select {
		case r := <-emb:
			timer.Stop()
			if r.err != nil {
				degraded = "embedder failed: " + r.err.Error()
				// Neither the caller giving up nor one odd message means the
				// embedder is down.
				if ctx.Err() == nil && !errors.Is(r.err, errBadQueryVector) {
					ix.brk.fail(r.err)
				}
			} else {
				ix.brk.ok()
				qvec = r.vec
			}
		case <-timer.C:
			degraded = fmt.Sprintf("embedder did not answer within the deadline (%v)", wait.Round(time.Millisecond))
			ix.brk.fail(errors.New("query embedding timed out"))
		}
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if cur := ix.v; cur != v { // a rebuild swapped the view while we waited
		if qvec != nil && (cur.emb.ID() != v.emb.ID() || len(qvec) != cur.dim) {
			qvec, degraded = nil, "index rebuilt with another embedder during the query"
		}
		v = cur
		lex, norm = v.lexScores(lexQ, sc)
	} else if v.gen != gen { // updated in place meanwhile
		lex, norm = v.lexScores(lexQ, sc)
	}
	r := ix.rankLearned(v, q, lexQ, lex, norm, qvec, sc)
	if degraded != "" {
		r.Degraded, r.Reason = true, degraded
		if q.Mode == Dense {
			r.Reason += " (ranked lexically)"
		}
	}
	return r, nil
}

// waitBudget is how long to wait for the query embedding: until shortly
// before ctx's deadline (leaving time to score and answer), or 30 s.
func waitBudget(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 30 * time.Second
	}
	left := time.Until(dl)
	reserve := min(max(left/10, time.Millisecond), 20*time.Millisecond)
	return max(left-reserve, 0)
}

// errBadQueryVector marks an unusable vector for one message (say, all
// zeros): the embedder works, this message just has no embedding.
var errBadQueryVector = errors.New("no usable vector for this message")

type embedResult struct {
	vec []float32
	err error
}

// embedQuery embeds the message (and, if any, the context) in the
// background; the result channel is buffered so a late answer is dropped.
func (ix *Index) embedQuery(ctx context.Context, e interface {
	EmbedQuery(context.Context, string) ([]float32, error)
}, q Query) <-chan embedResult {
	out := make(chan embedResult, 1)
	go func() {
		var wg sync.WaitGroup
		var cvec []float32
		var cerr error
		if ctxText := contextText(q.Context); ctxText != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cvec, cerr = e.EmbedQuery(ctx, ctxText)
			}()
		}
		vec, err := e.EmbedQuery(ctx, q.Text)
		wg.Wait()
		if err == nil && cerr == nil && cvec != nil && len(cvec) == len(vec) {
			w := float32(ix.opts.ContextWeight)
			n1, n2 := normalized(vec), normalized(cvec)
			for i := range n1 {
				n1[i] += w * n2[i]
			}
			vec = n1
		}
		if err == nil {
			if cerr := checkVector(vec, len(vec)); cerr != nil {
				err = fmt.Errorf("%w: %w", errBadQueryVector, cerr)
			} else {
				vec = normalized(vec)
			}
		}
		out <- embedResult{vec, err}
	}()
	return out
}

// contextText joins the last three context messages.
func contextText(msgs []string) string {
	if len(msgs) > 3 {
		msgs = msgs[len(msgs)-3:]
	}
	return strings.TrimSpace(strings.Join(msgs, "\n"))
}

// lexicalQuery weighs the distinct words of the message 1 and those only in
// the context ContextWeight.
func (ix *Index) lexicalQuery(q Query) map[string]float64 {
	out := map[string]float64{}
	for _, t := range terms(contextText(q.Context)) {
		out[t] = ix.opts.ContextWeight
	}
	for _, t := range terms(q.Text) {
		out[t] = 1
	}
	return out
}

// rank scores every live document. Caller holds Index.mu for reading.
// sc (may be nil) provides reusable buffers.
func (v *view) rank(q Query, lex []float64, norm float64, qvec []float32, alpha float64, sc *rankScratch) Ranking {
	named := namedTools(q.Text, v.byName)
	if qvec != nil && v.dim == len(qvec) && q.Mode != Lexical && q.K > 0 && q.K < len(v.byName) && v.quantOK() {
		r, _ := v.rankQuant(q, lex, norm, qvec, alpha, named, sc)
		return r
	}
	var dense []float64
	if qvec != nil && v.dim == len(qvec) {
		dense = v.denseScores(qvec, sc)
	}

	// A top-k ranking keeps only the k best hits; a full one lays out all.
	var top *topHits
	var hits []Hit
	if q.K > 0 && q.K < len(v.byName) {
		top = newTopHits(q.K)
	} else {
		hits = make([]Hit, 0, len(v.byName))
	}
	checkNamed := len(named) > 0
	for s := range v.slots {
		sl := &v.slots[s]
		if !sl.live || (q.Allow != nil && !q.Allow(sl.name)) {
			continue
		}
		h := Hit{Name: sl.name}
		if norm > 0 {
			h.Lexical = math.Min(1, lex[s]/norm)
		}
		if dense != nil {
			h.Dense = dense[s]
		}
		switch {
		case dense == nil || q.Mode == Lexical:
			h.Score = h.Lexical
		case q.Mode == Dense:
			h.Score = h.Dense
		default:
			h.Score = alpha*h.Lexical + (1-alpha)*h.Dense
		}
		if checkNamed && named[sl.name] {
			h.Named, h.Score = true, 1
		}
		if top != nil {
			top.push(h)
		} else {
			hits = append(hits, h)
		}
	}
	if top != nil {
		hits = top.sorted()
	} else {
		sortHits(hits)
	}
	return Ranking{Hits: hits, Revision: v.rev}
}

// lexScores returns the BM25 score of every slot and the calibration norm.
// sc (may be nil) provides the buffer.
func (v *view) lexScores(lexQ map[string]float64, sc *rankScratch) ([]float64, float64) {
	lex := sc.lexBuf(len(v.slots))
	return lex, v.lex.score(lexQ, lex)
}

// sortHits sorts best first. It sorts pointers (a Hit is 56 bytes) and
// then lays the hits out in order.
func sortHits(hits []Hit) {
	ptrs := make([]*Hit, len(hits))
	for i := range hits {
		ptrs[i] = &hits[i]
	}
	slices.SortFunc(ptrs, compareHits)
	sorted := make([]Hit, len(hits))
	for i, p := range ptrs {
		sorted[i] = *p
	}
	copy(hits, sorted)
}

// compareHits is better as a three-way comparison.
func compareHits(a, b *Hit) int {
	switch {
	case a.Named != b.Named:
		if a.Named {
			return -1
		}
		return 1
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

// better orders hits: named tools first, then by score, then by name (so
// rankings are deterministic).
func better(a, b Hit) bool {
	if a.Named != b.Named {
		return a.Named
	}
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

// topK returns the k best hits, sorted, keeping a bounded heap whose root
// is the worst of the best so far (O(n log k) instead of sorting all).
func topK(hits []Hit, k int) []Hit {
	c := newTopHits(k)
	for _, x := range hits {
		c.push(x)
	}
	return c.sorted()
}

// topHits collects the k best hits offered to it one at a time, so a top-k
// ranking never lays out a Hit per tool.
type topHits struct {
	k int
	h []Hit
}

func newTopHits(k int) *topHits { return &topHits{k: k, h: make([]Hit, 0, k)} }

func (c *topHits) push(x Hit) {
	h := c.h
	if len(h) < c.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; { // sift up
			p := (i - 1) / 2
			if !better(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		c.h = h
		return
	}
	if !better(x, h[0]) {
		return
	}
	h[0] = x
	for i := 0; ; { // sift down
		l, w := 2*i+1, i
		if l < len(h) && better(h[w], h[l]) {
			w = l
		}
		if r := l + 1; r < len(h) && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// sorted returns the collected hits, best first.
func (c *topHits) sorted() []Hit {
	sortHits(c.h)
	return c.h
}

// denseScores returns, per slot, the calibrated dense score: the cosine
// above the query's background (its mean cosine to all tools), rescaled so
// that a cosine of 1 gives 1 and the background or below gives 0.
func (v *view) denseScores(q []float32, sc *rankScratch) []float64 {
	n := len(v.slots)
	cos := sc.denseBuf(n)
	bg, ok := v.background(q)
	span := 1 - bg
	if !ok || span <= 0 {
		return cos
	}
	parallelRows(n, v.dim, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			if sl := &v.slots[s]; !sl.live || !sl.vec {
				continue
			}
			cos[s] = calibrate(float64(dot(q, v.mat[s*v.dim:(s+1)*v.dim])), bg, span)
		}
	})
	return cos
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x, y := (*[8]float32)(a[i:i+8]), (*[8]float32)(b[i:i+8]) // no bounds checks below
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s4 += x[4] * y[4]
		s5 += x[5] * y[5]
		s6 += x[6] * y[6]
		s7 += x[7] * y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// namedTools finds the tools a message names. A name counts when it is
// written verbatim as a word of its own (runs of letters, digits, '_', '.',
// '-'; exact or lowercased; trailing '.'/'-' trimmed) and either looks like
// an identifier (it has '_', '.', '-', a digit or an inner capital: git_status,
// pdf2text, getWeather) or is set off as one: quoted or in backticks
// ("search", `search`) or next to the word "tool" ("the search tool"). A
// plain word that happens to be a tool's name ("search for papers") does not
// count: measured on the eval corpora, it picked the wrong tool more often
// than not. Names shorter than three characters never count.
func namedTools(text string, byName map[string]int) map[string]bool {
	out := map[string]bool{}
	isName := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
	}
	type word struct {
		w          string
		start, end int
	}
	var words []word
	start := -1
	for i, r := range text + " " {
		switch {
		case isName(r) && start < 0:
			start = i
		case !isName(r) && start >= 0:
			words = append(words, word{text[start:i], start, i})
			start = -1
		}
	}
	for i, w := range words {
		name := strings.TrimRight(w.w, ".-")
		if len(name) < 3 {
			continue
		}
		if _, ok := byName[name]; !ok {
			name = strings.ToLower(name)
			if _, ok := byName[name]; !ok {
				continue
			}
		}
		if identifierLike(strings.TrimRight(w.w, ".-")) {
			out[name] = true
			continue
		}
		before, after := byte(' '), byte(' ')
		if w.start > 0 {
			before = text[w.start-1]
		}
		if w.end < len(text) {
			after = text[w.end]
		}
		quoted := (before == '`' || before == '"' || before == '\'') && before == after
		nextToTool := i > 0 && strings.EqualFold(words[i-1].w, "tool") ||
			i+1 < len(words) && strings.EqualFold(strings.TrimRight(words[i+1].w, ".-"), "tool")
		if quoted || nextToTool {
			out[name] = true
		}
	}
	return out
}

// identifierLike says whether a word looks like an identifier rather than
// an ordinary word.
func identifierLike(w string) bool {
	for i, r := range w {
		switch {
		case r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9':
			return true
		case i > 0 && r >= 'A' && r <= 'Z':
			return true
		}
	}
	return false
}

// breaker stops asking a failing embedder on every query: after a failure
// it is skipped for a backoff that doubles up to 30 s; a success resets it.
type breaker struct {
	mu      sync.Mutex
	until   time.Time
	backoff time.Duration
	last    error
}

func (b *breaker) open() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil || time.Now().After(b.until) {
		return ""
	}
	return fmt.Sprintf("embedder unavailable (%v); retrying in %v", b.last, time.Until(b.until).Round(100*time.Millisecond))
}

func (b *breaker) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backoff = min(max(2*b.backoff, 500*time.Millisecond), 30*time.Second)
	b.until, b.last = time.Now().Add(b.backoff), err
}

func (b *breaker) ok() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backoff, b.last = 0, nil
}
