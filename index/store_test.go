package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
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
	got, ok := st.get(ctx, "h1")
	if !ok || got[0] != 0.6 || got[1] != 0.8 {
		t.Fatalf("stored %v", got)
	}
	got[1] = 42 // and hands out copies
	if again, _ := st.get(ctx, "h1"); again[1] != 0.8 {
		t.Fatal("get returned the internal slice")
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
	if got := strings.Join(terms("what is the weather in Paris"), " "); got != "weather paris" {
		t.Errorf("terms kept stopwords: %q", got)
	}
}

func TestNamedTools(t *testing.T) {
	byName := map[string]int{"git_status": 0, "search": 1, "pdf2text": 2, "getWeather": 3, "ls": 4, "calculator": 5}
	cases := map[string]string{
		"run git_status.":                    "git_status",
		"what does GIT_STATUS say":           "git_status",
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
