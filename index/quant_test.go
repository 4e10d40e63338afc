package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotsI8KernelMatchesGo checks the vectorised int8 kernel (where the
// machine has one) against the portable loop: integer arithmetic, so the
// results must be equal, including at the extremes of both ranges.
func TestDotsI8KernelMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{32, 64, 256, 288, 1024} {
		n := 37
		q := make([]int16, dim)
		m := make([]int8, n*dim)
		bound := min(32767, math.MaxInt32/(127*dim))
		for i := range q {
			q[i] = int16(r.IntN(2*bound+1) - bound)
		}
		for i := range m {
			m[i] = int8(r.IntN(255) - 127)
		}
		// one row at the extremes: every product at its largest magnitude
		for i := range dim {
			q[i] = int16(bound)
			m[i] = 127
		}
		got, want := make([]int32, n), make([]int32, n)
		dotsI8(q, m, got)
		dotsI8Go(q, m, want)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("dim %d row %d: kernel %d, portable %d", dim, i, got[i], want[i])
			}
		}
		if want[0] != int32(bound*127*dim) {
			t.Fatalf("dim %d: extreme row sums to %d, want %d (overflow?)", dim, want[0], bound*127*dim)
		}
	}
}

// TestQuantErrorBound checks that the bound errBound holds for the int8
// approximation of random (and adversarially spiky) unit vectors.
func TestQuantErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim = 256
	for trial := range 2000 {
		q, m := randUnit(r, dim), randUnit(r, dim)
		if trial%10 == 0 { // a spiky row: one large component
			m[r.IntN(dim)] += 3
			m = normalized(m)
		}
		qq := quantizeQuery(q)
		row := make([]int8, dim)
		rs := quantizeRow(row, m)
		out := make([]int32, 1)
		dotsI8Go(qq.q, row, out)
		approx := float64(out[0]) * qq.scale * float64(rs)
		exact := float64(dot(q, m))
		if e := qq.errBound(rs, dim); math.Abs(approx-exact) > e {
			t.Fatalf("trial %d: |%.6f − %.6f| = %.2g exceeds the bound %.2g", trial, approx, exact, math.Abs(approx-exact), e)
		}
	}
}

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return normalized(v)
}

// quantTestView is a view over a random catalog: n tools whose vectors are
// noisy copies of a few cluster centres (so many tools nearly tie near the
// top, as real catalogs have), with lexical fields drawn from a small
// vocabulary, then a share removed and re-added (to exercise the running
// column sums).
func quantTestView(t *testing.T, r *rand.Rand, n, dim int) *view {
	t.Helper()
	centres := make([][]float32, 40)
	for i := range centres {
		centres[i] = randUnit(r, dim)
	}
	words := []string{"file", "read", "write", "weather", "email", "send", "git", "status", "image", "resize", "stock", "price"}
	v := newView(newHashEmbedder(dim), nil)
	mk := func(i int) (*document, []float32) {
		c := centres[r.IntN(len(centres))]
		vec := make([]float32, dim)
		noise := 0.3 + r.Float64()
		for j := range vec {
			vec[j] = c[j] + float32(noise*r.NormFloat64()/math.Sqrt(float64(dim)))
		}
		d := &document{name: fmt.Sprintf("tool_%05d", i), hash: fmt.Sprintf("h%d-%d", i, r.Int()),
			fields: []field{{words[r.IntN(len(words))] + " " + words[r.IntN(len(words))], weightName},
				{words[r.IntN(len(words))], weightDescription}}}
		return d, normalized(vec)
	}
	for i := range n {
		d, vec := mk(i)
		v.upsert(d, vec, nil)
	}
	for i := 0; i < n; i += 7 {
		v.remove(fmt.Sprintf("tool_%05d", i))
	}
	for i := 0; i < n; i += 14 { // half of them come back with new vectors
		d, vec := mk(i)
		v.upsert(d, vec, nil)
	}
	for i := 1; i < n; i += 11 { // some change in place
		d, vec := mk(i)
		v.upsert(d, vec, nil)
	}
	return v
}

