package builtin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The table the binary carries is the one model.sha256 records (make model
// writes both; a table replaced without its checksum, or the reverse, fails
// here), and it loads.
func TestShippedTableMatchesChecksum(t *testing.T) {
	sum := sha256.Sum256(modelFile)
	if got, want := hex.EncodeToString(sum[:]), strings.TrimSpace(modelSHA256); got != want {
		t.Fatalf("model.bin SHA-256 = %s, recorded in model.sha256 = %s", got, want)
	}
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != e.Table().Dim || e.Dim() < 32 {
		t.Fatalf("Dim = %d", e.Dim())
	}
	if !strings.HasPrefix(e.ID(), "builtin/") {
		t.Fatalf("ID = %q", e.ID())
	}
}

func randomTable(rng *rand.Rand, dim int, vocab []string, buckets int) *Table {
	tb := &Table{Dim: dim, Vocab: slices.Sorted(slices.Values(vocab)), Buckets: buckets, MinN: 3, MaxN: 5}
	tb.Prior = make([]float32, len(vocab))
	for i := range tb.Prior {
		tb.Prior[i] = rng.Float32() * 5
	}
	tb.Vectors = make([]float32, tb.Rows()*dim)
	for i := range tb.Vectors {
		tb.Vectors[i] = float32(rng.NormFloat64())
	}
	// One all-zero row must survive too.
	clear(tb.Row(0))
	return tb
}

func TestTableInt8RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := randomTable(rng, 48, []string{"weather", "forecast", "file", "convert", "zip"}, 16)
	var buf bytes.Buffer
	n, err := tb.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	// magic, header, (length byte + bytes) per term, prior, rows of scale + int8s.
	wantSize := 8 + 5*4 + len(tb.Vocab) + 4*len(tb.Vocab) + tb.Rows()*(4+tb.Dim)
	for _, s := range tb.Vocab {
		wantSize += len(s)
	}
	if buf.Len() != wantSize {
		t.Errorf("file is %d bytes, want %d", buf.Len(), wantSize)
	}
	got, err := ReadTable(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Vocab, tb.Vocab) || !slices.Equal(got.Prior, tb.Prior) ||
		got.Dim != tb.Dim || got.Buckets != tb.Buckets || got.MinN != 3 || got.MaxN != 5 {
		t.Fatalf("header or vocabulary changed in the round trip")
	}
	for r := 0; r < tb.Rows(); r++ {
		a, b := tb.Row(r), got.Row(r)
		var amax float64
		for _, x := range a {
			amax = math.Max(amax, math.Abs(float64(x)))
		}
		for j := range a {
			if d := math.Abs(float64(a[j] - b[j])); d > amax/254+1e-6 {
				t.Fatalf("row %d[%d]: %v became %v (error %g > half a step %g)", r, j, a[j], b[j], d, amax/254)
			}
		}
	}
	// A second round trip is exact: quantized values are fixed points.
	var buf2 bytes.Buffer
	if _, err := got.WriteTo(&buf2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Error("re-encoding a decoded table changed its bytes")
	}
	// Damaged files are refused.
	for _, cut := range []int{0, 5, 30, buf.Len() - 1} {
		if _, err := ReadTable(bytes.NewReader(buf.Bytes()[:cut])); err == nil {
			t.Errorf("ReadTable accepted a file cut at %d bytes", cut)
		}
	}
	if _, err := ReadTable(bytes.NewReader(append(buf.Bytes(), 0))); err == nil {
		t.Error("ReadTable accepted trailing data")
	}
}

