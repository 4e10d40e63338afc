package index

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/registry"
)

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return normalized(v)
}

// pruneWords is the vocabulary of randomView: a few words most documents
// have (long posting lists, the terms a pruned ranking leaves unread),
// and many rare ones.
var pruneWords = func() []string {
	w := strings.Fields("file read write weather email send git status image resize stock price")
	for i := range 300 {
		w = append(w, fmt.Sprintf("w%03d", i))
	}
	return w
}()

// randomView is a view over a random catalog of n tools: vectors that are
// noisy copies of a few cluster centres (many tools nearly tie near the
// top, as real catalogs have), fields of Zipf-distributed words over
// several fields, some tools without a vector, then a share removed and
// re-added and some changed in place (the running sums, free slots).
func randomView(r *rand.Rand, n, dim int) *view {
	centres := make([][]float32, 40)
	for i := range centres {
		centres[i] = randUnit(r, dim)
	}
	z := rand.NewZipf(r, 1.2, 3, uint64(len(pruneWords)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = pruneWords[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
	v := newView(newHashEmbedder(dim), nil)
	mk := func(i int) (*document, []float32) {
		c := centres[r.IntN(len(centres))]
		vec := make([]float32, dim)
		noise := 0.3 + r.Float64()
		for j := range vec {
			vec[j] = c[j] + float32(noise*r.NormFloat64()/math.Sqrt(float64(dim)))
		}
		d := &document{name: fmt.Sprintf("tool_%05d", i), hash: fmt.Sprintf("h%d-%d", i, r.Int()),
			fields: []field{{words(2), weightName}, {words(3 + r.IntN(6)), weightDescription},
				{words(2), weightKeywords}, {"", weightArgs}, {words(5 + r.IntN(30)), weightPrompt}}}
		if i%97 == 5 {
			return d, nil // no vector (yet)
		}
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

// rankBoth ranks q with qvec in v pruned and by scoring every tool, and
// says how many tools the pruned ranking scored exactly (-1: it let the
// full ranking answer).
func rankBoth(v *view, q Query, qvec []float32, alpha float64) (pruned, all Ranking, rescored int) {
	lq := map[string]float64{}
	for _, w := range terms(q.Text) {
		lq[w] = 1
	}
	sc := new(rankScratch)
	lx := v.lexicalFor(q, lq, alpha, sc)
	sc.rescored = -1
	pruned = v.rank(q, lx, qvec, alpha)
	lx.release()
	rescored = sc.rescored
	qa := q
	qa.Exhaustive = true
	lxa := v.lexicalFor(qa, lq, alpha, new(rankScratch))
	all = v.rank(qa, lxa, qvec, alpha)
	return pruned, all, rescored
}

// sameHits says where two rankings' hits differ ("": nowhere), to the
// bit.
func sameHits(got, want []Hit) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("hit %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	return ""
}

// TestSpreadChunk: the scan's order of chunks takes each chunk once.
func TestSpreadChunk(t *testing.T) {
	for n := 1; n < 200; n++ {
		seen := make([]bool, n)
		for i := range n {
			c := spreadChunk(i, n)
			if c < 0 || c >= n || seen[c] {
				t.Fatalf("%d chunks: the %d-th is %d (taken before, or out of range)", n, i, c)
			}
			seen[c] = true
		}
	}
}

// TestPrunedMatchesAll ranks random catalogs pruned and by scoring every
// tool and requires the same hits to the bit: the same tools in the same
// order with the same scores and parts, for every mode, k, filter, named
// tools, messages without a lexical match, without a query vector, and
// tools without vectors. It also requires the pruning to prune.
func TestPrunedMatchesAll(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim = 64
	n := 6000
	if testing.Short() {
		n = 2500
	}
	v := randomView(r, n, dim)
	if v.missing == 0 {
		t.Fatal("the random catalog should have tools without a vector")
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
		noVec bool
	}{
		{"hybrid k10", 10, Hybrid, "read a file", nil, false},
		{"hybrid k1", 1, Hybrid, "weather w007", nil, false},
		{"hybrid k30 common words", 30, Hybrid, "file read write image", nil, false},
		{"hybrid k50 rare words", 50, Hybrid, "send w201 w150 w299 email", nil, false},
		{"dense k10", 10, Dense, "git status", nil, false},
		{"lexical k10", 10, Lexical, "stock price w010", nil, false},
		{"lexical k30, no vector", 30, Hybrid, "file w003 w004", nil, true},
		{"no lexical match", 10, Hybrid, "zzz", nil, false},
		{"no lexical match, lexical", 10, Lexical, "zzz", nil, false},
		{"named tool", 5, Hybrid, "run tool_00003 please", nil, false},
		{"named tools fill k", 2, Hybrid, "tool_00003 and tool_00004 and tool_00009", nil, false},
		{"allow filter", 10, Hybrid, "stock price", func(n string) bool { return n[len(n)-1] == '3' }, false},
		{"allow fewer than k", 10, Hybrid, "stock", func(n string) bool { return n < "tool_00040" }, false},
		{"allow filter, lexical", 10, Lexical, "file read", func(n string) bool { return n[len(n)-2] == '1' }, false},
	}
	var rescored, pruned int
	for _, tc := range tests {
		for trial := range 6 {
			var qvec []float32
			if !tc.noVec {
				qvec = randUnit(r, dim)
				if trial%2 == 1 { // a query near a tool: many close scores
					base := v.rows[(trial*97+1)%len(v.slots)]
					if base == nil {
						base = v.rows[1]
					}
					for j := range qvec {
						qvec[j] = base[j] + 0.05*qvec[j]
					}
					qvec = normalized(qvec)
				}
			}
			alpha := []float64{0.5, 0.3, 0.8}[trial%3]
			q := Query{Text: tc.text, K: tc.k, Mode: tc.mode, Allow: tc.allow}
			got, want, n := rankBoth(v, q, qvec, alpha)
			if d := sameHits(got.Hits, want.Hits); d != "" {
				t.Fatalf("%s/%d: pruned: %s", tc.name, trial, d)
			}
			if n >= 0 {
				rescored += n
				pruned++
			}
			if tc.name == "named tool" && got.Hits[0].Name != "tool_00003" {
				t.Fatalf("named tool not first: %+v", got.Hits)
			}
		}
	}
	if pruned < len(tests)*6/2 {
		t.Errorf("only %d of %d rankings were pruned", pruned, len(tests)*6)
	}
	if per := rescored / max(1, pruned); per > len(v.byName)/5 {
		t.Errorf("the pruned rankings scored %d of %d tools exactly on average: the bounds prune little", per, len(v.byName))
	}
	t.Logf("%d rankings pruned, %d tools scored exactly each on average, of %d", pruned, rescored/max(1, pruned), len(v.byName))
}

// TestPrunedRanksLikeAll builds an index over the tools of an openly
// licensed training set (train/data/tldr: 5,170 command-line tools) with
// the built-in embedder, and ranks its requests through Index.Rank (the
// learned last step included) pruned and by scoring every tool: the same
// rankings, to the bit. With -short, a smaller catalog pruned all the same.
func TestPrunedRanksLikeAll(t *testing.T) {
	ctx := context.Background()
	tools, requests := tldrData(t)
	nTools, nReq := len(tools), 300
	if testing.Short() {
		nTools, nReq = 800, 60
	}
	dir := t.TempDir()
	for _, x := range tools[:nTools] {
		meta, _ := json.Marshal(map[string]any{"description": x.Description, "cmd": "cat"})
		writeMeta(t, dir, x.Name, string(meta))
	}
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: quiet()})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ix := New(emb, Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	ix.mu.Lock()
	ix.v.pruneFrom = 1
	ix.mu.Unlock()
	for i, text := range requests[:nReq] {
		for _, q := range []Query{
			{Text: text, K: 10},
			{Text: text, K: 1, Mode: Lexical},
			{Text: text, K: 5, Mode: Dense},
			{Text: text, K: 10, NoLastStep: true, Context: []string{requests[(i+1)%len(requests)]}},
		} {
			got, err := ix.Rank(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			q.Exhaustive = true
			want, err := ix.Rank(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameHits(got.Hits, want.Hits); d != "" {
				t.Fatalf("%q (k %d, %s): pruned: %s", text, q.K, q.Mode, d)
			}
			if (got.Answerable == nil) != (want.Answerable == nil) || got.Answerable != nil && *got.Answerable != *want.Answerable {
				t.Fatalf("%q: answerable %v, want %v", text, got.Answerable, want.Answerable)
			}
		}
	}
}

type tldrTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// tldrData reads the tools (their names made valid tool names) and the
// requests of train/data/tldr.
func tldrData(t *testing.T) ([]tldrTool, []string) {
	t.Helper()
	dir := filepath.Join("..", "train", "data", "tldr")
	read := func(name string, each func([]byte)) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			each(sc.Bytes())
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var tools []tldrTool
	seen := map[string]bool{}
	read("tools.jsonl.gz", func(b []byte) {
		var x struct {
			Tool, Description string
		}
		if json.Unmarshal(b, &x) != nil || x.Description == "" {
			return
		}
		name := strings.Map(func(r rune) rune {
			if r < 128 && (r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return r
			}
			return '_'
		}, x.Tool)
		name = "t_" + strings.Trim(name, "._-")
		if len(name) > 100 || seen[name] {
			return
		}
		seen[name] = true
		tools = append(tools, tldrTool{Name: name, Description: x.Description})
	})
	var requests []string
	read("pairs.jsonl.gz", func(b []byte) {
		var x struct{ Query string }
		if json.Unmarshal(b, &x) == nil && x.Query != "" && len(requests) < 5000 {
			requests = append(requests, x.Query)
		}
	})
	if len(tools) < 2500 || len(requests) < 300 {
		t.Fatalf("train/data/tldr: %d tools, %d requests", len(tools), len(requests))
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(requests), func(i, j int) { requests[i], requests[j] = requests[j], requests[i] })
	return tools, requests
}

// TestPrunedDenseAdversarial aims queries at the dense bound's weak spot:
// a cluster of similar tools, and queries tilted from one of them along
// its own quantisation error, so that its 4-bit cosine underestimates it
// by as much as the error allows while its neighbours' do not: the 4-bit
// scan puts another first, by more than half the bound (the check that
// the queries test it). The pruned ranking must still give rankAll's.
func TestPrunedDenseAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 64
	v := newView(newHashEmbedder(dim), nil)
	x0 := randUnit(r, dim)
	for i := range 2600 {
		vec := randUnit(r, dim)
		if i < 80 { // the cluster
			for j := range vec {
				vec[j] = x0[j] + 0.3*vec[j]
			}
			vec = normalized(vec)
		}
		v.upsert(&document{name: fmt.Sprintf("tool_%04d", i), hash: fmt.Sprint(i),
			fields: []field{{fmt.Sprintf("w%d", i%13), weightName}}}, vec, nil)
	}
	misses := 0
	xhat := make([]float32, dim)
	for i := range 80 {
		s := v.byName[fmt.Sprintf("tool_%04d", i)]
		v.q4.Decode(s, xhat)
		e := make([]float32, dim)
		for j := range e {
			e[j] = v.rows[s][j] - xhat[j]
		}
		e = normalized(e)
		for _, lambda := range []float32{1, 2, 4} {
			q := make([]float32, dim)
			for j := range q {
				q[j] = v.rows[s][j] + lambda*e[j]
			}
			q = normalized(q)
			for _, tc := range []struct {
				mode Mode
				k    int
			}{{Dense, 1}, {Dense, 3}, {Hybrid, 1}, {Hybrid, 10}} {
				got, want, n := rankBoth(v, Query{Text: "w1", K: tc.k, Mode: tc.mode}, q, 0.5)
				if d := sameHits(got.Hits, want.Hits); d != "" {
					t.Fatalf("tool %d, λ %.1f, %s k %d: pruned: %s", i, lambda, tc.mode, tc.k, d)
				}
				if n < 0 {
					t.Fatalf("tool %d, %s k %d: not pruned", i, tc.mode, tc.k)
				}
				// Whether the 4-bit scan alone would have put another tool
				// first by more than half the bound (what the bound is for).
				if tc.mode != Dense || tc.k != 1 {
					continue
				}
				qq := v.q4.Query(q)
				dots := make([]int32, len(v.slots))
				v.q4.Dots(&qq, 0, len(v.slots), dots)
				top := v.byName[want.Hits[0].Name]
				cTop, slack := v.q4.Bound(&qq, top, dots[top])
				for s2 := range v.slots {
					if c, _ := v.q4.Bound(&qq, s2, dots[s2]); c-cTop > slack/2 {
						misses++
						break
					}
				}
			}
		}
	}
	// The scenario matters only if the approximation alone gets it wrong.
	if misses < 20 {
		t.Errorf("the 4-bit scan put another tool first by more than half the bound in only %d of 240 queries: they do not test the bound", misses)
	}
	t.Logf("the 4-bit scan put another tool first by more than half the bound in %d of 240 queries", misses)
}

// TestPrunedRefineAdversarial aims at the int8 rows' bound: rows made so
// that the int8 approximation errs by nearly its whole bound, one way for
// half of them and the other way for the other half (each component's
// error half a step, of the sign of the query's), with their exact
// cosines arranged so that the half the approximation puts last is in
// fact first. The pruned ranking must keep the true best; with the bound
// halved it would not (the test's own check that it tests the bound: the
// approximation puts the wrong half first by more than half the bound).
func TestPrunedRefineAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim = 64
	for trial := range 4 {
		q := randUnit(r, dim)
		var l1 float64
		for _, x := range q {
			l1 += math.Abs(float64(x))
		}
		v := newView(newHashEmbedder(dim), nil)
		// A unit vector at cosine c with q.
		at := func(c float64) []float32 {
			w := randUnit(r, dim)
			var d float64
			for i := range w {
				d += float64(w[i]) * float64(q[i])
			}
			y := make([]float32, dim)
			for i := range y {
				y[i] = float32(float64(w[i]) - d*float64(q[i])) // ⟂ q
			}
			y = normalized(y)
			s := math.Sqrt(1 - c*c)
			for i := range y {
				y[i] = float32(c*float64(q[i]) + s*float64(y[i]))
			}
			return y
		}
		misses := 0
		for i := range 2600 {
			var row []float32
			if i < 40 {
				// sign +1 (the first half): the approximation is low by
				// about e = 0.49·step·‖q‖₁, so these are placed that much
				// below their neighbours in the approximation but above
				// them in fact.
				sign := 1.0
				if i >= 20 {
					sign = -1
				}
				// The aligned error is about 0.49·step·‖q‖₁; the
				// approximations of the two halves are set 1.5 times it
				// apart (more than the bound, about the error), the other
				// way round from their exact cosines.
				y := at(0.9)
				codes := make([]int8, dim)
				e := 0.49 * float64(quantizeRow(codes, y)) * l1
				y = at(0.9 - sign*0.75*e)
				rs := float64(quantizeRow(codes, y))
				top := 0 // the largest code keeps its value: the scale stays
				for k := range codes {
					if abs8(codes[k]) > abs8(codes[top]) {
						top = k
					}
				}
				x := make([]float64, dim)
				var sq float64
				for k := range x {
					s := 1.0
					if q[k] < 0 {
						s = -1
					}
					x[k] = rs * float64(codes[k])
					if k != top {
						x[k] += sign * 0.49 * rs * s
					}
					sq += x[k] * x[k]
				}
				// Not normalised again (which would move every component,
				// and the errors with them): a norm within a percent of 1,
				// which the bounds allow for.
				if math.Abs(math.Sqrt(sq)-1) > 0.02 {
					t.Fatalf("an adversarial row's norm is %.4f", math.Sqrt(sq))
				}
				row = make([]float32, dim)
				for k := range x {
					row[k] = float32(x[k])
				}
			} else {
				row = at(0.3 * r.Float64())
			}
			v.upsert(&document{name: fmt.Sprintf("tool_%04d", i), hash: fmt.Sprint(i),
				fields: []field{{"w", weightName}}}, row, nil)
		}
		for _, tc := range []struct {
			mode Mode
			k    int
		}{{Dense, 1}, {Dense, 5}, {Hybrid, 1}, {Hybrid, 10}} {
			got, want, n := rankBoth(v, Query{Text: "w", K: tc.k, Mode: tc.mode}, q, 0.5)
			if d := sameHits(got.Hits, want.Hits); d != "" {
				t.Fatalf("trial %d, %s k %d: pruned: %s", trial, tc.mode, tc.k, d)
			}
			if n < 0 {
				t.Fatalf("trial %d, %s k %d: not pruned", trial, tc.mode, tc.k)
			}
		}
		// The check: the approximation puts the second half above the
		// first by more than half the bound, while the first is truly
		// above.
		q8 := quantizeQuery(q)
		approx := func(s int) float64 {
			out := make([]int32, 1)
			dotsI8(q8.q, v.q8[s*dim:(s+1)*dim], out)
			return float64(out[0]) * q8.scale * float64(v.q8scale[s])
		}
		for i := range 20 {
			a, b := v.byName[fmt.Sprintf("tool_%04d", i)], v.byName[fmt.Sprintf("tool_%04d", 20+i)]
			bound := q8.errBound(v.q8scale[a], dim)
			if approx(b)-approx(a) > bound && dot(q, v.rows[a]) > dot(q, v.rows[b]) {
				misses++
			}
		}
		if misses < 15 {
			t.Errorf("trial %d: the int8 rows misorder only %d of 20 pairs by more than half their bounds' sum: the rows do not test it", trial, misses)
		}
	}
}

func abs8(x int8) int {
	if x < 0 {
		return -int(x)
	}
	return int(x)
}

// TestPrunedLexicalAdversarial aims at the lexical bound's weak spot: the
// terms a pruned ranking leaves unread. Each tool has one rare word of the
// message, at a frequency and in a document length that vary; a common
// word of it (too common to be read, but frequent in some tools) then
// reorders tools the rare words' scores barely separate. With what the
// unread terms may add left out of the bound (rest 0), the pruned ranking
// goes wrong on some of these messages (the check that they test it);
// with it, never.
func TestPrunedLexicalAdversarial(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	v := newView(newHashEmbedder(16), nil)
	for i := range 3000 {
		rare := fmt.Sprintf("r%02d", i%40)
		desc := rare + strings.Repeat(" pad", r.IntN(12))
		if r.IntN(3) == 0 {
			desc += " " + rare // twice: a higher score for the rare word
		}
		prompt := strings.Repeat("pad ", r.IntN(30))
		if r.IntN(20) > 0 {
			prompt += strings.Repeat("common ", 1+r.IntN(20))
		}
		v.upsert(&document{name: fmt.Sprintf("tool_%04d", i), hash: fmt.Sprint(i),
			fields: []field{{"x", weightName}, {desc, weightDescription}, {"", weightKeywords}, {"", weightArgs}, {prompt, weightPrompt}}}, nil, nil)
	}
	wrong := 0
	for i := range 40 {
		text := fmt.Sprintf("r%02d r%02d r%02d r%02d r%02d common", i, (i+1)%40, (i+2)%40, (i+3)%40, (i+4)%40)
		for _, k := range []int{1, 3, 5, 20} {
			for _, mode := range []Mode{Lexical, Hybrid} {
				q := Query{Text: text, K: k, Mode: mode}
				got, want, n := rankBoth(v, q, nil, 0.5)
				if d := sameHits(got.Hits, want.Hits); d != "" {
					t.Fatalf("%q k %d: pruned: %s", text, k, d)
				}
				if n < 0 {
					t.Fatalf("%q k %d: not pruned", text, k)
				}
				// The same without the unread terms' bound.
				lq := map[string]float64{}
				for _, w := range terms(text) {
					lq[w] = 1
				}
				lx := v.lexicalFor(q, lq, 0.5, new(rankScratch))
				if lx.rest == 0 {
					t.Fatalf("%q: every term read: the message does not test the bound", text)
				}
				lx.rest = 0
				if bad := v.rank(q, lx, nil, 0.5); sameHits(bad.Hits, want.Hits) != "" {
					wrong++
				}
			}
		}
	}
	if wrong < 10 {
		t.Errorf("without the unread terms' bound only %d of 320 rankings went wrong: the messages do not test it", wrong)
	}
	t.Logf("without the unread terms' bound, %d of 320 rankings went wrong", wrong)
}

// Messages with numbers, sizes, percentages and stop-word phrases (the
// optional terms, which only break ties: tieShare) rank pruned exactly as
// scoring every tool does, in a catalog where many tools hold such terms
// beside a few words; and their bound is what they can add (at most
// tieShare of a tool's words), not their whole weight: the bound of the
// message's optional terms alone is lower than their summed bounds.
func TestPrunedOptionalTerms(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	v := newView(newHashEmbedder(16), nil)
	words := []string{"convert", "file", "size", "discount", "price", "timer", "alarm", "disk", "download", "upload"}
	extras := []string{"10 MB", "50%", "3 GB", "20 percent", "5 minutes", "how do i", "where is", "1.5 km", "7 times", "$30"}
	for i := range 4000 {
		// Words of skewed frequencies (so of different weights), and for
		// half the tools optional terms, some of them twice.
		desc := words[min(r.IntN(len(words)), r.IntN(len(words)))] + " " + fmt.Sprintf("w%03d", i%300)
		kw := ""
		if r.IntN(2) == 0 {
			e := extras[r.IntN(len(extras))]
			kw = e + ", " + extras[r.IntN(len(extras))]
			if r.IntN(2) == 0 {
				desc += " " + e
			}
		}
		v.upsert(&document{name: fmt.Sprintf("tool_%04d", i), hash: fmt.Sprint(i),
			fields: []field{{"x", weightName}, {desc, weightDescription}, {kw, weightKeywords}, {"", weightArgs}, {"", weightPrompt}}}, nil, nil)
	}
	v.pruneFrom = 1
	tighter, pruned := 0, 0
	for i := range 60 {
		text := fmt.Sprintf("%s %s w%03d %s, and %s", words[i%len(words)], extras[i%len(extras)], (7*i)%300, extras[(i+3)%len(extras)], words[(i+5)%len(words)])
		qvec := randUnit(r, 16)
		for _, k := range []int{1, 5, 20} {
			for _, mode := range []Mode{Lexical, Hybrid} {
				for _, alpha := range []float64{0.5, 0.95} {
					q := Query{Text: text, K: k, Mode: mode}
					got, want, n := rankBoth(v, q, qvec, alpha)
					if d := sameHits(got.Hits, want.Hits); d != "" {
						t.Fatalf("%q k %d %s alpha %g: pruned: %s", text, k, mode, alpha, d)
					}
					if n >= 0 {
						pruned++
					}
				}
			}
		}
		lq := map[string]float64{}
		for _, w := range terms(text) {
			lq[w] = 1
		}
		lx := v.lexicalFor(Query{Text: text, K: 5, Mode: Lexical}, lq, 0.5, new(rankScratch))
		var sg scoring
		sg.norm = lx.plan.norm
		sg.setRest(lx)
		if lx.optRest > 0 && sg.lexRest(0)-sg.restW < lx.optRest {
			tighter++
		}
		lx.release()
	}
	if pruned == 0 {
		t.Error("no ranking was pruned: the test does not test the pruned bounds")
	}
	if tighter == 0 {
		t.Error("no message's optional terms were bounded tighter than their summed bounds: the messages do not test the bound")
	}
}
