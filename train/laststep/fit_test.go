package laststep

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolsrv/toolsrv/learn"
)

func TestStandardise(t *testing.T) {
	for _, c := range []struct {
		name        string
		rows        [][]float64
		mean, scale []float64
	}{
		{"two rows", [][]float64{{1, 2}, {3, 2}}, []float64{2, 2}, []float64{1, 1e-6}},
		{"one row", [][]float64{{5}}, []float64{5}, []float64{1e-6}},
		{"none", nil, []float64{0}, []float64{1e-6}},
		{"spread", [][]float64{{0}, {0}, {4}, {4}}, []float64{2}, []float64{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mean, scale := standardise(c.rows, len(c.mean))
			if !slices.Equal(mean, c.mean) || !slices.Equal(scale, c.scale) {
				t.Errorf("standardise = %v, %v; want %v, %v", mean, scale, c.mean, c.scale)
			}
		})
	}
}

func TestAdam(t *testing.T) {
	// minimise (w0 − 3)² + (w1 − 3)² + (bias − 1)²; w1 free of the penalty
	f := func(w, g []float64) float64 {
		g[0], g[1], g[2] = 2*(w[0]-3), 2*(w[1]-3), 2*(w[2]-1)
		return (w[0]-3)*(w[0]-3) + (w[1]-3)*(w[1]-3) + (w[2]-1)*(w[2]-1)
	}
	for _, c := range []struct {
		name      string
		l2        float64
		w0, w1, b float64
	}{
		{"no penalty", 0, 3, 3, 1},
		// with L2 λ on w0: (w0−3)² + λ/2·w0² is least at 6/(2+λ)
		{"penalty on w0 only", 2, 1.5, 3, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logged []int
			o := FitOptions{L2: c.l2, Free: []int{1}, Iters: 3000, LR: 0.05, Logger: func(it int, _ float64) { logged = append(logged, it) }}
			w := adam(2, o, f)
			for i, want := range []float64{c.w0, c.w1, c.b} {
				if math.Abs(w[i]-want) > 1e-3 {
					t.Errorf("w = %v, want %v, %v, %v", w, c.w0, c.w1, c.b)
					break
				}
			}
			if len(logged) != 30 || logged[len(logged)-1] != 3000 {
				t.Errorf("logged at %v, want every 100 iterations", logged)
			}
		})
	}
}

// poolSamples makes n training samples of pools of 4 candidates whose
// features are noise in [0, 0.5) but for the relevant candidate's name
// coverage, which is 1 higher: data a candidate model separates.
func poolSamples(rng *rand.Rand, n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		s := Sample{ID: "s", Answerable: true, NRel: 1, Names: []string{"a", "b", "c", "d"}, Rel: make([]bool, 4),
			Cand: make([][learn.NumCand]float64, 4)}
		rel := rng.IntN(4)
		s.Rel[rel] = true
		for j := range s.Cand {
			for k := range s.Cand[j] {
				s.Cand[j][k] = rng.Float64() / 2
			}
		}
		s.Cand[rel][learn.CandCovName]++
		out[i] = s
	}
	return out
}

// first is the pool index the candidate model l scores highest.
func first(l *learn.Linear, s *Sample) int {
	best, bestZ := -1, math.Inf(-1)
	for j := range s.Cand {
		if z := l.Eval(s.Cand[j][:]); z > bestZ {
			best, bestZ = j, z
		}
	}
	return best
}

func TestFitCandidateRanksTheRightToolFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	train := poolSamples(rng, 200)
	l := FitCandidate(train, DefaultFit())
	if !slices.Equal(l.Features, learn.CandNames[:]) || len(l.W) != learn.NumCand || len(l.Mean) != learn.NumCand || len(l.Scale) != learn.NumCand {
		t.Fatalf("model %+v: want one weight, mean and scale per candidate feature", l)
	}
	for k, w := range l.W {
		if k != learn.CandCovName && math.Abs(w) >= l.W[learn.CandCovName] {
			t.Errorf("weight of %s %v, of covName %v: want covName's the largest", learn.CandNames[k], w, l.W[learn.CandCovName])
		}
	}
	test := poolSamples(rng, 100)
	for i := range test {
		if j := first(&l, &test[i]); !test[i].Rel[j] {
			t.Fatalf("test sample %d: candidate %d first, the relevant one is %d", i, j, slices.Index(test[i].Rel, true))
		}
	}
	// Samples without a relevant candidate in the pool, or with a named
	// tool, do not count.
	noisy := slices.Clone(train)
	for _, s := range poolSamples(rng, 50) {
		s.Named = true
		noisy = append(noisy, s)
	}
	for _, s := range poolSamples(rng, 50) {
		clear(s.Rel)
		noisy = append(noisy, s)
	}
	if again := FitCandidate(noisy, DefaultFit()); !slices.Equal(again.W, l.W) || !slices.Equal(again.Mean, l.Mean) {
		t.Errorf("named samples and samples without a relevant candidate changed the fit:\n%v\n%v", again.W, l.W)
	}
	if again := FitCandidate(train, DefaultFit()); !slices.Equal(again.W, l.W) {
		t.Error("two fits on the same samples differ")
	}
}

// neutral is a candidate model that scores every candidate 0.
func neutral() learn.Linear {
	ones := make([]float64, learn.NumCand)
	for i := range ones {
		ones[i] = 1
	}
	return learn.Linear{Features: learn.CandNames[:], Mean: make([]float64, learn.NumCand), Scale: ones, W: make([]float64, learn.NumCand)}
}

// answerSamples makes n samples, answerable when the share of the
// request's words no tool has (AnsUnknown) is below 0.5.
func answerSamples(rng *rand.Rand, n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		s := Sample{Catalog: "c", ID: "q", Names: []string{"a", "b"}, Rel: []bool{false, false}, Cand: make([][learn.NumCand]float64, 2)}
		s.Answerable = i%2 == 0
		u := 0.6 + 0.4*rng.Float64()
		if s.Answerable {
			u = 0.4 * rng.Float64()
			s.Rel[0] = true
		}
		s.Query[learn.AnsUnknown] = u
		s.Query[learn.AnsTerms] = rng.Float64()
		out[i] = s
	}
	return out
}

func TestFitAnswerableSeparates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := &learn.Model{Cand: neutral()}
	m.Ans = FitAnswerable(m, answerSamples(rng, 200), DefaultFit(), 1)
	if m.Ans.W[learn.AnsUnknown] >= 0 {
		t.Errorf("weight of the unknown share %v: want it negative", m.Ans.W[learn.AnsUnknown])
	}
	test := answerSamples(rng, 100)
	for i := range test {
		qf, _, _ := AnsFeatures(m, &test[i])
		if p := m.Answerable(&qf); (p > 0.5) != test[i].Answerable {
			t.Errorf("sample %d (unknown %.2f): answerable %.3f, labelled %v", i, test[i].Query[learn.AnsUnknown], p, test[i].Answerable)
		}
	}
	// A feature in AnsExcluded gets no weight.
	AnsExcluded[learn.AnsUnknown] = true
	defer delete(AnsExcluded, learn.AnsUnknown)
	if w := FitAnswerable(m, answerSamples(rng, 200), DefaultFit(), 1).W[learn.AnsUnknown]; w != 0 {
		t.Errorf("an excluded feature's weight %v", w)
	}
}

func TestFitLogistic(t *testing.T) {
	var rows [][]float64
	var ys []float64
	for i := -10; i <= 10; i++ {
		if i == 0 {
			continue
		}
		x := float64(i) / 5
		rows = append(rows, []float64{x, 7})
		ys = append(ys, map[bool]float64{true: 1, false: 0}[x > 0])
	}
	l := FitLogistic([]string{"x", "constant"}, rows, ys, nil, DefaultFit())
	if !slices.Equal(l.Features, []string{"x", "constant"}) || l.Mean[0] != 0 || l.Mean[1] != 7 {
		t.Fatalf("model %+v", l)
	}
	for i, r := range rows {
		if (l.Eval(r) > 0) != (ys[i] == 1) {
			t.Errorf("x = %v: logit %v, label %v", r[0], l.Eval(r), ys[i])
		}
	}
	// weights: a row of weight 0 does not count
	w := make([]float64, len(rows))
	for i := range w {
		w[i] = 1
	}
	lw := FitLogistic([]string{"x", "constant"}, append(rows, []float64{-2, 7}), append(ys, 1), append(w, 0), DefaultFit())
	for i, r := range rows {
		if (lw.Eval(r) > 0) != (ys[i] == 1) {
			t.Errorf("with a weightless contrary row, x = %v: logit %v, label %v", r[0], lw.Eval(r), ys[i])
		}
	}
}

