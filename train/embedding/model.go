package embedding

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Config are the training settings.
type Config struct {
	Dim     int
	Batch   int
	Epochs  int
	LR      float64
	Tau     float64 // softmax temperature
	Seed    uint64
	Workers int
	// Homogeneous, when set, draws every batch from one source, so the
	// in-batch negatives are of the same kind as the positive (harder).
	Homogeneous bool
	// Progress, if set, is called after every batch.
	Progress func(batch, batches int, loss float64)
	// HardShare is the share of each batch drawn from pairs grouped by
	// their document's rarest shared term, so those in-batch negatives are
	// topically close (hard); the rest is drawn at random. 0: all random.
	// Ignored when Homogeneous is set.
	HardShare float64
	// Init, if set, may overwrite rows of the random initial table (rows ×
	// Dim values) before training, e.g. with pretrained word vectors.
	Init func(E []float32)
	// Trainable, if set, says which rows training updates; the others
	// keep their initial values (Extend: only the class rows learn).
	Trainable func(row int32) bool
}

// Train learns the table rows with a symmetric InfoNCE loss over in-batch
// negatives (each query must pick its own document among the batch's, and
// each document its own query), optimised with lazy sparse Adam. It is
// deterministic for a given seed and input, whatever the worker count.
func Train(ctx context.Context, rows int, pairs []encoded, groups []int, cfg Config) ([]float32, float64, error) {
	d := cfg.Dim
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	E := make([]float32, rows*d)
	sd := 1 / math.Sqrt(float64(d))
	for i := range E {
		E[i] = float32(rng.NormFloat64() * sd)
	}
	if cfg.Init != nil {
		cfg.Init(E)
	}
	t := &trainer{cfg: cfg, d: d, E: E, m: make([]float32, len(E)), v: make([]float32, len(E)),
		grad: make([]float32, len(E)), stamp: make([]int32, rows)}
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	batches := cfg.Epochs * (len(pairs) / cfg.Batch)
	done := 0
	var lastLoss float64
	for ep := 0; ep < cfg.Epochs; ep++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var starts [][]int // each batch's pair indices
		if cfg.Homogeneous {
			byGroup := map[int][]int{}
			var keys []int
			for _, i := range order {
				if _, ok := byGroup[groups[i]]; !ok {
					keys = append(keys, groups[i])
				}
				byGroup[groups[i]] = append(byGroup[groups[i]], i)
			}
			var rest []int
			for _, k := range keys {
				g := byGroup[k]
				for s := 0; s+cfg.Batch <= len(g); s += cfg.Batch {
					starts = append(starts, g[s:s+cfg.Batch])
				}
				rest = append(rest, g[len(g)-len(g)%cfg.Batch:]...)
			}
			for s := 0; s+cfg.Batch <= len(rest); s += cfg.Batch {
				starts = append(starts, rest[s:s+cfg.Batch])
			}
			rng.Shuffle(len(starts), func(i, j int) { starts[i], starts[j] = starts[j], starts[i] })
		} else if cfg.HardShare > 0 {
			starts = hardBatches(order, pairs, rows, cfg.Batch, cfg.HardShare)
		} else {
			for s := 0; s+cfg.Batch <= len(order); s += cfg.Batch {
				starts = append(starts, order[s:s+cfg.Batch])
			}
		}
		for _, idx := range starts {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			batch := make([]*encoded, len(idx))
			for i, k := range idx {
				batch[i] = &pairs[k]
			}
			loss := t.step(batch)
			lastLoss = 0.98*lastLoss + 0.02*loss
			if done == 0 {
				lastLoss = loss
			}
			done++
			if cfg.Progress != nil {
				cfg.Progress(done, batches, lastLoss)
			}
		}
	}
	return E, lastLoss, nil
}

type trainer struct {
	cfg     Config
	d       int
	E, m, v []float32
	grad    []float32
	stamp   []int32 // step at which a row's gradient was last touched
	step_   int32
	touched []int32
}

// parallel runs f over [0,n) split into contiguous chunks, one per worker.
func (t *trainer) parallel(n int, f func(lo, hi int)) {
	w := max(1, t.cfg.Workers)
	if w == 1 || n < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		lo, hi := k*n/w, (k+1)*n/w
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); f(lo, hi) }()
	}
	wg.Wait()
}

