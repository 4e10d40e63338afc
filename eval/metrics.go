package eval

import (
	"context"
	"fmt"
	"math"
)

// Metrics are ranking-quality figures, averaged over queries.
type Metrics struct {
	Corpus  string  `json:"corpus"`
	Queries int     `json:"queries"`
	R1      float64 `json:"recall@1"`
	R5      float64 `json:"recall@5"`
	R10     float64 `json:"recall@10"`
	NDCG10  float64 `json:"ndcg@10"`
	MRR     float64 `json:"mrr"`
	// Degraded counts queries answered without dense scores.
	Degraded int `json:"degraded,omitempty"`
}

// Score computes the metrics of one ranking (best first) against the
// relevant names.
func Score(ranked, relevant []string) Metrics {
	rel := map[string]bool{}
	for _, r := range relevant {
		rel[r] = true
	}
	m := Metrics{Queries: 1}
	if len(rel) == 0 {
		return m
	}
	hits := 0
	var dcg float64
	for i, name := range ranked {
		if !rel[name] {
			continue
		}
		hits++
		if m.MRR == 0 {
			m.MRR = 1 / float64(i+1)
		}
		if i < 10 {
			dcg += 1 / math.Log2(float64(i+2))
		}
		n := float64(hits) / float64(len(rel))
		if i < 1 {
			m.R1 = n
		}
		if i < 5 {
			m.R5 = n
		}
		if i < 10 {
			m.R10 = n
		}
	}
	// Recall@k keeps the last value reached within k.
	var idcg float64
	for i := 0; i < min(len(rel), 10); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	m.NDCG10 = dcg / idcg
	return m
}

// Ranker ranks the corpus' tools for a query, best first; degraded reports
// an answer made without dense scores.
type Ranker func(ctx context.Context, query string) (ranked []string, degraded bool, err error)

// Measure runs every query of c that has relevant tools through rank and
// averages the metrics.
func Measure(ctx context.Context, c *Corpus, rank Ranker) (Metrics, error) {
	sum := Metrics{Corpus: c.Name}
	for _, q := range c.Queries {
		if len(q.Relevant) == 0 { // a "no tool fits" request: see MeasureOffers
			continue
		}
		ranked, degraded, err := rank(ctx, q.Text)
		if err != nil {
			return Metrics{}, fmt.Errorf("corpus %s, query %s: %w", c.Name, q.ID, err)
		}
		if degraded {
			sum.Degraded++
		}
		m := Score(ranked, q.Relevant)
		sum.R1 += m.R1
		sum.R5 += m.R5
		sum.R10 += m.R10
		sum.NDCG10 += m.NDCG10
		sum.MRR += m.MRR
		sum.Queries++
	}
	n := float64(max(sum.Queries, 1))
	sum.R1, sum.R5, sum.R10, sum.NDCG10, sum.MRR = sum.R1/n, sum.R5/n, sum.R10/n, sum.NDCG10/n, sum.MRR/n
	return sum, nil
}
