package index

import (
	"context"
	"math"
	"time"

	"github.com/toolsrv/toolsrv/internal/parallel"
)

// Trust: a past call credited to the wrong tool (an agent's mistake, a
// tool tried and given up, a test run) votes for that tool whenever a
// message is near its request. Each entry of the history is weighed by how
// far the rest of the history agrees with its label: its trust is
//
//	(P₋ᵢ(own) + usageTrustK) / (max over tools of P₋ᵢ + usageTrustK)
//
// where P₋ᵢ is the usage evidence of its own principal's other entries
// for its request (each with its full vote): how far what its recorder
// said elsewhere agrees with it. An entry whose neighbours agree with it,
// or that has no neighbours (a tool's only request, a request like no
// other), keeps its full vote; one whose near requests all went to
// another tool votes at as little as usageTrustK/(1+usageTrustK) of it.
// A request answered without a tool ("none") keeps its full vote. Trust
// is computed when the history is built whole, and for the entries a
// delta adds (usagedelta.go).
//
// Cross trust is the same question put to the other principals, each
// voice as far as it is heard (usagevoice.go), and to the entry's own
// principal's entries first recorded at least usageSeniority before it
// (what it said before: a burst of new claims that contradict what a
// principal has long said, all from one session, do not vouch for one
// another):
//
//	(P_others(own) + usageCrossK) / (max over tools of P_others + usageCrossK)
//
// (1 when no other tool has more of them). The owner's entries are not
// judged by it. Unlike trust, which moves a principal's vote among its
// own tools, what cross trust takes from a vote is lost (evidence):
// entries that the believed principals contradict do not carry their
// recorder's voice to the tool they name, however many they are.
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

// usageTrustCommon: an entry's near requests are gathered by its rarest
// word and those no more than usageTrustCommon past requests share (a
// ranking's, by words no more than usageCommon share); an entry whose
// rarest word more than usageCommon share is not judged. At 50,000 entries
// of real requests (the training sources' 55,000 pairs, the first 50,000)
// the trust of all takes 0.2 s on two cores, against 0.46 s with
// usageCommon for both.
const usageTrustCommon = 128

// usageSeniority is how much earlier a principal's entry must have been
// first recorded (here: an import's lines as of the import, but for this
// installation's own export; another instance's rows of a shared store as
// of this instance's first read) to judge its later ones (cross trust): an hour, longer
// than a session's burst (about 20 new entries an hour at most: the
// engine's bound).
const usageSeniority = time.Hour

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
	own := u.toolID[i]
	if u.tools[own] == "" {
		return 1
	}
	if !u.judgeable(i) {
		return 1
	}
	sc := u.getScratch()
	defer u.putScratch(sc)
	if !u.vote(u.entryQuery(i), nil, leftOut{entry: i}, voting{only: u.principal[i], except: -1}, usageTrustCommon, sc) {
		return 1
	}
	best := 0.0
	for _, t := range sc.tools {
		if u.tools[t] != "" {
			best = max(best, sc.toolP[t])
		}
	}
	return float32((sc.toolP[own] + usageTrustK) / (best + usageTrustK))
}

// judgeable reports whether entry i's near requests can be gathered to
// judge it: not when all its words are shared by more than usageCommon
// past requests (too many; a ranking passes such words over too, but for
// the rarest).
func (u *usageView) judgeable(i int32) bool {
	rarest := math.MaxInt
	for _, tw := range u.row(i) {
		rarest = min(rarest, len(u.post[tw.id]))
	}
	return rarest <= usageCommon
}

// entryQuery is entry i's request as a message: its words and, when it
// has one, its vector (its quantised row as it is: int8 components fit
// the query's int16 ones).
func (u *usageView) entryQuery(i int32) usageQuery {
	q := usageQuery{words: u.row(i)}
	if u.qvecs != nil && u.qscale[i] != 0 {
		row := u.qvecs[int(i)*u.dim : int(i+1)*u.dim]
		v := quantQuery{q: make([]int16, u.dim), scale: float64(u.qscale[i])}
		for k, x := range row {
			v.q[k] = int16(x)
			v.l1 += math.Abs(float64(x))
		}
		v.l1 *= v.scale
		q.vec = v
	}
	return q
}

// setCross sets the cross trust of u's entries from start on (on all
// cores); none when no principal is judged (the owner alone, say).
func (u *usageView) setCross(ctx context.Context, start int) error {
	judged := false
	for p, r := range u.voice.role {
		judged = judged || (r == RoleOther && u.voice.entries[p] > 0)
	}
	if !judged && u.cross == nil {
		return nil
	}
	cross := make([]float32, u.n)
	copy(cross, u.cross)
	if u.cross == nil {
		for i := range start {
			cross[i] = 1
		}
	}
	parallel.Each(u.n-start, func(k int) {
		i := int32(start + k)
		if k%256 == 0 && ctx.Err() != nil {
			return
		}
		cross[i] = 1
		if u.voice.role[u.principal[i]] != RoleOther || !u.judgeable(int32(i)) {
			return
		}
		older := int64(0)
		if u.first[i] > 0 {
			older = u.first[i] - int64(usageSeniority/time.Second)
		}
		own, best := u.othersThan(i, older, u.voice.weight[u.voice.of[u.principal[i]]])
		if best > own {
			cross[i] = float32((own + usageCrossK) / (best + usageCrossK))
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	u.cross = cross
	return nil
}
