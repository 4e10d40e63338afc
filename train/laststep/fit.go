package laststep

import (
	"math"
	"slices"

	"github.com/toolsrv/toolsrv/learn"
)

// Fitting is written out here rather than taken from a library: both models
// are linear (a conditional logit over the pool and a logistic regression),
// a few dozen weights each, fitted by full-batch gradient descent with Adam
// on standardised features and an L2 penalty. Deterministic: no sampling.

// FitOptions are the fitting settings.
type FitOptions struct {
	L2 float64 // penalty on the weights (not the bias), per sample
	// Free lists weights without the penalty (the candidate model's hybrid
	// score: the penalty then pulls the model toward the fixed fusion).
	Free   []int
	Iters  int
	LR     float64
	Logger func(iter int, loss float64)
}

// DefaultFit are the settings the shipped model was fitted with.
func DefaultFit() FitOptions { return FitOptions{L2: 1e-3, Iters: 400, LR: 0.05} }

// standardise returns means and scales (standard deviation, at least 1e-6)
// of the rows.
func standardise(rows [][]float64, dim int) (mean, scale []float64) {
	mean = make([]float64, dim)
	scale = make([]float64, dim)
	for _, r := range rows {
		for j := range dim {
			mean[j] += r[j]
		}
	}
	n := float64(max(1, len(rows)))
	for j := range dim {
		mean[j] /= n
	}
	for _, r := range rows {
		for j := range dim {
			d := r[j] - mean[j]
			scale[j] += d * d
		}
	}
	for j := range dim {
		scale[j] = math.Max(math.Sqrt(scale[j]/n), 1e-6)
	}
	return mean, scale
}

// adam minimises f (which returns the loss and fills the gradient) over
// dim weights plus a bias (the last element) from zero.
func adam(dim int, o FitOptions, f func(w, grad []float64) float64) []float64 {
	w := make([]float64, dim+1)
	g := make([]float64, dim+1)
	m := make([]float64, dim+1)
	v := make([]float64, dim+1)
	const b1, b2, eps = 0.9, 0.999, 1e-8
	for it := 1; it <= o.Iters; it++ {
		clear(g)
		loss := f(w, g)
		for j := range dim { // L2 on the weights
			if slices.Contains(o.Free, j) {
				continue
			}
			loss += 0.5 * o.L2 * w[j] * w[j]
			g[j] += o.L2 * w[j]
		}
		for j := range w {
			m[j] = b1*m[j] + (1-b1)*g[j]
			v[j] = b2*v[j] + (1-b2)*g[j]*g[j]
			mh := m[j] / (1 - math.Pow(b1, float64(it)))
			vh := v[j] / (1 - math.Pow(b2, float64(it)))
			w[j] -= o.LR * mh / (math.Sqrt(vh) + eps)
		}
		if o.Logger != nil && (it%100 == 0 || it == o.Iters) {
			o.Logger(it, loss)
		}
	}
	return w
}

// FitCandidate fits the candidate model: a conditional logit over each
// sample's pool, maximising the share of the relevant tools. Samples
// without a relevant tool in the pool (or with a named tool) are skipped.
func FitCandidate(samples []Sample, o FitOptions) learn.Linear {
	var groups [][][]float64
	var rels [][]bool
	var rows [][]float64
	for i := range samples {
		s := &samples[i]
		if s.Named || !anyTrue(s.Rel) {
			continue
		}
		g := make([][]float64, len(s.Cand))
		for j := range s.Cand {
			g[j] = s.Cand[j][:]
			rows = append(rows, g[j])
		}
		groups = append(groups, g)
		rels = append(rels, s.Rel)
	}
	dim := learn.NumCand
	mean, scale := standardise(rows, dim)
	// standardised copies
	zs := make([][][]float64, len(groups))
	for i, g := range groups {
		zs[i] = make([][]float64, len(g))
		for j, r := range g {
			z := make([]float64, dim)
			for k := range dim {
				z[k] = (r[k] - mean[k]) / scale[k]
			}
			zs[i][j] = z
		}
	}
	n := float64(len(zs))
	o.Free = []int{learn.CandScore}
	w := adam(dim, o, func(w, grad []float64) float64 {
		var loss float64
		var logit, p []float64
		for i, g := range zs {
			logit = logit[:0]
			mx := math.Inf(-1)
			for _, z := range g {
				s := 0.0
				for k := range dim {
					s += w[k] * z[k]
				}
				logit = append(logit, s)
				mx = max(mx, s)
			}
			var zAll, zRel float64
			p = p[:0]
			for j, s := range logit {
				e := math.Exp(s - mx)
				p = append(p, e)
				zAll += e
				if rels[i][j] {
					zRel += e
				}
			}
			loss -= math.Log(zRel / zAll)
			// d/dlogit_j = p_j(all) − p_j(rel)
			for j, z := range g {
				d := p[j] / zAll
				if rels[i][j] {
					d -= p[j] / zRel
				}
				for k := range dim {
					grad[k] += d * z[k] / n
				}
			}
		}
		return loss / n
	})
	l := learn.Linear{Features: learn.CandNames[:], Mean: mean, Scale: scale, W: w[:dim]}
	return l
}

func anyTrue(b []bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}

