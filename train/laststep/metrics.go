package laststep

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/learn"
)

// Decision is an offered-set rule over learned scores (what thresholds
// files of version 2 hold): "no tool fits" when the answerability is below
// MinAnswerable; otherwise the best tools by share while their share stays
// at least Relative × the best share, the shares offered so far stay below
// Mass, their score (answerability × share) at least Min, at most MaxTools.
type Decision struct {
	MinAnswerable, Mass, Min, Relative float64
	MaxTools                           int
}

func (d Decision) String() string {
	return fmt.Sprintf("minAnswerable %.2f mass %.2f min %.3f relative %.2f max %d", d.MinAnswerable, d.Mass, d.Min, d.Relative, d.MaxTools)
}

// Offer returns how many of the tools in order (sorted by share, best
// first) d offers, given the answerability p.
func (d Decision) Offer(p float64, shares []float64, order []int) int {
	if p < d.MinAnswerable || len(order) == 0 {
		return 0
	}
	best := shares[order[0]]
	var cum float64
	n := 0
	for _, j := range order {
		s := shares[j]
		if n >= d.MaxTools || cum >= d.Mass || p*s < d.Min || s < d.Relative*best {
			break
		}
		cum += s
		n++
	}
	return n
}

// Scored is a sample under a model: its answerability and pool order.
type Scored struct {
	*Sample
	P      float64
	Shares []float64
	Order  []int // pool indices by learned share, best first
}

// ProbeLogits returns, per catalog, the sorted answerability logits of its
// probe samples under m: what the index computes (index/probes.go).
func ProbeLogits(m *learn.Model, samples []Sample) map[string][]float64 {
	out := map[string][]float64{}
	for i := range samples {
		s := &samples[i]
		if s.Probe {
			out[s.Catalog] = append(out[s.Catalog], SampleLogit(m, s))
		}
	}
	for _, z := range out {
		sort.Float64s(z)
	}
	return out
}

// SampleLogit is the uncalibrated answerability logit of a sample, as the
// index computes it for a probe: a named tool counts as answerable beyond
// doubt, an empty pool as the opposite.
func SampleLogit(m *learn.Model, s *Sample) float64 {
	switch {
	case s.Named:
		return 20
	case len(s.Cand) == 0:
		return -20
	}
	qf, _, _ := AnsFeatures(m, s)
	return m.Logit(&qf)
}

// ScoreAll applies the model to every sample (probes included), with the
// answerability calibrated by each catalog's probes when m has a
// calibration.
func ScoreAll(m *learn.Model, samples []Sample) []Scored {
	probes := ProbeLogits(m, samples)
	out := make([]Scored, len(samples))
	for i := range samples {
		s := &samples[i]
		qf, _, shares := AnsFeatures(m, s)
		p := 0.0
		if len(s.Cand) > 0 {
			p = m.Calibrated(m.Logit(&qf), probes[s.Catalog])
		}
		if s.Named {
			p = 1
		}
		order := make([]int, len(shares))
		for j := range order {
			order[j] = j
		}
		sort.SliceStable(order, func(a, b int) bool {
			if shares[order[a]] != shares[order[b]] {
				return shares[order[a]] > shares[order[b]]
			}
			return s.Names[order[a]] < s.Names[order[b]]
		})
		out[i] = Scored{Sample: s, P: p, Shares: shares, Order: order}
	}
	return out
}

// Figures are a group's ranking and offered-set figures.
type Figures struct {
	Group                 string
	Queries, Answerable   int
	R1, R3, R5            float64 // learned order, answerable requests
	HR1, HR3, HR5         float64 // hybrid order
	Hit, Offered          float64 // offered set: hit rate and mean size over answerable requests
	AbstainRec, AbstainPr float64
	Abstain               int // unanswerable requests
	// Accuracy is the share of requests decided right: a hit on an
	// answerable one, "no tool fits" on an unanswerable one.
	Accuracy        float64
	MaxOfferedQuery int
}

func recallAt(rel []bool, order []int, nrel, k int) float64 {
	if nrel == 0 {
		return 0
	}
	h := 0
	for i := 0; i < k && i < len(order); i++ {
		if rel[order[i]] {
			h++
		}
	}
	return float64(h) / float64(nrel)
}

