package learn

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestShippedModel(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "learn/v2-") || m.Pool < 2 {
		t.Fatalf("shipped model %q, pool %d", m.ID, m.Pool)
	}
	// the answerability is calibrated per catalog, with probe requests
	// that are off-topic for ordinary catalogs
	if m.Calib == nil || len(m.Calib.Probes) < 100 || m.Calib.A <= 0 {
		t.Fatalf("shipped model without a usable calibration: %+v", m.Calib)
	}
	for _, id := range []string{"builtin/v1-abbe22c2", "builtin/v1-abbe22c2+fit-0123abcd", "builtin/v1"} {
		if !m.Applies(id) {
			t.Errorf("the shipped model does not apply to %s", id)
		}
	}
	for _, id := range []string{"ollama/nomic-embed-text", "builtin/v2-abbe22c2", ""} {
		if m.Applies(id) {
			t.Errorf("the shipped model applies to %s", id)
		}
	}
}

// lin is a Linear with identity standardisation and the given weights.
func lin(names []string, w map[string]float64, b float64) Linear {
	l := Linear{Features: names, Mean: make([]float64, len(names)), Scale: make([]float64, len(names)), W: make([]float64, len(names)), B: b}
	for i, n := range names {
		l.Scale[i] = 1
		l.W[i] = w[n]
	}
	return l
}

func testModel() *Model {
	return &Model{ID: "learn/test", Embedder: "test/hash", Pool: 4,
		Cand: lin(CandNames[:], map[string]float64{"score": 10, "covName": 2}, 0),
		Ans:  lin(AnsNames[:], map[string]float64{"logit": 1}, -1)}
}

func TestScores(t *testing.T) {
	m := testModel()
	cand := make([][NumCand]float64, 3)
	cand[0][CandScore], cand[1][CandScore], cand[2][CandScore] = 0.5, 0.4, 0.1
	cand[1][CandCovName] = 1 // 4 + 2 = 6 > 5: the second candidate wins
	logits, shares := make([]float64, 3), make([]float64, 3)
	var qf [NumAns]float64
	m.Scores(cand, logits, shares, &qf)
	var sum float64
	for _, s := range shares {
		sum += s
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("shares %v sum to %v", shares, sum)
	}
	if !(shares[1] > shares[0] && shares[0] > shares[2]) {
		t.Fatalf("shares %v: want the name match first, then by score", shares)
	}
	if qf[AnsLogit] != 6 || math.Abs(qf[AnsLogitGap]-1) > 1e-12 || qf[AnsCovName] != 1 || qf[AnsSecond] != 5 {
		t.Fatalf("query features %v", qf)
	}
	if p := m.Answerable(&qf); math.Abs(p-Sigmoid(5)) > 1e-12 {
		t.Fatalf("answerable %v, want sigmoid(6−1)", p)
	}
}

func TestParseRefuses(t *testing.T) {
	good, err := json.Marshal(testModel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(good); err != nil {
		t.Fatalf("good model: %v", err)
	}
	for name, edit := range map[string]func(m *Model){
		"pool":             func(m *Model) { m.Pool = 1 },
		"no embedder":      func(m *Model) { m.Embedder = "" },
		"short weights":    func(m *Model) { m.Cand.W = m.Cand.W[1:] },
		"renamed features": func(m *Model) { m.Ans.Features = append([]string{"other"}, m.Ans.Features[1:]...) },
		"zero scale":       func(m *Model) { m.Cand.Scale[3] = 0 },
		"few probes":       func(m *Model) { m.Calib = &Calib{Probes: []string{"a", "b"}, A: 1} },
		"NaN calibration": func(m *Model) {
			m.Calib = &Calib{Probes: strings.Fields("a b c d e f g h i j k"), A: math.NaN()}
		},
		"loop in a tree": func(m *Model) {
			m.AnsTrees = &Forest{Trees: []Tree{{Feature: []int{0, -1}, Threshold: []float64{0, 0}, Left: []int{0, 0}, Right: []int{1, 0}, Value: []float64{0, 1}}}}
		},
	} {
		m := testModel()
		edit(m)
		b, _ := json.Marshal(m)
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestForest(t *testing.T) {
	// x0 < 0.5 ? (x1 < 2 ? 1 : 2) : 3
	f := &Forest{Base: 0.5, Trees: []Tree{{
		Feature:   []int{0, 1, -1, -1, -1},
		Threshold: []float64{0.5, 2, 0, 0, 0},
		Left:      []int{1, 2, 0, 0, 0},
		Right:     []int{4, 3, 0, 0, 0},
		Value:     []float64{0, 0, 1, 2, 3},
	}}}
	if err := f.check(2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		x    []float64
		want float64
	}{{[]float64{0, 0}, 1.5}, {[]float64{0.4, 2}, 2.5}, {[]float64{0.5, 0}, 3.5}} {
		if got := f.Eval(tc.x); got != tc.want {
			t.Errorf("Eval(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// TestProbeShare: the share of probe logits below z, interpolated, inside
// (0,1), non-decreasing in z.
func TestProbeShare(t *testing.T) {
	probes := []float64{-2, -1, 0, 1, 2} // n = 5
	for _, tc := range []struct{ z, want float64 }{
		{-5, 0.5 / 6}, {-2, 1.0 / 6}, {-1.5, 1.5 / 6}, {0, 3.0 / 6}, {1.999, 4.999 / 6}, {2, 5.5 / 6}, {9, 5.5 / 6},
	} {
		if got := ProbeShare(probes, tc.z); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ProbeShare(%v) = %v, want %v", tc.z, got, tc.want)
		}
	}
	prev := 0.0
	for z := -3.0; z <= 3; z += 0.01 {
		u := ProbeShare(probes, z)
		if u <= 0 || u >= 1 || u < prev {
			t.Fatalf("ProbeShare(%v) = %v after %v", z, u, prev)
		}
		prev = u
	}
	if ProbeShare(nil, 1) != 0.5 || ProbeShare(probes, math.NaN()) != 0.5 {
		t.Fatal("no probes or NaN: want 0.5")
	}
}

// TestCalibrated: the same logit means less in a catalog whose probes
// score high, and without probes the answerability is the model's own.
func TestCalibrated(t *testing.T) {
	m := testModel()
	if got := m.Calibrated(1, []float64{0, 1, 2}); got != Sigmoid(1) {
		t.Fatalf("no calibration: %v, want σ(1)", got)
	}
	m.Calib = &Calib{Probes: strings.Fields("a b c d e f g h i j"), A: 1, B: 0}
	if got := m.Calibrated(1, nil); got != Sigmoid(1) {
		t.Fatalf("no probe logits: %v, want σ(1)", got)
	}
	lenient := []float64{-3, -2.5, -2, -1.5, -1} // the catalog matches off-topic requests with little
	greedy := []float64{0, 1, 2, 3, 4}           // it matches them with a lot
	a, b := m.Calibrated(0.5, lenient), m.Calibrated(0.5, greedy)
	if !(a > 0.8 && b < 0.4) {
		t.Fatalf("logit 0.5: %v among low probes, %v among high ones", a, b)
	}
	// σ(A·logit(u) + B) with u = 3/6 (z = 2 in greedy): logit(u) = 0
	m.Calib.B = 0.7
	if got := m.Calibrated(2, greedy); math.Abs(got-Sigmoid(0.7)) > 1e-12 {
		t.Fatalf("calibrated %v, want σ(0.7)", got)
	}
}
