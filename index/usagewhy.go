package index

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// UsageReason is what the usage history says of one tool for one message,
// for an explanation a user can act on.
type UsageReason struct {
	// Share is the tool's share of the votes of the past requests near
	// the message (each voice as far as it is heard), and Weight what a
	// share is worth in a score (chosen by leave-one-out; 0: the votes are
	// not used yet).
	Share, Weight float64
	// OwnerCalls are the owner's successful calls of the tool for
	// requests like the message, and Firmness how firmly they say it (0
	// for fewer than two: see ownerFirmness).
	OwnerCalls int
	Firmness   float64
	// Author is its author's examples' share of theirs.
	Author float64
	// By are the principals whose requests near the message led to it,
	// the strongest first (at most 3).
	By []string
}

// UsageReasons says, for q's message, what the history in effect says of
// each tool it speaks of (nil: no history, or nothing near). It asks the
// history as Rank does, without ranking.
func (ix *Index) UsageReasons(ctx context.Context, q Query) map[string]UsageReason {
	u := ix.usage.Load()
	if u == nil || q.NoUsage || !hasWord(q.Text) {
		return nil
	}
	uq := ix.usageQueryOf(ctx, u, q.Text)
	r, err := ix.Rank(ctx, Query{Text: q.Text, Context: q.Context, K: usagePool, Allow: q.Allow, Mode: q.Mode, NoUsage: true})
	if err != nil {
		return nil
	}
	sc := u.getScratch()
	defer u.putScratch(sc)
	if !u.vote(uq, r.Hits, leftOut{entry: -1}, ranking, usageCommon, sc) {
		return nil
	}
	out := map[string]UsageReason{}
	for _, t := range sc.tools {
		if name := u.tools[t]; name != "" {
			out[name] = UsageReason{Share: sc.toolP[t], Weight: u.w}
		}
	}
	for _, t := range sc.apart {
		name := u.tools[t]
		if name == "" {
			continue
		}
		why := out[name]
		why.Weight = u.w
		why.OwnerCalls = int(sc.ownerN[t])
		why.Firmness = sc.ownerP[t] * ownerFirmness(sc.ownerN[t])
		why.Author = sc.authorP[t]
		out[name] = why
	}
	// Who: each principal's votes for each tool.
	type vote struct {
		p int32
		v float64
	}
	by := map[int32][]vote{}
	for c, i := range sc.cand {
		v := sc.votes[c]
		if v == 0 {
			v = sc.kern[c] // an author's
		}
		if v < 1e-3 {
			continue
		}
		t, p := u.toolID[i], u.principal[i]
		k := slices.IndexFunc(by[t], func(x vote) bool { return x.p == p })
		if k < 0 {
			by[t] = append(by[t], vote{p, v})
		} else {
			by[t][k].v += v
		}
	}
	for t, vs := range by {
		name := u.tools[t]
		why, ok := out[name]
		if !ok || name == "" {
			continue
		}
		slices.SortFunc(vs, func(a, b vote) int {
			if c := cmp.Compare(b.v, a.v); c != 0 {
				return c
			}
			return strings.Compare(u.principals[a.p], u.principals[b.p])
		})
		for _, x := range vs[:min(3, len(vs))] {
			why.By = append(why.By, u.principals[x.p])
		}
		out[name] = why
	}
	return out
}