// Measure computes figures for the scored samples, with the offered set of
// d (d == nil: the hybrid baseline rule base).
func Measure(group string, ss []Scored, d Decision, base *BaseRule) Figures {
	f := Figures{Group: group, Queries: len(ss)}
	var said, saidRight int
	ident := make([]int, 0, 64)
	for _, s := range ss {
		ident = ident[:0]
		for j := range s.Names {
			ident = append(ident, j)
		}
		var n int
		var inSet func(i int) int
		if base != nil {
			n = base.Offer(s.Sample)
			inSet = func(i int) int { return ident[i] }
		} else {
			n = d.Offer(s.P, s.Shares, s.Order)
			inSet = func(i int) int { return s.Order[i] }
		}
		if s.Named {
			n = max(n, 1)
		}
		if !s.Answerable {
			f.Abstain++
			if n == 0 {
				said++
				saidRight++
			}
			continue
		}
		f.Answerable++
		nrel := s.NRel
		if s.Named && s.NamedRel {
			f.R1++
			f.R3++
			f.R5++
			f.HR1++
			f.HR3++
			f.HR5++
			f.Hit++
			f.Offered += float64(n)
			continue
		}
		f.R1 += recallAt(s.Rel, s.Order, nrel, 1)
		f.R3 += recallAt(s.Rel, s.Order, nrel, 3)
		f.R5 += recallAt(s.Rel, s.Order, nrel, 5)
		f.HR1 += recallAt(s.Rel, ident, nrel, 1)
		f.HR3 += recallAt(s.Rel, ident, nrel, 3)
		f.HR5 += recallAt(s.Rel, ident, nrel, 5)
		if n == 0 {
			said++
			continue
		}
		for i := 0; i < n && i < len(s.Rel); i++ {
			if s.Rel[inSet(i)] {
				f.Hit++
				break
			}
		}
		f.Offered += float64(n)
		f.MaxOfferedQuery = max(f.MaxOfferedQuery, n)
	}
	if f.Queries > 0 {
		f.Accuracy = (f.Hit + float64(saidRight)) / float64(f.Queries)
	}
	if a := float64(f.Answerable); a > 0 {
		f.R1, f.R3, f.R5, f.HR1, f.HR3, f.HR5 = f.R1/a, f.R3/a, f.R5/a, f.HR1/a, f.HR3/a, f.HR5/a
		f.Hit /= a
		f.Offered /= a
	}
	if f.Abstain > 0 {
		f.AbstainRec = float64(saidRight) / float64(f.Abstain)
	}
	f.AbstainPr = math.NaN()
	if said > 0 {
		f.AbstainPr = float64(saidRight) / float64(said)
	}
	return f
}

// BaseRule is the fixed-fusion offered set of thresholds version 1: hybrid
// score at least Min, within Relative of the best, at most MaxTools.
type BaseRule struct {
	Min, Relative float64
	MaxTools      int
}

func (b *BaseRule) Offer(s *Sample) int {
	n := 0
	for i := range s.Cand {
		sc := s.Cand[i][learn.CandScore]
		if n >= b.MaxTools || sc < b.Min || sc < b.Relative*s.Cand[0][learn.CandScore] {
			break
		}
		n++
	}
	return n
}

// Macro averages figures with equal weight per group (eval.Mean): the
// "no tool fits" precision over the groups where it is defined (NaN: never
// said); counts are summed, MaxOfferedQuery is the largest.
func Macro(name string, fs []Figures) Figures {
	m := Figures{Group: name}
	for _, f := range fs {
		m.Queries += f.Queries
		m.Answerable += f.Answerable
		m.Abstain += f.Abstain
		m.MaxOfferedQuery = max(m.MaxOfferedQuery, f.MaxOfferedQuery)
	}
	mean := func(figure func(*Figures) float64) float64 { return eval.Mean(fs, figure) }
	m.R1 = mean(func(f *Figures) float64 { return f.R1 })
	m.R3 = mean(func(f *Figures) float64 { return f.R3 })
	m.R5 = mean(func(f *Figures) float64 { return f.R5 })
	m.HR1 = mean(func(f *Figures) float64 { return f.HR1 })
	m.HR3 = mean(func(f *Figures) float64 { return f.HR3 })
	m.HR5 = mean(func(f *Figures) float64 { return f.HR5 })
	m.Hit = mean(func(f *Figures) float64 { return f.Hit })
	m.Offered = mean(func(f *Figures) float64 { return f.Offered })
	m.AbstainRec = mean(func(f *Figures) float64 { return f.AbstainRec })
	m.AbstainPr = mean(func(f *Figures) float64 { return f.AbstainPr })
	m.Accuracy = mean(func(f *Figures) float64 { return f.Accuracy })
	return m
}

// Table formats figures.
func Table(fs []Figures) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %6s %6s | %6s %6s %6s | %6s %6s %6s | %6s %6s %7s %7s %6s\n", "group", "reqs", "abst",
		"hR@1", "hR@3", "hR@5", "R@1", "R@3", "R@5", "hit", "offer", "abstRec", "abstPr", "acc")
	for _, f := range fs {
		fmt.Fprintf(&b, "%-28s %6d %6d | %6.3f %6.3f %6.3f | %6.3f %6.3f %6.3f | %6.3f %6.2f %7.3f %7.3f %6.3f\n", f.Group, f.Queries, f.Abstain,
			f.HR1, f.HR3, f.HR5, f.R1, f.R3, f.R5, f.Hit, f.Offered, f.AbstainRec, f.AbstainPr, f.Accuracy)
	}
	return b.String()
}
