package laststep

import (
	"math"
	"sort"

	"github.com/toolsrv/toolsrv/learn"
)

// BoostOptions are gradient boosting settings (logistic loss, depth-limited
// trees on quantile bins, written out here: a few dozen lines, and the
// model must be plain data the binary evaluates without a library).
type BoostOptions struct {
	Trees, Depth, MinLeaf, Bins int
	Rate, Lambda                float64
}

// DefaultBoost are the shipped settings.
func DefaultBoost() BoostOptions {
	return BoostOptions{Trees: 150, Depth: 3, MinLeaf: 100, Bins: 32, Rate: 0.05, Lambda: 10}
}

// FitBoost fits boosted trees to labels y (0/1) with per-row weights w.
func FitBoost(x [][]float64, y, w []float64, o BoostOptions) *learn.Forest {
	n := len(x)
	if n == 0 {
		return &learn.Forest{}
	}
	nf := len(x[0])
	// quantile thresholds per feature
	cuts := make([][]float64, nf)
	col := make([]float64, n)
	for f := range nf {
		for i := range n {
			col[i] = x[i][f]
		}
		sort.Float64s(col)
		var c []float64
		for b := 1; b < o.Bins; b++ {
			v := col[b*n/o.Bins]
			if len(c) == 0 || v > c[len(c)-1] {
				c = append(c, v)
			}
		}
		cuts[f] = c
	}
	// bin index of every value: bin k holds values in [cuts[k-1], cuts[k])
	bin := make([][]uint8, n)
	for i := range n {
		bin[i] = make([]uint8, nf)
		for f := range nf {
			bin[i][f] = uint8(sort.SearchFloat64s(cuts[f], x[i][f]+0)) // values equal to a cut go right
			if k := int(bin[i][f]); k < len(cuts[f]) && x[i][f] >= cuts[f][k] {
				bin[i][f]++
			}
		}
	}
	var pos, tot float64
	for i := range n {
		pos += w[i] * y[i]
		tot += w[i]
	}
	p0 := math.Min(math.Max(pos/tot, 1e-6), 1-1e-6)
	forest := &learn.Forest{Base: math.Log(p0 / (1 - p0))}
	score := make([]float64, n)
	for i := range score {
		score[i] = forest.Base
	}
	g := make([]float64, n)
	h := make([]float64, n)
	for range o.Trees {
		for i := range n {
			p := learn.Sigmoid(score[i])
			g[i] = w[i] * (p - y[i])
			h[i] = w[i] * math.Max(p*(1-p), 1e-6)
		}
		t := &learn.Tree{}
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		var grow func(rows []int, depth int) int
		grow = func(rows []int, depth int) int {
			id := len(t.Feature)
			t.Feature = append(t.Feature, -1)
			t.Threshold = append(t.Threshold, 0)
			t.Left = append(t.Left, 0)
			t.Right = append(t.Right, 0)
			var G, H float64
			for _, i := range rows {
				G += g[i]
				H += h[i]
			}
			t.Value = append(t.Value, -o.Rate*G/(H+o.Lambda))
			if depth >= o.Depth || len(rows) < 2*o.MinLeaf {
				return id
			}
			bestGain, bestF, bestB := 1e-9, -1, 0
			parent := G * G / (H + o.Lambda)
			var hg, hh [256]float64
			var hc [256]int
			for f := range nf {
				clear(hg[:])
				clear(hh[:])
				clear(hc[:])
				for _, i := range rows {
					b := bin[i][f]
					hg[b] += g[i]
					hh[b] += h[i]
					hc[b]++
				}
				var gl, hl float64
				cl := 0
				for b := 0; b < len(cuts[f]); b++ {
					gl += hg[b]
					hl += hh[b]
					cl += hc[b]
					if cl < o.MinLeaf || len(rows)-cl < o.MinLeaf {
						continue
					}
					gr, hr := G-gl, H-hl
					gain := gl*gl/(hl+o.Lambda) + gr*gr/(hr+o.Lambda) - parent
					if gain > bestGain {
						bestGain, bestF, bestB = gain, f, b
					}
				}
			}
			if bestF < 0 {
				return id
			}
			var left, right []int
			for _, i := range rows {
				if int(bin[i][bestF]) <= bestB {
					left = append(left, i)
				} else {
					right = append(right, i)
				}
			}
			t.Feature[id] = bestF
			t.Threshold[id] = cuts[bestF][bestB]
			l := grow(left, depth+1)
			r := grow(right, depth+1)
			t.Left[id], t.Right[id] = l, r
			return id
		}
		grow(rows, 0)
		forest.Trees = append(forest.Trees, *t)
		for i := range n {
			score[i] += forestTreeEval(t, x[i])
		}
	}
	return forest
}

func forestTreeEval(t *learn.Tree, x []float64) float64 {
	n := 0
	for t.Feature[n] >= 0 {
		if x[t.Feature[n]] < t.Threshold[n] {
			n = t.Left[n]
		} else {
			n = t.Right[n]
		}
	}
	return t.Value[n]
}

// FitAnswerableTrees fits boosted trees for answerability on the samples'
// query-level features under candidate model m.
func FitAnswerableTrees(m *learn.Model, samples []Sample, o BoostOptions, weightNeg float64) *learn.Forest {
	var x [][]float64
	var y, w []float64
	for i := range samples {
		s := &samples[i]
		if s.Named || len(s.Cand) == 0 {
			continue
		}
		qf, _, _ := AnsFeatures(m, s)
		x = append(x, append([]float64(nil), qf[:]...))
		if s.Answerable {
			y = append(y, 1)
			w = append(w, 1)
		} else {
			y = append(y, 0)
			w = append(w, weightNeg)
		}
	}
	return FitBoost(x, y, w, o)
}