// AnsExcluded are the answerability features FitAnswerable leaves out
// (learn fit -catalog=false puts the catalog's size here: in the training
// data it also tells the data sets apart; measured, leaving it out was
// worse on the eval dev half).
var AnsExcluded = map[int]bool{}

// AnsFeatures computes each sample's answerability features with the
// candidate model m (pool shares), and the logits and shares themselves.
func AnsFeatures(m *learn.Model, s *Sample) (qf [learn.NumAns]float64, logits, shares []float64) {
	qf = s.Query
	logits = make([]float64, len(s.Cand))
	shares = make([]float64, len(s.Cand))
	if len(s.Cand) > 0 {
		m.Scores(s.Cand, logits, shares, &qf)
	}
	return qf, logits, shares
}

// FitAnswerable fits the answerability model (logistic regression: does
// any tool of the catalog serve the request?) on the samples' query-level
// features under candidate model m. weightNeg multiplies the loss of the
// unanswerable samples.
// Features in AnsExcluded are left out (weight 0).
func FitAnswerable(m *learn.Model, samples []Sample, o FitOptions, weightNeg float64) learn.Linear {
	dim := learn.NumAns
	var rows [][]float64
	var ys []float64
	for i := range samples {
		s := &samples[i]
		if s.Named || len(s.Cand) == 0 {
			continue
		}
		qf, _, _ := AnsFeatures(m, s)
		r := make([]float64, dim)
		copy(r, qf[:])
		rows = append(rows, r)
		y := 0.0
		if s.Answerable {
			y = 1
		}
		ys = append(ys, y)
	}
	mean, scale := standardise(rows, dim)
	for _, r := range rows {
		for k := range dim {
			r[k] = (r[k] - mean[k]) / scale[k]
			if AnsExcluded[k] {
				r[k] = 0
			}
		}
	}
	wts := make([]float64, len(ys))
	for i, y := range ys {
		wts[i] = 1
		if y == 0 {
			wts[i] = weightNeg
		}
	}
	w := fitStandardised(dim, rows, ys, wts, o)
	return learn.Linear{Features: learn.AnsNames[:], Mean: mean, Scale: scale, W: w[:dim], B: w[dim]}
}

// FitLogistic fits a logistic regression on rows (standardised inside;
// the returned Linear takes raw rows) with labels ys (0/1) and per-row
// weights wts (nil: 1).
func FitLogistic(names []string, rows [][]float64, ys, wts []float64, o FitOptions) learn.Linear {
	dim := len(names)
	mean, scale := standardise(rows, dim)
	zs := make([][]float64, len(rows))
	for i, r := range rows {
		z := make([]float64, dim)
		for k := range dim {
			z[k] = (r[k] - mean[k]) / scale[k]
		}
		zs[i] = z
	}
	w := fitStandardised(dim, zs, ys, wts, o)
	return learn.Linear{Features: names, Mean: mean, Scale: scale, W: w[:dim], B: w[dim]}
}

// fitStandardised fits the weights (dim of them, then the bias) of a
// logistic regression on standardised rows zs with labels ys (0/1) and
// per-row loss weights wts (nil: 1), by Adam on the weighted mean log loss.
func fitStandardised(dim int, zs [][]float64, ys, wts []float64, o FitOptions) []float64 {
	var wsum float64
	for i := range ys {
		if wts != nil {
			wsum += wts[i]
		} else {
			wsum++
		}
	}
	return adam(dim, o, func(w, grad []float64) float64 {
		var loss float64
		for i, r := range zs {
			s := w[dim]
			for k := range dim {
				s += w[k] * r[k]
			}
			p := learn.Sigmoid(s)
			wt := 1.0
			if wts != nil {
				wt = wts[i]
			}
			pc := math.Min(math.Max(p, 1e-12), 1-1e-12)
			loss -= wt * (ys[i]*math.Log(pc) + (1-ys[i])*math.Log(1-pc))
			d := wt * (p - ys[i]) / wsum
			for k := range dim {
				grad[k] += d * r[k]
			}
			grad[dim] += d
		}
		return loss / wsum
	})
}

// FitCalibration fits the per-catalog calibration of m's answerability
// (learn.Calib): the probes' logits of each catalog under m, then a
// logistic regression of "answerable" on logit(ProbeShare) over the
// training samples (named ones left out). probes are the probe texts.
func FitCalibration(m *learn.Model, samples []Sample, probes []string, o FitOptions) *learn.Calib {
	pl := ProbeLogits(m, samples)
	var rows [][]float64
	var ys []float64
	for i := range samples {
		s := &samples[i]
		if s.Probe || s.ToolText != 0 || s.Named || len(s.Cand) == 0 {
			continue
		}
		z := SampleLogit(m, s)
		u := learn.ProbeShare(pl[s.Catalog], z)
		rows = append(rows, []float64{math.Log(u / (1 - u))})
		y := 0.0
		if s.Answerable {
			y = 1
		}
		ys = append(ys, y)
	}
	l := FitLogistic([]string{"probeShare"}, rows, ys, nil, o)
	// back to raw units: B + W·(x − mean)/scale
	a := l.W[0] / l.Scale[0]
	return &learn.Calib{Probes: probes, A: a, B: l.B - a*l.Mean[0]}
}
