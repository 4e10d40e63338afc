package thresholds

import (
	"toolsrv/index"
	"toolsrv/registry"
)

// FromRanking turns an index ranking's hits into candidates.
func FromRanking(r index.Ranking) []Candidate {
	out := make([]Candidate, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = Candidate{Name: h.Name, Score: h.Score}
	}
	return out
}

// Apply is Select over an index ranking: the call the prompt assembler, the
// CLI's rank and the 9P rank files make after index.Rank. tier is usually
// TierOf(catalog); hot is usually HotTools(catalog, profile.Allows) (nil
// when there is no agent). The ranking's Degraded flag picks the levels.
func (p Policy) Apply(r index.Ranking, tier func(string) registry.Tier, hot []string) Selection {
	return p.Select(FromRanking(r), Context{Tier: tier, Hot: hot, Degraded: r.Degraded})
}