func TestFitCalibration(t *testing.T) {
	// The answerability logit is 5 − 10·unknown: the probes (unknown 0.45
	// to 0.6) are below the answerable requests (0 to 0.4) and above the
	// unanswerable ones (0.6 to 1).
	m := &learn.Model{Cand: neutral()}
	m.Ans = learn.Linear{Features: learn.AnsNames[:], Mean: make([]float64, learn.NumAns), Scale: make([]float64, learn.NumAns), W: make([]float64, learn.NumAns), B: 5}
	for i := range m.Ans.Scale {
		m.Ans.Scale[i] = 1
	}
	m.Ans.W[learn.AnsUnknown] = -10
	rng := rand.New(rand.NewPCG(5, 6))
	samples := answerSamples(rng, 200)
	var probes []string
	for i := range 20 {
		s := Sample{Catalog: "c", ID: "probe", Probe: true, Names: []string{"a"}, Rel: []bool{false}, Cand: make([][learn.NumCand]float64, 1)}
		s.Query[learn.AnsUnknown] = 0.45 + 0.0075*float64(i)
		samples = append(samples, s)
		probes = append(probes, "probe text")
	}
	m.Calib = FitCalibration(m, samples, probes, DefaultFit())
	if m.Calib.A <= 0 || len(m.Calib.Probes) != 20 {
		t.Fatalf("calibration %+v: want a positive slope and the 20 probes", m.Calib)
	}
	pl := ProbeLogits(m, samples)["c"]
	if len(pl) != 20 || !slices.IsSorted(pl) {
		t.Fatalf("probe logits %v", pl)
	}
	// calibrated: answerable requests above one half, the others below
	wrong := 0
	for i := range samples {
		s := &samples[i]
		if s.Probe {
			continue
		}
		if p := m.Calibrated(SampleLogit(m, s), pl); (p > 0.5) != s.Answerable {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of 200 requests on the wrong side of one half once calibrated", wrong)
	}
}

func TestSampleLogit(t *testing.T) {
	m := &learn.Model{Cand: neutral(), Ans: neutral()}
	m.Ans.Features = learn.AnsNames[:]
	m.Ans.Mean, m.Ans.Scale, m.Ans.W = make([]float64, learn.NumAns), slices.Repeat([]float64{1}, learn.NumAns), make([]float64, learn.NumAns)
	m.Ans.B = 0.25
	for _, c := range []struct {
		name string
		s    Sample
		want float64
	}{
		{"named", Sample{Named: true}, 20},
		{"empty pool", Sample{}, -20},
		{"the model's", Sample{Cand: make([][learn.NumCand]float64, 2)}, 0.25},
	} {
		if got := SampleLogit(m, &c.s); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFitBoostSeparates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var x [][]float64
	var y, w []float64
	for i := range 400 {
		v := rng.Float64()
		x = append(x, []float64{rng.Float64(), v})
		y = append(y, float64(i%2))
		if i%2 == 1 {
			x[i][1] = v + 1 // the second feature separates
		}
		w = append(w, 1)
	}
	o := DefaultBoost()
	o.Trees, o.MinLeaf = 30, 10
	f := FitBoost(x, y, w, o)
	if len(f.Trees) != 30 {
		t.Fatalf("%d trees, want 30", len(f.Trees))
	}
	for i := range x {
		if (f.Eval(x[i]) > 0) != (y[i] == 1) {
			t.Errorf("row %d (%v): %v, label %v", i, x[i], f.Eval(x[i]), y[i])
		}
	}
	if empty := FitBoost(nil, nil, nil, o); len(empty.Trees) != 0 {
		t.Errorf("no rows: %d trees", len(empty.Trees))
	}
}
