package index

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"
)

func TestStoreGuardsChromemTraps(t *testing.T) {
	ctx := context.Background()
	st, err := newStore("test", 3)
	if err != nil {
		t.Fatal(err)
	}
	// An empty collection answers nothing instead of erroring.
	if res, err := st.query(ctx, []float32{1, 0, 0}, 5); err != nil || len(res) != 0 {
		t.Fatalf("empty query: %v %v", res, err)
	}
	bad := map[string][]float32{
		"zero": {0, 0, 0}, "short": {1, 0}, "nan": {1, float32(nan()), 0},
	}
	for name, v := range bad {
		if err := st.put(ctx, []vecDoc{{hash: name, name: name, vec: v}}); err == nil {
			t.Errorf("%s vector accepted", name)
		}
	}
	v := []float32{3, 4, 0}
	if err := st.put(ctx, []vecDoc{{hash: "h1", name: "a", vec: v}, {hash: "h2", name: "b", vec: []float32{0, 1, 0}}}); err != nil {
		t.Fatal(err)
	}
	v[0] = 100 // the store holds its own normalised copy
	got, ok := st.get("h1")
	if !ok || got[0] != 0.6 || got[1] != 0.8 {
		t.Fatalf("stored %v", got)
	}
	// The vector is held once: chromem keeps the store's slice (it copies
	// only a vector that is not of unit length), and get hands out that
	// same slice for the index's rows. Read through reflection: a chromem
	// that starts copying would double the index's memory unnoticed.
	docs := reflect.ValueOf(st.col).Elem().FieldByName("documents")
	if !docs.IsValid() {
		t.Fatal("chromem's Collection has no documents map any more: check that it still keeps the given vectors")
	}
	held := docs.MapIndex(reflect.ValueOf("h1")).Elem().FieldByName("Embedding")
	if held.Pointer() != uintptr(unsafe.Pointer(&got[0])) {
		t.Error("chromem holds its own copy of the vector: the index would hold every vector twice")
	}
	// n larger than the collection is clamped.
	res, err := st.query(ctx, []float32{1, 0, 0}, 10)
	if err != nil || len(res) != 2 || res[0].name != "a" {
		t.Fatalf("query: %+v %v", res, err)
	}
	// Deleting by ID deletes just that ID.
	if err := st.remove(ctx, "h2"); err != nil || st.count() != 1 {
		t.Fatalf("remove: %v, count %d", err, st.count())
	}
	if err := st.remove(ctx); err != nil || st.count() != 1 {
		t.Fatalf("remove nothing: %v, count %d", err, st.count())
	}
	// chromem must never embed by itself.
	if _, err := st.col.Query(ctx, "text", 1, nil, nil); err == nil || !strings.Contains(err.Error(), "must not embed") {
		t.Fatalf("chromem embedded on its own: %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

func TestTopKMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		n := 1 + r.IntN(300)
		hits := make([]Hit, n)
		for i := range hits {
			hits[i] = Hit{Name: fmt.Sprintf("t%03d", i), Score: float64(r.IntN(20)) / 20, Named: r.IntN(50) == 0}
		}
		all := append([]Hit(nil), hits...)
		sort.Slice(all, func(i, j int) bool { return better(all[i], all[j]) })
		k := 1 + r.IntN(n)
		got := topK(append([]Hit(nil), hits...), k)
		for i := 0; i < k; i++ {
			if got[i] != all[i] {
				t.Fatalf("trial %d, k=%d: position %d is %+v, want %+v", trial, k, i, got[i], all[i])
			}
		}
	}
}

func TestTokens(t *testing.T) {
	cases := map[string]string{
		"getWeatherForecast":      "get weather forecast",
		"HTTPServer started":      "http server started",
		"read_file, list-entries": "read file list entry",
		"Categories & classes":    "category class",
		"GPU4 x86_64":             "gpu4 x86 64",
		"données météo":           "donnée météo",
	}
	for in, want := range cases {
		if got := strings.Join(tokens(in), " "); got != want {
			t.Errorf("tokens(%q) = %q, want %q", in, got, want)
		}
	}
	if got := strings.Join(terms("what is the weather in Paris"), "|"); got != "weather|what is|what is the|is the|paris" {
		t.Errorf("terms kept stopwords, or lost their phrases: %q", got)
	}
}

func TestNamedTools(t *testing.T) {
	byName := map[string]int{"git_status": 0, "search": 1, "pdf2text": 2, "getWeather": 3, "ls": 4, "calculator": 5, "todo": 6}
	cases := map[string]string{
		"run git_status.":                    "git_status",
		"what does GIT_STATUS say":           "", // not written as the name is
		"find every TODO comment":            "", // an ordinary word in capitals
		"add it with the TODO tool":          "todo",
		"ask `TODO`":                         "todo",
		"call getweather for Oslo":           "", // case as in the name
		"convert with pdf2text, then mail":   "pdf2text",
		"call getWeather for Oslo":           "getWeather",
		"search for research papers":         "",
		"use `search` to find papers":        "search",
		`try "search" first`:                 "search",
		"the search tool, please":            "search",
		"tool Calculator: 2+2":               "calculator",
		"ls the directory":                   "",
		"git status":                         "",
		"my calculator broke":                "",
		"git_status_extra is not git_status": "git_status",
	}
	for text, want := range cases {
		got := namedTools(text, byName)
		var names []string
		for n := range got {
			names = append(names, n)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("namedTools(%q) = %v, want %q", text, names, want)
		}
	}
}

// The cache body round-trips: the same vectors under the same hashes and
// names, held once, and a damaged body is an error, never a partial store.
func TestStoreExportImport(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 32
	st, err := newStore("m", dim)
	if err != nil {
		t.Fatal(err)
	}
	var docs []vecDoc
	for i := range 50 {
		docs = append(docs, vecDoc{hash: fmt.Sprintf("h%02d", i), name: fmt.Sprintf("tool_%d", i), vec: randUnit(r, dim)})
	}
	if err := st.put(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := st.export(&b); err != nil {
		t.Fatal(err)
	}
	body := []byte(b.String())
	back, err := importStore(ctx, body, "m", dim)
	if err != nil {
		t.Fatal(err)
	}
	if back.count() != 50 {
		t.Fatalf("imported %d vectors, want 50", back.count())
	}
	for _, d := range docs {
		want, _ := st.get(d.hash)
		got, ok := back.get(d.hash)
		if !ok || back.ids()[d.hash] != d.name {
			t.Fatalf("%s missing or misnamed after import", d.hash)
		}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				t.Fatalf("%s[%d] = %v, exported %v", d.hash, i, got[i], want[i])
			}
		}
	}
	// The int8 rows come with the vectors, as quantizing them gives.
	withRow := 0
	for _, d := range docs {
		vec, _ := back.get(d.hash)
		q, qs := back.quant(d.hash)
		if q == nil {
			continue
		}
		withRow++
		fresh := make([]int8, dim)
		if scale := quantizeRow(fresh, vec); !slices.Equal(q, fresh) || qs != scale {
			t.Fatalf("%s: stored row %v × %v, quantizing gives %v × %v", d.hash, q, qs, fresh, scale)
		}
	}
	if withRow < 45 {
		t.Errorf("only %d of 50 imported vectors came with their int8 row", withRow)
	}
	var again strings.Builder
	if err := back.export(&again); err != nil || again.String() != b.String() {
		t.Errorf("a re-export differs (%v): the file would change on every start", err)
	}
	for name, bad := range map[string][]byte{
		"truncated":      body[:len(body)-3],
		"wrong dim":      body,
		"huge length":    append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, body...),
		"zero vector":    append(append([]byte{1, 'z', 1, 'z'}, make([]byte, 5*dim+4)...), body...),
		"one stray byte": append(append([]byte(nil), body...), 7),
	} {
		d := dim
		if name == "wrong dim" {
			d = dim + 1
		}
		if st, err := importStore(ctx, bad, "m", d); err == nil {
			t.Errorf("%s: imported %d vectors without an error", name, st.count())
		}
	}
}

// Where alreadyUnit says so, normalizing a vector changes no bit of it:
// importStore skips the pass for those, and must store what it did before.
func TestAlreadyUnit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	skipped := 0
	for range 20000 {
		v := make([]float32, 1+rng.IntN(512))
		for i := range v {
			v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3)))
		}
		normalizeInto(v, v)
		if rng.IntN(4) == 0 { // a length drifted by a few steps of the last bit
			i := rng.IntN(len(v))
			v[i] = math.Float32frombits(math.Float32bits(v[i]) + uint32(rng.IntN(64)))
		}
		again := slices.Clone(v)
		normalizeInto(again, again)
		if !alreadyUnit(sumSquares(v)) {
			continue
		}
		skipped++
		for i := range v {
			if math.Float32bits(v[i]) != math.Float32bits(again[i]) {
				t.Fatalf("alreadyUnit, yet normalizing moved element %d of %d: %g -> %g", i, len(v), v[i], again[i])
			}
		}
	}
	if skipped < 10000 {
		t.Errorf("only %d of 20000 unit vectors taken as already unit", skipped)
	}
}
