package embedding

import (
	"context"
	"strings"
	"testing"
)

func TestSourcesFromFixtures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		load  func() ([]Pair, error)
		want  []Pair // checked by Query, Source and a Doc substring
		count int
	}{
		{"debian", func() ([]Pair, error) { return debianPairs(ctx, "testdata/apt") },
			[]Pair{{"daemon reporting the weather forecast", "weatherd. weatherd fetches forecasts for a city and reports temperature and rain. It runs in the background.", "debian"}}, 1},
		{"man", func() ([]Pair, error) { return manPairs(ctx, "testdata/man") },
			[]Pair{
				{"compress and archive image files", "frob frobnicate. frob reads image files and writes a compressed archive. It keeps all metadata.", "man"},
				{"descend into directories and archive every image found", "frob frobnicate. compress and archive image files", "man-option"},
				{"remove stale lock files", "zap. The zap utility deletes lock files older than a day.", "man"},
			}, 3},
		{"wordnet", func() ([]Pair, error) { return wordnetPairs(ctx, "testdata/wordnet") },
			[]Pair{
				{"forecast, prognosis", `a prediction about how something will develop; "the weather forecast"`, "wordnet-gloss"},
				{"forecast", "prognosis", "wordnet-syn"},
				{"rainy", "marked by rain", "wordnet-gloss"},
			}, 3},
		{"dict", func() ([]Pair, error) { return dictPairs(ctx, "testdata/dictd") },
			[]Pair{
				{"api", "Application Programming Interface: how programs talk", "dict-foldoc"},
				{"zip", "A compressed archive format.", "dict-vera"},
			}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.count {
				t.Errorf("got %d pairs, want %d: %q", len(got), tc.count, got)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					if g.Query == w.Query && g.Source == w.Source && strings.Contains(g.Doc, w.Doc) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing pair %q → %q (%s) in %q", w.Query, w.Doc, w.Source, got)
				}
			}
		})
	}
	for _, missing := range []func() ([]Pair, error){
		func() ([]Pair, error) { return debianPairs(ctx, "testdata/none") },
		func() ([]Pair, error) { return wordnetPairs(ctx, "testdata/none") },
		func() ([]Pair, error) { return dictPairs(ctx, "testdata/none") },
		func() ([]Pair, error) { return manPairs(ctx, "testdata/none") },
	} {
		if _, err := missing(); err == nil || !strings.Contains(err.Error(), "install") && !strings.Contains(err.Error(), "apt-get") {
			t.Errorf("a missing input should say what to install, got %v", err)
		}
	}
}

func TestDictB64(t *testing.T) {
	for in, want := range map[string]int{"A": 0, "B": 1, "/": 63, "BA": 64, "Gb9L": 6*64*64*64 + 27*64*64 + 61*64 + 11} {
		if got, ok := dictB64(in); !ok || got != want {
			t.Errorf("dictB64(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	if _, ok := dictB64("a-b"); ok {
		t.Error("dictB64 accepted an invalid digit")
	}
}

func TestPyDocFixture(t *testing.T) {
	got, err := pyDocPairs(context.Background(), "testdata/python")
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{
		{"Serialize obj to a JSON formatted string", "json dumps obj indent sort keys. Use indent to pretty-print.", "pydoc"},
		{"Simple JSON decoder for Python data structures", "json JSONDecoder object. More text.", "pydoc"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d pairs, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d = %q, want %q", i, got[i], want[i])
		}
	}
	if _, err := pyDocPairs(context.Background(), "testdata/none"); err == nil {
		t.Error("a missing directory should be an error")
	}
}
