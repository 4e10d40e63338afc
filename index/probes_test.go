package index

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/toolsrv/toolsrv/learn"
)

var testProbes = []string{"tell me a joke", "what is the meaning of life", "weather in paris tomorrow",
	"book a table for two", "how old are you", "play some jazz", "who won the game last night",
	"translate hello into french", "set an alarm for seven", "what is your favourite colour", "order a pizza"}

func probeModel() *learn.Model {
	m := stepModel(map[string]float64{"score": 10})
	m.Calib = &learn.Calib{Probes: testProbes, A: 1, B: 0}
	return m
}

// trainingLogit is the answerability logit of text computed the way
// train/laststep computes it (Candidates, then the model): the index's probes
// must agree with it, or the calibration is fitted on other numbers than
// the index serves.
func trainingLogit(t *testing.T, ix *Index, m *learn.Model, text string) float64 {
	t.Helper()
	cs, _, err := ix.Candidates(context.Background(), Query{Text: text}, m.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Named) > 0 {
		return namedLogit
	}
	if len(cs.Hits) == 0 {
		return -namedLogit
	}
	logits, shares := make([]float64, len(cs.Hits)), make([]float64, len(cs.Hits))
	qf := cs.Query
	m.Scores(cs.Cand, logits, shares, &qf)
	return m.Logit(&qf)
}

func TestProbesCalibrateAnswerability(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeMeta(t, dir, "forecast", `{"description":"weather forecast for a city: rain, wind, temperature","cmd":"cat"}`)
	writeMeta(t, dir, "calendar", `{"description":"calendar events and meetings","cmd":"cat"}`)
	writeMeta(t, dir, "git_status", `{"description":"show the git working tree status","cmd":"cat"}`)
	reg := loadReg(t, dir)
	m := probeModel()
	ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet(), LastStep: m})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	id, probes := ix.ProbeLogits()
	if id != m.ID || len(probes) != len(testProbes) || !sort.Float64sAreSorted(probes) {
		t.Fatalf("probe logits %v of %q", probes, id)
	}
	// the same numbers as the training side computes
	var want []float64
	for _, p := range testProbes {
		want = append(want, trainingLogit(t, ix, m, p))
	}
	sort.Float64s(want)
	for i := range want {
		if math.Abs(want[i]-probes[i]) > 1e-9 {
			t.Fatalf("probe logits %v, training computes %v", probes, want)
		}
	}
	// a message's answerability is calibrated with them
	for _, q := range []string{"will it rain in oslo", "tell me about the stock market"} {
		r, err := ix.Rank(ctx, Query{Text: q, K: 3})
		if err != nil {
			t.Fatal(err)
		}
		z := trainingLogit(t, ix, m, q)
		if r.Answerable == nil || math.Abs(*r.Answerable-m.Calibrated(z, probes)) > 1e-12 {
			t.Fatalf("%q: answerable %v, want %v (logit %v)", q, r.Answerable, m.Calibrated(z, probes), z)
		}
		if *r.Answerable == learn.Sigmoid(z) {
			t.Fatalf("%q: answerability not calibrated", q)
		}
	}
	// without the last step no probe is ranked
	ix2 := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet(), LastStep: m, NoLastStep: true})
	if err := ix2.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if _, p := ix2.ProbeLogits(); p != nil {
		t.Fatalf("probes ranked without the last step: %v", p)
	}
}

// TestProbesFollowTheCatalog: a change of the catalog ranks the probes
// again (a small catalog: any change), and a restart with the same catalog
// reuses the cached logits without ranking anything.
func TestProbesFollowTheCatalog(t *testing.T) {
	ctx := context.Background()
	dir, cache := t.TempDir(), t.TempDir()
	writeMeta(t, dir, "calendar", `{"description":"calendar events and meetings","cmd":"cat"}`)
	writeMeta(t, dir, "git_status", `{"description":"show the git working tree status","cmd":"cat"}`)
	reg := loadReg(t, dir)
	m := probeModel()
	emb := newHashEmbedder(64)
	ix := New(emb, Options{CacheDir: cache, Logger: quiet(), LastStep: m})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	_, before := ix.ProbeLogits()
	// a joke tool makes the joke probe answerable
	writeMeta(t, dir, "jokes", `{"description":"tell a joke","cmd":"cat"}`)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	_, after := ix.ProbeLogits()
	if after[len(after)-1] <= before[len(before)-1] {
		t.Fatalf("best probe logit %v before the joke tool, %v after", before[len(before)-1], after[len(after)-1])
	}
	// restart: same catalog, same cache directory
	emb2 := newHashEmbedder(64)
	ix2 := New(emb2, Options{CacheDir: cache, Logger: quiet(), LastStep: m})
	if err := ix2.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if n := emb2.st.queryCalls.Load(); n != 0 {
		t.Fatalf("restart ranked %d queries; the cached probe logits should do", n)
	}
	_, again := ix2.ProbeLogits()
	if len(again) != len(after) {
		t.Fatalf("restart: %v, before %v", again, after)
	}
	for i := range after {
		if again[i] != after[i] {
			t.Fatalf("restart: %v, before %v", again, after)
		}
	}
	// another model ranks them again
	m2 := probeModel()
	m2.ID = "learn/test2"
	ix3 := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet(), LastStep: m2})
	if err := ix3.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if id, p := ix3.ProbeLogits(); id != m2.ID || len(p) != len(testProbes) {
		t.Fatalf("another model: %q %v", id, p)
	}
}
