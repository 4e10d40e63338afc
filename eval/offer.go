package eval

import (
	"context"
	"fmt"
)

// OfferMetrics are the figures of the offered set: what a prompt assembler
// gets once the thresholds are applied.
type OfferMetrics struct {
	Corpus string `json:"corpus"`
	// Answerable requests have relevant tools; Abstain requests have none
	// ("relevant": []) and must get "no tool fits".
	Answerable int `json:"answerable"`
	Abstain    int `json:"abstain"`
	// Hit is the share of answerable requests whose offered set holds a
	// relevant tool; Offered the mean number of tools offered to them.
	Hit     float64 `json:"hit"`
	Offered float64 `json:"offered"`
	// AbstainRecall is the share of abstain requests answered "no tool
	// fits"; AbstainPrecision the share of "no tool fits" answers given to
	// abstain requests (NaN-free: 0 when never said).
	AbstainRecall    float64 `json:"abstainRecall"`
	AbstainPrecision float64 `json:"abstainPrecision"`
	// NoToolFits counts "no tool fits" answers.
	NoToolFits int `json:"noToolFits"`
	// Accuracy is the share of requests decided right: a hit, or "no tool
	// fits" on an abstain request.
	Accuracy float64 `json:"accuracy"`
}

// Offerer returns the tools offered for a request, or noToolFits.
type Offerer func(ctx context.Context, query string) (offered []string, noToolFits bool, err error)

// MeasureOffers runs every request of c through offer.
func MeasureOffers(ctx context.Context, c *Corpus, offer Offerer) (OfferMetrics, error) {
	m := OfferMetrics{Corpus: c.Name}
	right := 0
	for _, q := range c.Queries {
		names, none, err := offer(ctx, q.Text)
		if err != nil {
			return m, fmt.Errorf("corpus %s, query %s: %w", c.Name, q.ID, err)
		}
		if none {
			m.NoToolFits++
		}
		if len(q.Relevant) == 0 {
			m.Abstain++
			if none {
				right++
			}
			continue
		}
		m.Answerable++
		m.Offered += float64(len(names))
		rel := map[string]bool{}
		for _, r := range q.Relevant {
			rel[r] = true
		}
		for _, n := range names {
			if rel[n] {
				m.Hit++
				break
			}
		}
	}
	hits := m.Hit
	if m.Answerable > 0 {
		m.Hit /= float64(m.Answerable)
		m.Offered /= float64(m.Answerable)
	}
	if m.Abstain > 0 {
		m.AbstainRecall = float64(right) / float64(m.Abstain)
	}
	if m.NoToolFits > 0 {
		m.AbstainPrecision = float64(right) / float64(m.NoToolFits)
	}
	if n := m.Answerable + m.Abstain; n > 0 {
		m.Accuracy = (hits + float64(right)) / float64(n)
	}
	return m, nil
}
