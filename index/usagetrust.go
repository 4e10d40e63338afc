package index

import (
	"context"

	"github.com/toolsrv/toolsrv/internal/parallel"
)

// Trust: a past call credited to the wrong tool (an agent's mistake, a
// tool tried and given up, a test run) votes for that tool whenever a
// message is near its request. Each entry of the history is weighed by how
// far the rest of the history agrees with its label: its trust is
//
//	(P₋ᵢ(own) + usageTrustK) / (max over tools of P₋ᵢ + usageTrustK)
//
// where P₋ᵢ is the usage evidence for its own request with it left out,
// unweighted by trust (evidence, with each entry's full vote). An entry
// whose neighbours agree with it, or that has no neighbours (a tool's
// only request, a request like no other), keeps its full vote; one whose
// near requests all went to another tool votes at as little as
// usageTrustK/(1+usageTrustK) of it. A request answered without a tool
// ("none") keeps its full vote. Trust is computed when the history is
// built whole, and for the entries a delta adds (usagedelta.go).
//
// usageTrustK was chosen on usage simulated from the training sources
// (bench/scripts/usage-check.py on the catalogs "learn export" writes;
// five splits each of all past requests, two per tool, 30% credited to a
// wrong tool, and histories of at most 120 requests): with 0.3 the 30%
// wrong histories gain +0.004 Recall@5 (0.810 → 0.814, macro over the 11
// catalogs) and the others move by at most 0.001; 0.1 and 0.2 cost all
// past requests up to 0.005 in a split, 0.5 gained less, and squaring
// the ratio, or a second round weighed by the first's trust, did no
// better.
const usageTrustK = 0.3

// setTrust sets the trust of u's entries from start on (on all cores).
func (u *usageView) setTrust(ctx context.Context, start int) error {
	trust := make([]float32, u.n)
	copy(trust, u.trust)
	parallel.Each(u.n-start, func(k int) {
		i := int32(start + k)
		if k%256 == 0 && ctx.Err() != nil {
			return
		}
		trust[i] = u.trustOf(i)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	u.trust = trust
	return nil
}

// trustOf is entry i's trust (see the file comment).
func (u *usageView) trustOf(i int32) float32 {
	own := u.toolOf(i)
	if own == "" {
		return 1
	}
	p, _ := u.votesFor(u.entryQuery(i), nil, i, false)
	best := 0.0
	for _, v := range p {
		best = max(best, v)
	}
	return float32((p[own] + usageTrustK) / (best + usageTrustK))
}

// entryQuery is entry i's request as a message: its words and, when it
// has one, its vector.
func (u *usageView) entryQuery(i int32) usageQuery {
	q := usageQuery{words: u.row(i)}
	if u.qvecs != nil && u.qscale[i] != 0 {
		row := u.qvecs[int(i)*u.dim : int(i+1)*u.dim]
		v := make([]float32, u.dim)
		for k, x := range row {
			v[k] = float32(x) * u.qscale[i]
		}
		q.vec = quantizeQuery(v)
	}
	return q
}
