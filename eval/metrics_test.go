package eval

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScore(t *testing.T) {
	cases := []struct {
		name        string
		ranked, rel []string
		r1, r5, r10 float64
		ndcg, mrr   float64
	}{
		{"first", []string{"a", "b", "c"}, []string{"a"}, 1, 1, 1, 1, 1},
		{"second", []string{"b", "a"}, []string{"a"}, 0, 1, 1, 1 / math.Log2(3), 0.5},
		{"missing", []string{"b", "c"}, []string{"a"}, 0, 0, 0, 0, 0},
		{"two of two", []string{"a", "x", "b"}, []string{"a", "b"}, 0.5, 1, 1, (1 + 1/math.Log2(4)) / (1 + 1/math.Log2(3)), 1},
		{"beyond 10", []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"}, []string{"a"}, 0, 0, 0, 0, 1.0 / 12},
		{"sixth", []string{"0", "1", "2", "3", "4", "a"}, []string{"a"}, 0, 0, 1, 1 / math.Log2(7), 1.0 / 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Score(c.ranked, c.rel)
			got := []float64{m.R1, m.R5, m.R10, m.NDCG10, m.MRR}
			want := []float64{c.r1, c.r5, c.r10, c.ndcg, c.mrr}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9 {
					t.Fatalf("metrics %v, want %v", got, want)
				}
			}
		})
	}
}

func writeCorpus(t *testing.T, root, name, queries string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(queries), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCorpusLoadingAndEval(t *testing.T) {
	root := t.TempDir()
	writeCorpus(t, root, "b", `{"id":"1","query":"find x","relevant":["x"]}
{"id":"2","query":"find y","relevant":["y","z"]}
`)
	writeCorpus(t, root, "a", `{"id":"1","query":"q","relevant":["t"]}`)
	dirs, err := FindCorpora([]string{root})
	if err != nil || len(dirs) != 2 || filepath.Base(dirs[0]) != "a" {
		t.Fatalf("FindCorpora = %v, %v", dirs, err)
	}
	c, err := LoadCorpus(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "b" || len(c.Queries) != 2 || c.Queries[1].Relevant[1] != "z" {
		t.Fatalf("loaded %+v", c)
	}
	rank := func(_ context.Context, q string) ([]string, bool, error) {
		return []string{"x", "y", "w"}, q == "find y", nil
	}
	m, err := Measure(context.Background(), c, rank)
	if err != nil {
		t.Fatal(err)
	}
	if m.Queries != 2 || m.R1 != 0.5 || m.R5 != 0.75 || m.MRR != 0.75 || m.Degraded != 1 {
		t.Fatalf("metrics %+v", m)
	}
	macro := Macro([]Metrics{m, {R1: 1, R5: 1, R10: 1, NDCG10: 1, MRR: 1, Queries: 1}})
	if macro.R1 != 0.75 || macro.Queries != 3 {
		t.Fatalf("macro %+v", macro)
	}
}

func TestEmptyRelevantIsANoToolFitsRequest(t *testing.T) {
	dir := writeCorpus(t, t.TempDir(), "c", "{\"id\":\"1\",\"query\":\"q\",\"relevant\":[]}\n{\"id\":\"2\",\"query\":\"r\",\"relevant\":[\"t\"]}")
	c, err := LoadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Queries) != 2 || len(c.Queries[0].Relevant) != 0 {
		t.Fatalf("queries %+v", c.Queries)
	}
	// ranking metrics skip it; the offered-set figures count it
	m, _ := Measure(context.Background(), c, func(context.Context, string) ([]string, bool, error) { return []string{"t"}, false, nil })
	if m.Queries != 1 || m.R1 != 1 {
		t.Fatalf("ranking metrics %+v: want 1 query, R@1 1", m)
	}
	for _, tc := range []struct {
		offer          []string
		none           bool
		hit, rec, prec float64
	}{
		{[]string{"t"}, false, 1, 0, 0},
		{nil, true, 0, 1, 0.5},
		{[]string{"u"}, false, 0, 0, 0},
	} {
		o, err := MeasureOffers(context.Background(), c, func(context.Context, string) ([]string, bool, error) { return tc.offer, tc.none, nil })
		if err != nil {
			t.Fatal(err)
		}
		if o.Hit != tc.hit || o.AbstainRecall != tc.rec || o.AbstainPrecision != tc.prec || o.Abstain != 1 || o.Answerable != 1 {
			t.Errorf("offer %v none %v: %+v, want hit %v recall %v precision %v", tc.offer, tc.none, o, tc.hit, tc.rec, tc.prec)
		}
	}
}

func TestCorpusErrorsNameTheLine(t *testing.T) {
	root := t.TempDir()
	bad := map[string]string{
		"syntax":    "{\"id\":\"1\",\"query\":\"q\",\"relevant\":[\"t\"]}\n{oops\n",
		"no id":     `{"query":"q","relevant":["t"]}`,
		"duplicate": "{\"id\":\"1\",\"query\":\"q\",\"relevant\":[\"t\"]}\n{\"id\":\"1\",\"query\":\"r\",\"relevant\":[\"t\"]}",
		"no labels": `{"id":"1","query":"q"}`,
		"empty":     "",
	}
	for name, content := range bad {
		dir := writeCorpus(t, root, strings.ReplaceAll(name, " ", "_"), content)
		if _, err := LoadCorpus(dir); err == nil {
			t.Errorf("%s: loaded a bad corpus", name)
		} else if name != "empty" && !strings.Contains(err.Error(), "queries.jsonl:") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
	if _, err := FindCorpora([]string{t.TempDir()}); err == nil {
		t.Error("an empty directory is not a corpus")
	}
}
