package embedding

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
)

// toyPairs: each of n topics has its own words; a pair links two different
// words of the same topic, so only training can make them similar.
func toyPairs(n, per int) ([]encoded, int) {
	var out []encoded
	for t := 0; t < n; t++ {
		for k := 0; k < per; k++ {
			a := int32(t*4 + k%4)
			b := int32(t*4 + (k+1)%4)
			out = append(out, encoded{q: []entry{{a, 1}}, d: []entry{{b, 1}, {int32(n * 4), 0.5}}}) // shared noise row
		}
	}
	return out, n*4 + 1
}

func meanTopicCos(E []float32, d, n int) (same, diff float64) {
	row := func(i int) []float32 { return E[i*d : i*d+d] }
	cos := func(a, b []float32) float64 {
		return float64(dot(a, b)) / math.Sqrt(float64(dot(a, a))*float64(dot(b, b)))
	}
	var ns, nd int
	for i := 0; i < n*4; i++ {
		for j := i + 1; j < n*4; j++ {
			if i/4 == j/4 {
				same += cos(row(i), row(j))
				ns++
			} else {
				diff += cos(row(i), row(j))
				nd++
			}
		}
	}
	return same / float64(ns), diff / float64(nd)
}

func TestTrainLearnsAndIsDeterministic(t *testing.T) {
	pairs, rows := toyPairs(16, 32)
	groups := make([]int, len(pairs))
	cfg := Config{Dim: 16, Batch: 32, Epochs: 6, LR: 0.02, Tau: 0.1, Seed: 7, Workers: 1}
	var losses []float64
	cfg.Progress = func(b, total int, loss float64) {
		if b == 1 || b == total {
			losses = append(losses, loss)
		}
	}
	E1, _, err := Train(context.Background(), rows, pairs, groups, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(losses) != 2 || !(losses[1] < losses[0]*0.7) {
		t.Errorf("loss did not fall: first and last %v", losses)
	}
	same, diff := meanTopicCos(E1, cfg.Dim, 16)
	if !(same > diff+0.3) {
		t.Errorf("same-topic cosine %.3f not clearly above other-topic %.3f", same, diff)
	}
	cfg.Progress = nil
	cfg.Workers = 3
	E2, _, _ := Train(context.Background(), rows, pairs, groups, cfg)
	if !slices.Equal(E1, E2) {
		t.Error("training with 3 workers differs from 1 worker")
	}
	cfg.Homogeneous = true
	if _, _, err := Train(context.Background(), rows, pairs, groups, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Train(ctx, rows, pairs, groups, cfg); err == nil {
		t.Error("Train ignored a cancelled context")
	}
}

// TestStepGradient checks the hand-written backward pass against a
// finite difference of the loss.
func TestStepGradient(t *testing.T) {
	pairs, rows := toyPairs(3, 2)
	batch := make([]*encoded, len(pairs))
	for i := range pairs {
		batch[i] = &pairs[i]
	}
	d := 5
	mk := func() *trainer {
		E := make([]float32, rows*d)
		for i := range E {
			E[i] = float32(math.Sin(float64(i)*1.7)) * 0.5
		}
		return &trainer{cfg: Config{Dim: d, Tau: 0.5, LR: 0, Workers: 1}, d: d, E: E,
			m: make([]float32, len(E)), v: make([]float32, len(E)), grad: make([]float32, len(E)), stamp: make([]int32, rows)}
	}
	// With LR 0 a step leaves E unchanged; capture the gradient before Adam clears it.
	tr := mk()
	loss0, g := tr.lossAndGrad(batch)
	for _, idx := range []int{0, 3, 7, d*4 + 2, (rows-1)*d + 1} {
		const h = 1e-3
		tp := mk()
		tp.E[idx] += h
		lp, _ := tp.lossAndGrad(batch)
		tm := mk()
		tm.E[idx] -= h
		lm, _ := tm.lossAndGrad(batch)
		num := (lp - lm) / (2 * h)
		if math.Abs(num-float64(g[idx])) > 2e-3+0.02*math.Abs(num) {
			t.Errorf("d loss/d E[%d]: backward %.5f, finite difference %.5f", idx, g[idx], num)
		}
	}
	if math.IsNaN(loss0) {
		t.Fatal("NaN loss")
	}
	_ = fmt.Sprint()
}

func TestHardBatchesGroupByRareDocumentTerm(t *testing.T) {
	// 64 pairs; pair i's document has the common row 0 and the rarer row
	// 1+i%8 (shared by 8 documents each).
	var pairs []encoded
	for i := 0; i < 64; i++ {
		pairs = append(pairs, encoded{q: []entry{{int32(20 + i%5), 1}}, d: []entry{{0, 1}, {int32(1 + i%8), 1}}})
	}
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = (i * 37) % 64 // a fixed shuffle
	}
	bs := hardBatches(order, pairs, 100, 16, 0.5)
	if len(bs) != 4 {
		t.Fatalf("%d batches, want 4", len(bs))
	}
	seen := map[int]bool{}
	for _, b := range bs {
		if len(b) != 16 {
			t.Fatalf("batch of %d, want 16", len(b))
		}
		for _, i := range b {
			if seen[i] {
				t.Fatalf("pair %d in two batches", i)
			}
			seen[i] = true
		}
		// The hard half: 8 pairs whose rare rows come in runs (at most 2
		// distinct rare rows in 8 sorted pairs of groups of 4 per half).
		rare := map[int32]bool{}
		for _, i := range b[:8] {
			rare[pairs[i].d[1].row] = true
		}
		if len(rare) > 2 {
			t.Errorf("hard half has %d distinct rare terms, want ≤ 2: %v", len(rare), b[:8])
		}
	}
}
