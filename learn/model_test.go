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
	if !strings.HasPrefix(m.ID, "learn/v1-") || m.Pool < 2 {
		t.Fatalf("shipped model %q, pool %d", m.ID, m.Pool)
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

func TestFamily(t *testing.T) {
	for in, want := range map[string]string{
		"builtin/v1-abbe22c2":               "builtin/v1",
		"builtin/v1-abbe22c2+fit-deadbeef0": "builtin/v1",
		"builtin/v1":                        "builtin/v1",
		"ollama/nomic-embed-text":           "ollama/nomic-embed-text",
		"x/model-abc":                       "x/model-abc", // too short for a digest
		"x/model-abcdefg":                   "x/model-abcdefg",
	} {
		if got := Family(in); got != want {
			t.Errorf("Family(%q) = %q, want %q", in, got, want)
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
