package embedding

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/text"
)

// toyBase is a table of a few words with random rows, as a built table
// would hold them (sorted vocabulary, buckets after it), and an old
// "<op>" row that Extend must learn again.
func toyBase(t *testing.T, dim int) *builtin.Table {
	t.Helper()
	words := []string{"<op>", "add", "arithmet", "calcul", "countdown", "minut", "set", "timer", "number"}
	slices.Sort(words)
	tb := &builtin.Table{Dim: dim, Vocab: words, Buckets: 8, MinN: 3, MaxN: 5}
	rng := rand.New(rand.NewPCG(1, 2))
	tb.Vectors = make([]float32, (len(words)+tb.Buckets)*dim)
	for i := range tb.Vectors {
		tb.Vectors[i] = float32(rng.NormFloat64())
	}
	tb.Prior = make([]float32, len(words))
	for i := range tb.Prior {
		tb.Prior[i] = float32(i + 1)
	}
	// Round trip through the file format: the rows are those a shipped
	// table has.
	var buf bytes.Buffer
	if _, err := tb.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	rt, err := builtin.ReadTable(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// Extend learns rows for the class terms the pairs hold (each near the
// documents its requests ask for), keeps every other row and prior of the
// base as it is, learns a class row of the base again from scratch (so
// extending its own result changes nothing), and gives no row to a class
// too rare in the pairs.
func TestExtend(t *testing.T) {
	const dim = 16
	base := toyBase(t, dim)
	var pairs []Pair
	for i := range 40 {
		pairs = append(pairs,
			Pair{Query: fmt.Sprintf("add %d and %d q%03d", i, i+7, i), Doc: "calculator: arithmetic", Source: "calc"},
			Pair{Query: fmt.Sprintf("set a timer for %d minutes q%03d", i+1, i), Doc: "timer: countdown", Source: "timer"})
	}
	pairs = append(pairs, Pair{Query: "add 5% to it", Doc: "calculator: arithmetic", Source: "calc"})
	o := ExtendOptions()
	o.Train = Config{Dim: dim, Batch: 16, Epochs: 30, LR: 0.05, Tau: 0.1, Seed: 3, Workers: 2}
	o.MinCount = 2
	ext, st, err := ExtendPairs(context.Background(), base, pairs, o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pairs != len(pairs) {
		t.Errorf("%d pairs trained on, want %d", st.Pairs, len(pairs))
	}
	row := func(tb *builtin.Table, term string) []float32 {
		i, ok := slices.BinarySearch(tb.Vocab, term)
		if !ok {
			return nil
		}
		return tb.Row(i)
	}
	var classes []string
	for _, w := range ext.Vocab {
		if text.IsClass(w) {
			classes = append(classes, w)
		}
	}
	if want := []string{"<dur>", "<num>", "<op>"}; !slices.Equal(classes, want) {
		t.Errorf("class rows %q, want %q (<pct> is in one text only)", classes, want)
	}
	for i, w := range base.Vocab {
		if text.IsClass(w) {
			continue
		}
		if got := row(ext, w); !slices.Equal(got, base.Row(i)) {
			t.Errorf("row %q changed", w)
		}
		j, _ := slices.BinarySearch(ext.Vocab, w)
		if ext.Prior[j] != base.Prior[i] {
			t.Errorf("prior of %q: %v, base %v", w, ext.Prior[j], base.Prior[i])
		}
	}
	for b := range base.Buckets {
		if !slices.Equal(ext.Row(len(ext.Vocab)+b), base.Row(len(base.Vocab)+b)) {
			t.Errorf("bucket row %d changed", b)
		}
	}
	if slices.Equal(row(ext, "<op>"), row(base, "<op>")) {
		t.Error("the base's <op> row was kept: it must be learned again")
	}
	// What the classes learned: <op> leans to the calculator, <dur> to
	// the timer.
	cos := func(a []float32, words ...string) float64 {
		sum := make([]float32, dim)
		for _, w := range words {
			for k, x := range row(ext, w) {
				sum[k] += x
			}
		}
		return float64(dot(a, sum)) / math.Sqrt(float64(dot(a, a))*float64(dot(sum, sum)))
	}
	if op := row(ext, "<op>"); !(cos(op, "calcul", "arithmet") > cos(op, "timer", "countdown")+0.2) {
		t.Errorf("<op>: cosine with the calculator %.3f, with the timer %.3f", cos(op, "calcul", "arithmet"), cos(op, "timer", "countdown"))
	}
	if dur := row(ext, "<dur>"); !(cos(dur, "timer", "countdown") > cos(dur, "calcul", "arithmet")+0.2) {
		t.Errorf("<dur>: cosine with the timer %.3f, with the calculator %.3f", cos(dur, "timer", "countdown"), cos(dur, "calcul", "arithmet"))
	}
	// Extending the result again (written and read back, as make model
	// does with the shipped table) gives the same file.
	encode := func(tb *builtin.Table) []byte {
		var buf bytes.Buffer
		if _, err := tb.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := encode(ext)
	rt, err := builtin.ReadTable(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := ExtendPairs(context.Background(), rt, pairs, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(again), first) {
		t.Error("extending the extended table changed it")
	}
	o.Train.Dim = dim + 1
	if _, _, err := ExtendPairs(context.Background(), base, pairs, o); err == nil {
		t.Error("a base of another dimension was extended")
	}
}