func TestEmbedDeterministicAndNormalised(t *testing.T) {
	ctx := context.Background()
	shipped, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	custom, err := FromTable(randomTable(rng, 32, []string{"weather", "forecast", "file"}, 64), Options{ID: "builtin/test", UnseenIDF: 1})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"What's the weather forecast in Paris tomorrow?", "compress_files_to_zip", "", "!!! ??", "the of and"}
	for _, e := range []*Embedder{shipped, custom} {
		docs, err := e.EmbedDocuments(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range texts {
			q, err := e.EmbedQuery(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			q2, _ := e.EmbedQuery(ctx, s)
			if !slices.Equal(q, q2) || !slices.Equal(q, docs[i]) {
				t.Errorf("%s: %q embeds differently on repeated calls", e.ID(), s)
			}
			if len(q) != e.Dim() {
				t.Fatalf("len = %d, want %d", len(q), e.Dim())
			}
			var norm float64
			for _, x := range q {
				if math.IsNaN(float64(x)) {
					t.Fatalf("%q: NaN in vector", s)
				}
				norm += float64(x) * float64(x)
			}
			if math.Abs(norm-1) > 1e-4 {
				t.Errorf("%s: |v(%q)|² = %v, want 1", e.ID(), s, norm)
			}
		}
		// A fresh embedder from the same table gives the very same vectors.
		if e == shipped {
			again, _ := New()
			a, _ := again.EmbedQuery(ctx, texts[0])
			b, _ := e.EmbedQuery(ctx, texts[0])
			if !slices.Equal(a, b) {
				t.Error("two embedders from the shipped table disagree")
			}
		}
	}
}

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestFitWeightsAndRestore(t *testing.T) {
	ctx := context.Background()
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{
		"get_weather: returns the weather forecast for a city",
		"send_email: sends an email message to a recipient",
		"convert_currency: converts an amount between currencies",
		"get_stock_price: returns the current price of a stock",
	}
	fe, err := e.Fit(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	f := fe.(*Fitted)
	if w1, w2 := f.Weight("weather"), f.Weight("return"); !(w1 > w2) {
		t.Errorf("weight(weather)=%v should exceed weight(return)=%v (in 2 of 4 docs)", w1, w2)
	}
	dv, _ := f.EmbedDocuments(ctx, docs)
	q, _ := f.EmbedQuery(ctx, "what's the weather forecast for tomorrow")
	best, bestScore := -1, -2.0
	for i, d := range dv {
		if s := cos(q, d); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best != 0 {
		t.Errorf("weather query ranked doc %d first, want 0", best)
	}
	r, err := e.Restore(f.State())
	if err != nil {
		t.Fatal(err)
	}
	if r.ID() != f.ID() || r.ID() == e.ID() {
		t.Errorf("restored ID %q, fitted %q, base %q", r.ID(), f.ID(), e.ID())
	}
	q2, _ := r.EmbedQuery(ctx, "what's the weather forecast for tomorrow")
	if !slices.Equal(q, q2) {
		t.Error("restored embedder embeds differently")
	}
	other, _ := e.Fit(ctx, docs[:2])
	if other.ID() == f.ID() {
		t.Error("different catalogs gave the same fitted ID")
	}
	for _, bad := range [][]byte{nil, []byte("nonsense"), f.State()[:len(f.State())-1], append(f.State(), 1)} {
		if _, err := e.Restore(bad); err == nil {
			t.Errorf("Restore accepted a bad state of %d bytes", len(bad))
		}
	}
}

// TestEmbedDocumentsParallelMatchesSerial embeds enough documents to use
// every core and checks each vector against embedding it alone.
func TestEmbedDocumentsParallelMatchesSerial(t *testing.T) {
	ctx := context.Background()
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	docs := benchDocs(200)
	f, err := e.Fit(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	all, err := f.EmbedDocuments(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(docs); i += 37 {
		one, err := f.EmbedDocuments(ctx, docs[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one[0], all[i]) {
			t.Errorf("document %d embeds differently in a batch of %d", i, len(docs))
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.EmbedDocuments(cctx, docs); err == nil {
		t.Error("EmbedDocuments ignored a cancelled context")
	}
}

// TestViewTableMatchesReadTable: the shipped table read in place (its rows
// dequantized when read) gives exactly the values ReadTable decodes, row by
// row and through the embedder (known terms, n-gram buckets, a fit), and a
// damaged table is refused as ReadTable refuses it.
func TestViewTableMatchesReadTable(t *testing.T) {
	read, err := ReadTable(bytes.NewReader(modelFile))
	if err != nil {
		t.Fatal(err)
	}
	view, err := ViewTable(modelFile)
	if err != nil {
		t.Fatal(err)
	}
	if view.Vectors != nil || view.Dim != read.Dim || view.Buckets != read.Buckets || view.MinN != read.MinN || view.MaxN != read.MaxN ||
		!slices.Equal(view.Vocab, read.Vocab) || !slices.Equal(view.Prior, read.Prior) {
		t.Fatal("the header, vocabulary or prior differ")
	}
	sum, want := make([]float32, read.Dim), make([]float32, read.Dim)
	for r := 0; r < read.Rows(); r++ {
		first := view.Row(r) // dequantized now
		again := view.Row(r) // the kept row
		if !slices.Equal(first, read.Row(r)) || !slices.Equal(again, read.Row(r)) {
			t.Fatalf("row %d differs", r)
		}
		view.addRow(r, sum)
		read.addRow(r, want)
		if r%997 == 0 && !slices.Equal(sum, want) {
			t.Fatalf("the sum of rows up to %d differs", r)
		}
	}
	o := DefaultOptions()
	o.ID = "t"
	ev, err := FromTable(view, o)
	if err != nil {
		t.Fatal(err)
	}
	er, _ := FromTable(read, o)
	ctx := context.Background()
	docs := []string{"get_weather: returns the weather forecast for a city", "zqxjv_frobnicate: unfrobnicates a zqxjv quuxly", "convert a video to gif"}
	fv, err := ev.Fit(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := er.Fit(ctx, docs)
	for _, e := range [][2]embedderUnderTest{{ev, er}, {fv, fr}} {
		a, _ := e[0].EmbedDocuments(ctx, docs)
		b, _ := e[1].EmbedDocuments(ctx, docs)
		qa, _ := e[0].EmbedQuery(ctx, "frobnicate the weather quuxly")
		qb, _ := e[1].EmbedQuery(ctx, "frobnicate the weather quuxly")
		for i := range a {
			if !slices.Equal(a[i], b[i]) {
				t.Fatalf("document %d embeds differently", i)
			}
		}
		if !slices.Equal(qa, qb) {
			t.Fatal("the query embeds differently")
		}
	}
	for _, cut := range []int{0, 5, 30, len(modelFile) / 2, len(modelFile) - 1} {
		if _, err := ViewTable(modelFile[:cut]); err == nil {
			t.Errorf("ViewTable accepted a table cut at %d bytes", cut)
		}
	}
	if _, err := ViewTable(append(slices.Clip(modelFile), 0)); err == nil {
		t.Error("ViewTable accepted trailing data")
	}
}

// embedderUnderTest is what TestViewTableMatchesReadTable compares.
type embedderUnderTest interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// TestOOVCacheKeepsCatalogTermsOnly: the n-gram vectors of catalog terms
// outside the vocabulary are made on first use, on several goroutines at
// once, and are the same made or kept; a query's own unknown words are not
// kept (a server's queries must not grow it).
func TestOOVCacheKeepsCatalogTermsOnly(t *testing.T) {
	ctx := context.Background()
	e, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for i := range 64 {
		docs = append(docs, fmt.Sprintf("zqx%dtool: frobnicates the blorvex %d quuxly", i%7, i))
	}
	fe, err := e.Fit(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	f := fe.(*Fitted)
	first, _ := f.EmbedDocuments(ctx, docs) // parallel: fills the cache
	again, _ := f.EmbedDocuments(ctx, docs)
	r, err := e.Restore(f.State())
	if err != nil {
		t.Fatal(err)
	}
	restored, _ := r.EmbedDocuments(ctx, docs[:1])
	for i := range first {
		if !slices.Equal(first[i], again[i]) {
			t.Fatalf("document %d: made and kept vectors differ", i)
		}
	}
	if !slices.Equal(first[0], restored[0]) {
		t.Fatal("a restored embedder embeds differently")
	}
	kept := func(term string) bool { _, ok := f.oov.m.Load(term); return ok }
	if !kept("blorvex") {
		t.Error("a catalog term outside the vocabulary was not kept")
	}
	if _, err := f.EmbedQuery(ctx, "plimbostrate the blorvex"); err != nil {
		t.Fatal(err)
	}
	if kept("plimbostrate") {
		t.Error("a query's unknown word was kept")
	}
}