func (t *trainer) pool(es []entry, out []float32) float32 {
	clear(out)
	d := t.d
	for _, e := range es {
		row := t.E[int(e.row)*d : int(e.row)*d+d]
		for k, x := range row {
			out[k] += e.w * x
		}
	}
	var n float64
	for _, x := range out {
		n += float64(x) * float64(x)
	}
	norm := float32(math.Sqrt(n))
	if norm < 1e-12 {
		return 0
	}
	inv := 1 / norm
	for k := range out {
		out[k] *= inv
	}
	return norm
}

func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func axpy(a float32, x, y []float32) {
	for i, v := range x {
		y[i] += a * v
	}
}

// step does one batch: forward, loss, backward, Adam update. It returns the loss.
func (t *trainer) step(batch []*encoded) float64 {
	loss := t.backward(batch)
	t.update()
	return loss
}

// lossAndGrad returns the loss and a copy of the table gradient (for tests).
func (t *trainer) lossAndGrad(batch []*encoded) (float64, []float32) {
	loss := t.backward(batch)
	g := make([]float32, len(t.grad))
	copy(g, t.grad)
	t.update()
	return loss, g
}

// backward computes the batch loss and accumulates the row gradients in
// t.grad, listing the rows touched in t.touched.
func (t *trainer) backward(batch []*encoded) float64 {
	B, d := len(batch), t.d
	inv := float32(1 / t.cfg.Tau)
	Q, D := make([]float32, B*d), make([]float32, B*d)
	qn, dn := make([]float32, B), make([]float32, B)
	t.parallel(B, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			qn[i] = t.pool(batch[i].q, Q[i*d:i*d+d])
			dn[i] = t.pool(batch[i].d, D[i*d:i*d+d])
		}
	})
	S := make([]float32, B*B)
	t.parallel(B, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			qi := Q[i*d : i*d+d]
			for j := 0; j < B; j++ {
				S[i*B+j] = inv * dot(qi, D[j*d:j*d+d])
			}
		}
	})
	// G = dLoss/dS for loss = (rowCE + colCE)/2, each a mean over B.
	G := make([]float32, B*B)
	rowLoss, colLoss := make([]float64, B), make([]float64, B)
	scale := 1 / float32(2*B)
	t.parallel(B, func(lo, hi int) {
		for i := lo; i < hi; i++ { // row i: query i against every document
			rowLoss[i] = softmaxCE(S, G, i*B, 1, B, i, scale)
		}
	})
	// Column softmax, added column by column (disjoint columns per worker).
	t.parallel(B, func(lo, hi int) {
		for j := lo; j < hi; j++ { // column j: document j against every query
			colLoss[j] = softmaxCE(S, G, j, B, B, j, scale)
		}
	})
	var loss float64
	for i := 0; i < B; i++ {
		loss += (rowLoss[i] + colLoss[i]) / float64(2*B)
	}
	// Gradients w.r.t. the normalised vectors, then through the normalisation.
	dQ, dD := make([]float32, B*d), make([]float32, B*d)
	t.parallel(B, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gq := dQ[i*d : i*d+d]
			for j := 0; j < B; j++ {
				axpy(inv*G[i*B+j], D[j*d:j*d+d], gq)
			}
			gd := dD[i*d : i*d+d]
			for j := 0; j < B; j++ {
				axpy(inv*G[j*B+i], Q[j*d:j*d+d], gd)
			}
			for _, p := range [2]struct {
				g, x []float32
				n    float32
			}{{gq, Q[i*d : i*d+d], qn[i]}, {gd, D[i*d : i*d+d], dn[i]}} {
				if p.n == 0 {
					clear(p.g)
					continue
				}
				c := dot(p.g, p.x)
				for k := range p.g {
					p.g[k] = (p.g[k] - c*p.x[k]) / p.n
				}
			}
		}
	})
	// Scatter into row gradients; workers own disjoint dimension ranges.
	t.step_++
	st := t.step_
	t.touched = t.touched[:0]
	for i := 0; i < B; i++ {
		for _, es := range [2][]entry{batch[i].q, batch[i].d} {
			for _, e := range es {
				if t.stamp[e.row] != st {
					t.stamp[e.row] = st
					t.touched = append(t.touched, e.row)
				}
			}
		}
	}
	t.parallel(d, func(lo, hi int) {
		for i := 0; i < B; i++ {
			gq, gd := dQ[i*d:i*d+d], dD[i*d:i*d+d]
			for _, e := range batch[i].q {
				g := t.grad[int(e.row)*d : int(e.row)*d+d]
				for k := lo; k < hi; k++ {
					g[k] += e.w * gq[k]
				}
			}
			for _, e := range batch[i].d {
				g := t.grad[int(e.row)*d : int(e.row)*d+d]
				for k := lo; k < hi; k++ {
					g[k] += e.w * gd[k]
				}
			}
		}
	})
	return loss
}

