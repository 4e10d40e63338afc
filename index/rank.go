package index

import (
	"context"
	"errors"
	"fmt"
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
	// NoUsage ranks without the usage history (usage.go).
	NoUsage bool
	// Exhaustive scores every tool exactly instead of pruning a top-K
	// ranking (prune.go): the same hits, slower. For measuring and
	// checking the pruning.
	Exhaustive bool
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
	// Usage is what the usage history added to Score (0: nothing).
	Usage float64 `json:"usage,omitempty"`
	// Words is set when the tool matched a real word of the message: a
	// lexical score from a class, a number or a phrase of stop words
	// alone ("10 MB", "how do i") is no evidence that it serves the
	// message (the thresholds' noise and evidence rules).
	Words bool `json:"-"`
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
	empty := !hasWord(q.Text) && !hasWord(contextText(q.Context))
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
	alpha := ix.opts.LexicalWeight
	ix.mu.RLock()
	gen := v.gen
	lx := v.lexicalFor(q, lexQ, alpha, sc)
	ix.mu.RUnlock()
	defer func() { lx.release() }()

	// The usage signal's side of the message, while the query embedding
	// is computed.
	var uq usageQuery
	u := ix.usage.Load()
	if q.NoUsage || q.poolOnly || u == nil || empty {
		u = nil
	} else {
		uq = ix.usageQueryOf(ctx, u, q.Text)
	}

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
		lx.release()
		lx = v.lexicalFor(q, lexQ, alpha, sc)
	} else if v.gen != gen { // updated in place meanwhile
		lx.release()
		lx = v.lexicalFor(q, lexQ, alpha, sc)
	}
	r := ix.rankLearned(v, q, lexQ, lx, qvec, u, uq)
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
