package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// kernels are the 4-bit kernels this machine can run.
func kernels() []kernel {
	ks := []kernel{kernelGo}
	if haveAVX2 {
		ks = append(ks, kernelAVX2)
	}
	if haveVNNI {
		ks = append(ks, kernelVNNI)
	}
	return ks
}

// TestRowsKernelsAgree: every kernel gives the portable loop's integers,
// for dimensions that need padding, row counts that are not a multiple of
// the kernels' four, and codes and query values at their extremes.
func TestRowsKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 63, 64, 128, 200, 256, 300, 768, 1024} {
		for _, n := range []int{1, 3, 4, 5, 8, 37} {
			vecs := make([][]float32, n)
			for i := range vecs {
				vecs[i] = randUnit(r, dim)
			}
			// extremes: a row of equal values (every code at 15 or 1) and
			// a query of equal values (every q̂ at ±127)
			for i := range vecs[0] {
				vecs[0][i] = 1
			}
			vecs[0] = unit(vecs[0])
			q := randUnit(r, dim)
			if n%2 == 1 {
				for i := range q {
					q[i] = -1
				}
				q = unit(q)
			}
			var want []int32
			for _, k := range kernels() {
				m := NewRows(dim)
				m.kernel = k
				m.Resize(n)
				for i, v := range vecs {
					if i%2 == 0 {
						m.Set(i, v)
						continue
					}
					var row Row4
					Encode4(&row, v)
					if !m.Put(i, &row) {
						t.Fatalf("dim %d: Put refuses a row Encode4 made", dim)
					}
				}
				qq := m.Query(q)
				got := make([]int32, n)
				m.Dots(&qq, 0, n, got)
				if k == kernelGo {
					want = got
					continue
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("dim %d, %d rows, kernel %d: row %d is %d, the portable loop's %d", dim, n, k, i, got[i], want[i])
					}
				}
				// a range that starts inside the matrix
				if n > 2 {
					part := make([]int32, n-2)
					m.Dots(&qq, 1, n-1, part)
					for i := range part {
						if part[i] != want[i+1] {
							t.Fatalf("dim %d, kernel %d: rows 1…%d: row %d is %d, want %d", dim, k, n-2, i+1, part[i], want[i+1])
						}
					}
				}
			}
		}
	}
}

// TestRowsBound: the bound holds for every row and query, however they
// are made: random unit vectors, spiky ones (one large component, the
// worst case of a scale taken from the largest value), vectors whose
// values are all equal, and rows whose norm is a little off 1; and the
// exact score the index computes (Dot, in float32) is within the bound
// plus DotErr.
func TestRowsBound(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, dim := range []int{64, 256, 300, 768} {
		for _, k := range kernels() {
			m := NewRows(dim)
			m.kernel = k
			const n = 400
			m.Resize(n)
			rows := make([][]float32, n)
			for i := range rows {
				v := randUnit(r, dim)
				switch i % 5 {
				case 1:
					v = spiky(r, v)
				case 2:
					for j := range v {
						v[j] = float32(1 - 2*(j%2))
					}
					v = unit(v)
				case 3:
					for j := range v {
						v[j] *= 1.00001 // a norm a little over 1
					}
				}
				rows[i] = v
				m.Set(i, v)
			}
			var sum float64
			var count int
			for trial := range 30 {
				q := randUnit(r, dim)
				if trial%3 == 0 {
					q = spiky(r, q)
				}
				if trial%7 == 0 {
					q = rows[trial] // a query equal to a row: the largest product
				}
				qq := m.Query(q)
				dots := make([]int32, n)
				m.Dots(&qq, 0, n, dots)
				up := make([]float64, n-5)
				m.Upper(&qq, 5, dots[5:], up)
				for i, v := range rows {
					c, slack := m.Bound(&qq, i, dots[i])
					if i >= 5 && math.Abs(up[i-5]-(c+slack)) > 1e-12 {
						t.Fatalf("row %d: Upper %.15f, Bound's c + slack %.15f", i, up[i-5], c+slack)
					}
					var exact float64
					for j := range v {
						exact += float64(q[j]) * float64(v[j])
					}
					if math.Abs(exact-c) > slack {
						t.Fatalf("dim %d kernel %d row %d: |%.6f − %.6f| exceeds the bound %.4f", dim, k, i, exact, c, slack)
					}
					if d := math.Abs(float64(Dot(q, v)) - c); d > slack+DotErr(dim) {
						t.Fatalf("dim %d row %d: Dot is %.3g from the approximation, over the bound", dim, i, d)
					}
					if i%5 == 0 || i%5 == 4 { // random unit vectors
						sum += slack
						count++
					}
				}
			}
			// How tight it is, for random unit vectors: the error of four
			// bits is about 0.12 of the norm, and the query's own, at 8 bits,
			// a few thousandths.
			if mean := sum / float64(count); k == kernelGo && dim == 256 && (mean > 0.16 || mean < 0.08) {
				t.Errorf("dim 256: the bound is %.3f on average; 4 bits of a random unit vector give about 0.13", mean)
			}
		}
	}
}