// update applies lazy Adam to the touched rows and clears their gradient.
func (t *trainer) update() {
	d, st := t.d, t.step_
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1 := 1 - math.Pow(b1, float64(st))
	c2 := 1 - math.Pow(b2, float64(st))
	lr := float32(t.cfg.LR * math.Sqrt(c2) / c1)
	t.parallel(len(t.touched), func(lo, hi int) {
		for _, r := range t.touched[lo:hi] {
			off := int(r) * d
			g, m, v, e := t.grad[off:off+d], t.m[off:off+d], t.v[off:off+d], t.E[off:off+d]
			if t.cfg.Trainable != nil && !t.cfg.Trainable(r) {
				clear(g)
				continue
			}
			for k := range g {
				m[k] = b1*m[k] + (1-b1)*g[k]
				v[k] = b2*v[k] + (1-b2)*g[k]*g[k]
				e[k] -= lr * m[k] / (float32(math.Sqrt(float64(v[k]))) + eps)
				g[k] = 0
			}
		}
	})
}

// hardBatches splits order (already shuffled) into batches of which a share
// comes from a stream of pairs sorted by their document's rarest term found
// in at least two documents, so that consecutive pairs share a rare term.
func hardBatches(order []int, pairs []encoded, rows, batch int, share float64) [][]int {
	df := make([]int32, rows)
	for _, p := range pairs {
		for _, e := range p.d {
			df[e.row]++
		}
	}
	key := func(i int) int32 {
		best, bdf := int32(-1), int32(math.MaxInt32)
		for _, e := range pairs[i].d {
			if f := df[e.row]; f >= 2 && f < bdf {
				best, bdf = e.row, f
			}
		}
		return best
	}
	nh := int(float64(len(order)) * share)
	hard := slices.Clone(order[:nh])
	keys := make([]int32, len(pairs))
	for _, i := range hard {
		keys[i] = key(i)
	}
	slices.SortStableFunc(hard, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	easy := order[nh:]
	hb := int(float64(batch) * share)
	var out [][]int
	for h, e := 0, 0; h+hb <= len(hard) && e+batch-hb <= len(easy); h, e = h+hb, e+batch-hb {
		b := make([]int, 0, batch)
		b = append(b, hard[h:h+hb]...)
		b = append(b, easy[e:e+batch-hb]...)
		out = append(out, b)
	}
	return out
}

// softmaxCE is the cross-entropy of a softmax over the n scores
// S[base+k·step] (k = 0…n−1) whose right answer is k = target. It adds
// scale × its gradient to the matching entries of G and returns the loss.
func softmaxCE(S, G []float32, base, step, n, target int, scale float32) float64 {
	mx := float32(math.Inf(-1))
	for k := 0; k < n; k++ {
		mx = max(mx, S[base+k*step])
	}
	var sum float64
	for k := 0; k < n; k++ {
		sum += math.Exp(float64(S[base+k*step] - mx))
	}
	for k := 0; k < n; k++ {
		p := math.Exp(float64(S[base+k*step]-mx)) / sum
		G[base+k*step] += float32(p) * scale
	}
	G[base+target*step] -= scale
	return math.Log(sum) + float64(mx) - float64(S[base+target*step])
}
