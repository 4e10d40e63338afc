package index

// Per-catalog calibration of the learned answerability (learn.Calib). The
// model carries a fixed set of off-topic requests (probes); the index ranks
// them against its catalog, as it would rank a message, and keeps their
// answerability logits. A message's answerability then comes from where its
// own logit stands among the probes': a catalog that matches everything a
// little (thousands of near-identical tools) and one that matches an
// off-topic request with nothing (a dozen shell tools) give the same logit
// different meanings, and the probes measure that without labels.
//
// The probes are ranked again when the index is rebuilt, when the model
// changes, and when more than 5% of the catalog (at least one tool) changed
// since the last time; the logits are saved in the cache file with a digest
// of the catalog, so a restart with nothing changed ranks nothing.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/toolsrv/toolsrv/learn"
)

// probeState is the probes' logits for one catalog and model.
type probeState struct {
	model  string    // learn.Model.ID
	digest uint64    // catalogDigest of the view they were ranked on
	logits []float64 // sorted
}

// probeChange is how much of the catalog must change (share of its tools,
// at least one tool) before the probes are ranked again.
const probeChange = 0.05

// catalogDigest identifies a view's documents (names and texts), whatever
// their order, and the embedder that made its vectors. Caller holds
// Index.mu for reading.
func (v *view) catalogDigest() uint64 {
	e := fnv.New64a()
	e.Write([]byte(v.emb.ID()))
	var sum, xor uint64 = 0, e.Sum64()
	n := 0
	for i := range v.slots {
		sl := &v.slots[i]
		if !sl.live {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(sl.name))
		h.Write([]byte{0})
		h.Write([]byte(sl.hash))
		x := h.Sum64()
		sum += x
		xor ^= x * 0x9e3779b97f4a7c15
		n++
	}
	return sum ^ xor<<1 ^ uint64(n)
}

// ProbeLogits returns the model ID and the sorted logits of the probes the
// answerability is calibrated with (nil: none yet, or no calibration).
func (ix *Index) ProbeLogits() (string, []float64) {
	st := ix.probes.Load()
	if st == nil {
		return "", nil
	}
	return st.model, st.logits
}

// probeLogitsFor returns the probes' logits if they were ranked with m.
func (ix *Index) probeLogitsFor(m *learn.Model) []float64 {
	st := ix.probes.Load()
	if st == nil || st.model != m.ID {
		return nil
	}
	return st.logits
}

// calibrateLocked ranks the probes again if the catalog or the model
// changed enough since the last time (see the file comment). Caller holds
// ix.upd. A failure leaves the previous logits (or none: the answerability
// is then the model's own) and is returned.
func (ix *Index) calibrateLocked(ctx context.Context) error {
	m := ix.model(Query{})
	if m == nil || m.Calib == nil {
		return nil
	}
	ix.mu.RLock()
	v := ix.v
	var n, missing int
	if v != nil {
		n, missing = len(v.byName), v.missing
	}
	ix.mu.RUnlock()
	if v == nil || n == 0 || missing > 0 || v.dim == 0 {
		return nil // nothing to rank, or no vectors: rankings are degraded anyway
	}
	st := ix.probes.Load()
	due := max(1, int(probeChange*float64(n)))
	if st != nil && st.model == m.ID && ix.probeDrift < due {
		return nil
	}
	ix.mu.RLock()
	digest := v.catalogDigest()
	ix.mu.RUnlock()
	if st != nil && st.model == m.ID && st.digest == digest {
		ix.probeDrift = 0
		return nil
	}
	if c := ix.cachedProbes; c != nil && c.model == m.ID && c.digest == digest {
		ix.probes.Store(c)
		ix.cachedProbes, ix.probeDrift = nil, 0
		return nil
	}
	logits, err := ix.rankProbes(ctx, v, m)
	if err != nil {
		return fmt.Errorf("calibrating the answerability: %w", err)
	}
	ix.probes.Store(&probeState{model: m.ID, digest: digest, logits: logits})
	ix.cachedProbes, ix.probeDrift = nil, 0
	ix.dirty = true
	return nil
}

var errViewChanged = errors.New("the index changed while ranking the probes")

// rankProbes ranks every probe of m against view v and returns their
// answerability logits, sorted. The work is split between ix.opts.Workers.
func (ix *Index) rankProbes(ctx context.Context, v *view, m *learn.Model) ([]float64, error) {
	texts := m.Calib.Probes
	out := make([]float64, len(texts))
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, ix.opts.Workers)
	for w := range min(ix.opts.Workers, len(texts)) {
		wg.Go(func() {
			sc := new(rankScratch)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(texts) || ctx.Err() != nil {
					return
				}
				z, err := ix.probeLogit(ctx, v, m, texts[i], sc)
				if err != nil {
					errs[w] = err
					return
				}
				out[i] = z
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Float64s(out)
	return out, nil
}

// probeLogit is the answerability logit of one probe request: the same
// ranking, pool and features as a message gets (Rank, applyLastStep).
func (ix *Index) probeLogit(ctx context.Context, v *view, m *learn.Model, text string, sc *rankScratch) (float64, error) {
	q := Query{Text: text, K: m.Pool, Mode: Hybrid}
	vec, err := v.emb.EmbedQuery(ctx, text)
	if err != nil {
		return 0, err
	}
	if err := checkVector(vec, len(vec)); err != nil {
		return 0, fmt.Errorf("probe %q: %w", text, err)
	}
	qvec := normalized(vec)
	lexQ := ix.lexicalQuery(q)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.v != v {
		return 0, errViewChanged
	}
	if len(qvec) != v.dim {
		return 0, fmt.Errorf("probe %q: %d dimensions, the index has %d", text, len(qvec), v.dim)
	}
	lx := v.lexicalFor(q, lexQ, ix.opts.LexicalWeight, sc)
	defer lx.release()
	r := v.rank(q, lx, qvec, ix.opts.LexicalWeight)
	pool := r.Hits
	if len(pool) > 0 && pool[0].Named {
		return namedLogit, nil
	}
	if len(pool) == 0 {
		return -namedLogit, nil
	}
	tw, tv := v.queryTerms(text)
	fs := v.poolFeatures(lx.query(), qvec, pool, tw, tv)
	logits := make([]float64, len(pool))
	shares := make([]float64, len(pool))
	qf := fs.query
	m.Scores(fs.cand, logits, shares, &qf)
	return m.Logit(&qf), nil
}

// namedLogit stands for a probe that names a tool (it ranks first, as a
// message naming one would): answerable beyond doubt.
const namedLogit = 20