// TestQuantRankMatchesExact ranks a random catalog through the int8 scan and
// through the exact float32 scan and requires the same top-k: the same tools
// in the same order with the same scores. The stated tolerance is 1e-12 on
// every score (the re-scoring uses the exact path's arithmetic, so in
// practice they are bit-identical); the bound makes it so, whatever the
// quantisation error.
func TestQuantRankMatchesExact(t *testing.T) {
	if !haveInt8Kernel {
		t.Log("no int8 kernel on this machine: the quantised path runs with the portable loop")
	}
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 64
	v := quantTestView(t, r, 6000, dim)
	if !v.quantOK() && haveInt8Kernel {
		t.Fatal("the int8 scan should serve this view")
	}

	// The running column sums give the same background as a brute-force mean.
	q0 := randUnit(r, dim)
	bg, _ := v.background(q0)
	var sum float64
	cnt := 0
	for s, sl := range v.slots {
		if sl.live && sl.vec {
			sum += float64(dot(q0, v.rows[s]))
			cnt++
		}
	}
	if cnt != v.nvec || math.Abs(bg-sum/float64(cnt)) > 1e-9 {
		t.Fatalf("background %.12f over %d rows, brute force %.12f over %d", bg, v.nvec, sum/float64(cnt), cnt)
	}

	tests := []struct {
		name  string
		k     int
		mode  Mode
		text  string
		allow func(string) bool
	}{
		{"hybrid k10", 10, Hybrid, "read a file", nil},
		{"hybrid k1", 1, Hybrid, "weather", nil},
		{"hybrid k50", 50, Hybrid, "send email with image", nil},
		{"dense k10", 10, Dense, "git status", nil},
		{"no lexical match", 10, Hybrid, "zzz", nil},
		{"named tool", 5, Hybrid, "run tool_00003 please", nil},
		{"allow filter", 10, Hybrid, "stock price", func(n string) bool { return n[len(n)-1] == '3' }},
		{"allow fewer than k", 10, Hybrid, "stock", func(n string) bool { return n < "tool_00040" }},
	}
	totalCand := 0
	for _, tc := range tests {
		for trial := range 5 {
			qvec := randUnit(r, dim)
			if trial%2 == 1 { // a query near a cluster: many close scores
				base := v.rows[trial*97%len(v.slots)]
				for j := range qvec {
					qvec[j] = base[j] + 0.05*qvec[j]
				}
				qvec = normalized(qvec)
			}
			q := Query{Text: tc.text, K: tc.k, Mode: tc.mode, Allow: tc.allow}
			lex, norm := v.lexScores(map[string]float64{}, nil)
			if ts := terms(tc.text); len(ts) > 0 {
				lq := map[string]float64{}
				for _, w := range ts {
					lq[w] = 1
				}
				lex, norm = v.lexScores(lq, nil)
			}
			named := namedTools(q.Text, v.byName)
			got, cand := v.rankQuant(q, lex, norm, qvec, 0.5, named, nil)
			totalCand += cand
			v.exactOnly = true
			want := v.rank(q, lex, norm, qvec, 0.5, nil)
			v.exactOnly = false
			if len(got.Hits) != len(want.Hits) {
				t.Fatalf("%s/%d: %d hits, exact path %d", tc.name, trial, len(got.Hits), len(want.Hits))
			}
			for i := range want.Hits {
				g, w := got.Hits[i], want.Hits[i]
				if g.Name != w.Name || g.Named != w.Named || math.Abs(g.Score-w.Score) > 1e-12 ||
					math.Abs(g.Dense-w.Dense) > 1e-12 || math.Abs(g.Lexical-w.Lexical) > 1e-12 {
					t.Fatalf("%s/%d: hit %d is %+v, exact path %+v", tc.name, trial, i, g, w)
				}
			}
			if tc.name == "named tool" && (len(got.Hits) == 0 || got.Hits[0].Name != "tool_00003") {
				t.Fatalf("named tool not first: %+v", got.Hits)
			}
		}
	}
	t.Logf("re-scored exactly: %.0f tools per query on average, of %d", float64(totalCand)/float64(5*len(tests)), len(v.byName))
}