// TestRowsWithoutVectors: rows set to nil or a zero vector, and new rows,
// hold no vector, and their codes stand for zeros.
func TestRowsWithoutVectors(t *testing.T) {
	m := NewRows(64)
	m.Resize(3)
	m.Set(0, randUnit(rand.New(rand.NewPCG(1, 1)), 64))
	m.Set(1, make([]float32, 64))
	x := randUnit(rand.New(rand.NewPCG(1, 1)), 64)
	back := make([]float32, 64)
	m.Decode(0, back)
	var e2 float64
	for j := range x {
		d := float64(x[j] - back[j])
		e2 += d * d
	}
	if e := math.Sqrt(e2); e > float64(m.err[0]) || e < float64(m.err[0])/2 {
		t.Fatalf("the decoded row is %.4f from the vector; its bound says %.4f", e, m.err[0])
	}
	if !m.Has(0) || m.Has(1) || m.Has(2) {
		t.Fatalf("Has: %v %v %v, want true false false", m.Has(0), m.Has(1), m.Has(2))
	}
	m.Set(0, nil)
	q := m.Query(randUnit(rand.New(rand.NewPCG(2, 2)), 64))
	out := make([]int32, 3)
	m.Dots(&q, 0, 3, out)
	for i, d := range out {
		if d != 0 || m.Has(i) {
			t.Fatalf("row %d without a vector: dot %d, Has %v", i, d, m.Has(i))
		}
	}
	var wrong Row4
	Encode4(&wrong, make([]float32, 200))
	if m.Put(0, &wrong) {
		t.Fatal("Put stores a row of 200 values in a matrix of 64")
	}
	m.Resize(1)
	m.Resize(2)
	if m.Has(1) || m.Len() != 2 {
		t.Fatal("a row regrown after a shrink holds a vector")
	}
}

// BenchmarkRowsDots is the 4-bit scan of 100,000 rows of 256 values (each
// kernel this machine has), beside the 8-bit one it replaces in the index.
//
//	go test -run '^$' -bench RowsDots -benchtime 200x ./internal/vec/
func BenchmarkRowsDots(b *testing.B) {
	const n, dim = 100000, 256
	r := rand.New(rand.NewPCG(1, 1))
	vecs := make([][]float32, 64)
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
	}
	q := randUnit(r, dim)
	out := make([]int32, n)
	for _, k := range kernels() {
		m := NewRows(dim)
		m.kernel = k
		m.Resize(n)
		for i := range n {
			m.Set(i, vecs[i%len(vecs)])
		}
		qq := m.Query(q)
		b.Run([]string{"go", "avx2", "vnni"}[k], func(b *testing.B) {
			b.SetBytes(int64(n * dim / 2))
			for b.Loop() {
				m.Dots(&qq, 0, n, out)
			}
		})
	}
	m8 := make([]int8, n*dim)
	for i := range n {
		QuantizeInt8(m8[i*dim:(i+1)*dim], vecs[i%len(vecs)])
	}
	q8 := QuantizeQuery8(q)
	b.Run("int8", func(b *testing.B) {
		b.SetBytes(int64(n * dim))
		for b.Loop() {
			DotsInt8(q8.Q, m8, out)
		}
	})
}
