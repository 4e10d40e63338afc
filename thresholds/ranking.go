package thresholds

import (
	"context"
	"sort"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// FromRanking turns an index ranking's hits into candidates.
func FromRanking(r index.Ranking) []Candidate {
	out := make([]Candidate, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = Candidate{Name: h.Name, Score: h.Score, Dense: h.Dense}
	}
	return out
}

// UnmatchedIn says which of r's tools have the embedding as their only
// evidence: no real word of the message in a weighted field (index.Hit's
// Words: a match of its numbers, classes or phrases of stop words alone
// is none), not named, nothing from the usage history
// (Context.Unmatched).
func UnmatchedIn(r index.Ranking) func(string) bool {
	// Built at the first question: Select asks only for a tool after the
	// first (the noise rule) or below the evidence level, and every
	// ranking makes a Context.
	var set map[string]bool
	return func(name string) bool {
		if set == nil {
			set = make(map[string]bool)
			for _, h := range r.Hits {
				if !h.Words && !h.Named && h.Usage == 0 {
					set[h.Name] = true
				}
			}
		}
		return set[name]
	}
}

// Apply is Select over an index ranking: the call the prompt assembler, the
// CLI's rank and the 9P rank files make after index.Rank. tier is usually
// TierOf(catalog); hot is usually ProfileHot(catalog, profile, nil) (nil
// when there is no agent). The ranking's Degraded flag picks the levels.
func (p Policy) Apply(r index.Ranking, tier func(string) registry.Tier, hot []string) Selection {
	return p.Select(FromRanking(r), Context{Tier: tier, Hot: hot, Degraded: r.Degraded, Answerable: r.Answerable, Unmatched: UnmatchedIn(r)})
}

// Ranker is what Offer ranks with; *index.Index satisfies it.
type Ranker interface {
	Rank(ctx context.Context, q index.Query) (index.Ranking, error)
}

// Offer ranks q and applies the policy: the one call a prompt assembler
// (and the CLI's rank, and the 9P rank files) makes. The profile (nil: no
// agent) restricts the ranking to the tools it allows, unless q.Allow is
// already set, and its hot tools (ProfileHot) are always offered; without
// a profile no tool is offered on its tier alone. q.K is raised to MaxTools when smaller (0
// ranks every tool). A degraded ranking, or one asked in index.Lexical
// mode, gets the Degraded levels. The ranking is returned too, for its
// Degraded flag, Reason and Revision.
func (p Policy) Offer(ctx context.Context, r Ranker, cat *registry.Catalog, q index.Query, profile *registry.Profile) (Selection, index.Ranking, error) {
	if q.Allow == nil && profile != nil {
		q.Allow = profile.Allows
	}
	if q.K > 0 {
		q.K = max(q.K, p.For(false).MaxTools, p.For(true).MaxTools)
	}
	rk, err := r.Rank(ctx, q)
	if err != nil {
		return Selection{}, rk, err
	}
	// Lexical-only scores get the degraded levels, whether the embedder
	// failed or the caller asked for BM25.
	c := Context{Tier: TierOf(cat), Hot: ProfileHot(cat, profile, q.Allow), Degraded: rk.Degraded || q.Mode == index.Lexical, Answerable: rk.Answerable, Unmatched: UnmatchedIn(rk)}
	return p.Select(FromRanking(rk), c), rk, nil
}

// ProfileHot lists the hot tools of an agent's profile: the visible tools of
// tier hot that the profile names (in autoLoad or allowTools) and that allow
// (nil: all) accepts, sorted by name. A nil profile has none.
func ProfileHot(cat *registry.Catalog, profile *registry.Profile, allow func(string) bool) []string {
	if profile == nil || cat == nil {
		return nil
	}
	// Walk the profile's names, not the catalog: a profile names a few
	// tools, a catalog may hold 100k.
	names := append([]string(nil), profile.AutoLoad...)
	if profile.AllowTools != nil {
		names = append(names, *profile.AllowTools...)
	}
	sort.Strings(names)
	var out []string
	for i, n := range names {
		if i > 0 && names[i-1] == n {
			continue
		}
		t, ok := cat.Get(n)
		if ok && t.Tier == registry.Hot && profile.Allows(n) && (allow == nil || allow(n)) {
			out = append(out, n)
		}
	}
	return out
}
