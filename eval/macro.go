package eval

import "math"

// Mean is the macro average of one figure over groups (corpora, catalogs):
// every group weighs the same, whatever its number of queries. A group in
// which the figure is undefined (figure returns NaN: a "no tool fits"
// precision where "no tool fits" was never said, say) is left out; with no
// group defining it, the mean is 0. The values are summed in the groups'
// order, so the same groups in the same order give the same bits.
//
// Every macro average of toolsrv's figures (Macro, MacroOffers, the
// threshold sweep's, the last-step trainer's) is made of Mean.
func Mean[T any](groups []T, figure func(*T) float64) float64 {
	var sum float64
	n := 0
	for i := range groups {
		if v := figure(&groups[i]); !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Macro averages per-corpus metrics with equal weight per corpus (Mean);
// counts are summed.
func Macro(ms []Metrics) Metrics {
	out := Metrics{Corpus: "macro"}
	for _, m := range ms {
		out.Queries += m.Queries
		out.Degraded += m.Degraded
	}
	out.R1 = Mean(ms, func(m *Metrics) float64 { return m.R1 })
	out.R5 = Mean(ms, func(m *Metrics) float64 { return m.R5 })
	out.R10 = Mean(ms, func(m *Metrics) float64 { return m.R10 })
	out.NDCG10 = Mean(ms, func(m *Metrics) float64 { return m.NDCG10 })
	out.MRR = Mean(ms, func(m *Metrics) float64 { return m.MRR })
	return out
}

// MacroOffers averages offered-set figures with equal weight per corpus
// (Mean); the "no tool fits" recall over the corpora that have abstain
// requests, its precision over those where "no tool fits" was said; counts
// are summed.
func MacroOffers(ms []OfferMetrics) OfferMetrics {
	out := OfferMetrics{Corpus: "macro"}
	for _, m := range ms {
		out.Answerable += m.Answerable
		out.Abstain += m.Abstain
		out.NoToolFits += m.NoToolFits
	}
	out.Hit = Mean(ms, func(m *OfferMetrics) float64 { return m.Hit })
	out.Offered = Mean(ms, func(m *OfferMetrics) float64 { return m.Offered })
	out.Accuracy = Mean(ms, func(m *OfferMetrics) float64 { return m.Accuracy })
	out.AbstainRecall = Mean(ms, func(m *OfferMetrics) float64 { return definedIf(m.Abstain > 0, m.AbstainRecall) })
	out.AbstainPrecision = Mean(ms, func(m *OfferMetrics) float64 { return definedIf(m.NoToolFits > 0, m.AbstainPrecision) })
	return out
}

// definedIf is v when ok, else NaN (undefined, for Mean).
func definedIf(ok bool, v float64) float64 {
	if !ok {
		return math.NaN()
	}
	return v
}
