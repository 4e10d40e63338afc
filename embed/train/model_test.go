package train

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
