package laststep

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/learn"
)

func TestTrainingCatalogs(t *testing.T) {
	srcs := loadFixture(t)
	cats := TrainingCatalogs(srcs, 3000)
	var names []string
	for _, c := range cats {
		names = append(names, c.Name)
	}
	want := []string{"tldr/drop1", "tldr/drop2", "tldr/sub1", "tldr/sub2", "cheatsheets/drop1", "cheatsheets/drop2",
		"clinc150/drop1", "clinc150/drop2", "hwu64/drop1", "hwu64/drop2", "home_assistant/drop1", "home_assistant/drop2"}
	if !slices.Equal(names, want) {
		t.Fatalf("catalogs %v\nwant %v", names, want)
	}
	// The probes: the off-topic requests IsProbe picks, sorted, in no
	// catalog's requests.
	var probes []string
	for _, s := range srcs {
		for _, q := range s.Queries {
			if len(q.Tools) == 0 && IsProbe(q.Text) {
				probes = append(probes, q.Text)
			}
		}
	}
	slices.Sort(probes)
	if len(probes) != 3 || !slices.Equal(Probes, probes) {
		t.Errorf("Probes %q, want %q", Probes, probes)
	}
	isProbe := map[string]bool{}
	for _, p := range probes {
		isProbe[p] = true
	}
	bySrc := map[string]*Source{}
	for _, s := range srcs {
		bySrc[s.Name] = s
	}
	for _, c := range cats {
		inCat := map[string]bool{}
		for _, d := range c.Tools {
			inCat[d.Name] = true
		}
		src := bySrc[c.Source]
		nameOf := map[string]string{}
		for _, d := range src.Tools {
			nameOf[d.ID] = d.Name
		}
		byID := map[string]Query{}
		for _, q := range src.Queries {
			byID[q.ID] = q
		}
		for _, q := range c.Queries {
			if isProbe[q.Text] {
				t.Errorf("%s: probe %q among the requests", c.Name, q.Text)
			}
			for _, r := range q.Relevant {
				if !inCat[r] {
					t.Errorf("%s: request %s names %s, not in the catalog", c.Name, q.ID, r)
				}
			}
			if q.OffTopic {
				continue
			}
			// the relevant tools are the request's tools still in the catalog
			sq, ok := byID[q.ID]
			if !ok {
				t.Fatalf("%s: request %s is not the source's", c.Name, q.ID)
			}
			var rel []string
			held := false
			for _, id := range sq.Tools {
				held = held || HeldOutTool(c.Source, id)
				if inCat[nameOf[id]] {
					rel = append(rel, nameOf[id])
				}
			}
			if !slices.Equal(rel, q.Relevant) {
				t.Errorf("%s: request %s relevant %v, want %v", c.Name, q.ID, q.Relevant, rel)
			}
			if len(sq.Tools) > 0 && q.Val != held {
				t.Errorf("%s: request %s held out %v, its tools %v", c.Name, q.ID, q.Val, held)
			}
		}
	}
	// the clinc150 and hwu64 catalogs have their own "no tool fits"
	// requests; the others get off-topic ones, OffTopicShare% of theirs
	for _, c := range cats {
		off := 0
		for _, q := range c.Queries {
			if q.OffTopic {
				off++
			}
		}
		want := OffTopicShare * (len(c.Queries) - off) / 100
		if c.Source == "clinc150" || c.Source == "hwu64" {
			want = 0
		}
		if off != want {
			t.Errorf("%s: %d off-topic requests, want %d", c.Name, off, want)
		}
	}
	if again := TrainingCatalogs(srcs, 3000); !sameCatalogs(cats, again) {
		t.Error("TrainingCatalogs differs from one call to the next")
	}
	// at most maxQ requests per catalog
	for _, c := range TrainingCatalogs(srcs, 3) {
		if len(c.Queries) > 3 {
			t.Errorf("%s: %d requests, want at most 3", c.Name, len(c.Queries))
		}
	}
}

func sameCatalogs(a, b []*Catalog) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !reflect.DeepEqual(a[i].Tools, b[i].Tools) || !reflect.DeepEqual(a[i].Queries, b[i].Queries) {
			return false
		}
	}
	return true
}

func TestDropCatalog(t *testing.T) {
	tldr := loadFixture(t)[0]
	for _, c := range []struct {
		name     string
		drop     float64
		in       func(string) bool
		tools    int
		negative bool // every request is a "no tool fits" one
	}{
		{"all", 0, nil, 6, false},
		{"none", 1, nil, 0, true},
		{"subset", 0, func(id string) bool { return strings.HasPrefix(id, "common/") }, 5, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat := dropCatalog(tldr, "seed", c.drop, c.in, 100)
			if len(cat.Tools) != c.tools {
				t.Errorf("%d tools, want %d", len(cat.Tools), c.tools)
			}
			for _, q := range cat.Queries {
				if (len(q.Relevant) == 0) != (c.negative || (c.in != nil && strings.Contains(q.Text, "Windows"))) {
					t.Errorf("request %q: relevant %v", q.Text, q.Relevant)
				}
			}
		})
	}
}

func TestEvalCatalogs(t *testing.T) {
	c := &eval.Corpus{Name: "demo", ToolsDir: "/x/tools", Queries: []eval.Query{
		{ID: "1", Text: "a", Relevant: []string{"t1", "t2"}},
		{ID: "2", Text: "b", Relevant: []string{}},
	}}
	cats := EvalCatalogs([]*eval.Corpus{c})
	if len(cats) != 2 || cats[0].Name != "eval/demo/full" || cats[1].Name != "eval/demo/drop" {
		t.Fatalf("catalogs %v", cats)
	}
	full, drop := cats[0], cats[1]
	if !full.Eval || full.Dir != c.ToolsDir || full.Keep != nil || !slices.Equal(full.Queries[0].Relevant, []string{"t1", "t2"}) {
		t.Errorf("full catalog %+v", full)
	}
	for i, q := range drop.Queries {
		if q.Val != !EvalDev(c.Queries[i].ID) {
			t.Errorf("request %s: test half %v", q.ID, q.Val)
		}
		for _, r := range c.Queries[i].Relevant {
			if drop.Keep(r) != slices.Contains(q.Relevant, r) {
				t.Errorf("request %s: %s kept %v but relevant %v", q.ID, r, drop.Keep(r), q.Relevant)
			}
		}
	}
}

func TestToolText(t *testing.T) {
	desc := "Find patterns in files using regular expressions. More information: somewhere."
	for _, c := range []struct {
		name, desc string
		variant    int
		want       string
	}{
		{"grep", desc, 0, "Find patterns in files using regular expressions"},
		{"grep", desc, 2, "Find patterns in files using regular expressions"},
		{"find_files", "Find files by name in a directory tree, recursively.", 2, "by name in a directory tree, recursively"},
		{"x", "Short. Then a much longer second sentence here.", 0, "Short. Then a much longer second sentence here."},
		{"x", strings.Repeat("word ", 20), 0, strings.TrimSpace(strings.Repeat("word ", 16))},
		{"x", "", 0, ""},
	} {
		if got := ToolText(c.name, c.desc, c.variant); got != c.want {
			t.Errorf("ToolText(%q, %q, %d) = %q, want %q", c.name, c.desc, c.variant, got, c.want)
		}
	}
	// variant 1: at most 8 of the words, in order, the same every time
	got := ToolText("grep", desc, 1)
	if n := len(strings.Fields(got)); n == 0 || n > 8 || got != ToolText("grep", desc, 1) {
		t.Errorf("ToolText variant 1 = %q", got)
	}
	last := -1
	for _, w := range strings.Fields(got) {
		i := slices.Index(strings.Fields(desc), w)
		if i <= last {
			t.Errorf("ToolText variant 1 = %q: words out of order", got)
		}
		last = i
	}
}

// extractFixture extracts the samples of two small catalogs of the
// fixture with the shipped table, pool 3.
func extractFixture(t *testing.T) ([]*Catalog, []Sample) {
	t.Helper()
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	srcs := loadFixture(t)
	cats := TrainingCatalogs(srcs, 3000)
	cats = slices.DeleteFunc(cats, func(c *Catalog) bool { return c.Name != "tldr/sub1" && c.Name != "clinc150/drop1" })
	samples, err := Extract(context.Background(), emb, cats, 3, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cats, samples
}

func TestExtract(t *testing.T) {
	cats, samples := extractFixture(t)
	byID := map[string]LQuery{}
	requests := 0
	for _, c := range cats {
		for _, q := range c.Queries {
			byID[c.Name+" "+q.ID] = q
		}
		requests += len(c.Queries)
	}
	var probes, reqs int
	for _, s := range samples {
		if len(s.Cand) > 3 || len(s.Cand) != len(s.Names) || len(s.Rel) != len(s.Names) {
			t.Fatalf("%s %s: pool of %d candidates, %d names, %d labels; want at most 3 each", s.Catalog, s.ID, len(s.Cand), len(s.Names), len(s.Rel))
		}
		// the pool is the hybrid ranking, best first
		for i := 1; i < len(s.Cand); i++ {
			if s.Cand[i][learn.CandScore] > s.Cand[i-1][learn.CandScore] {
				t.Errorf("%s %s: candidate %d scores above the one before", s.Catalog, s.ID, i)
			}
		}
		if s.Probe {
			probes++
			if s.Answerable || slices.Contains(s.Rel, true) || s.Text == "" {
				t.Errorf("probe %s: %+v", s.ID, s)
			}
			continue
		}
		reqs++
		q, ok := byID[s.Catalog+" "+s.ID]
		if !ok {
			t.Fatalf("sample %s %s is no request of the catalogs", s.Catalog, s.ID)
		}
		if s.Answerable != (len(q.Relevant) > 0) || s.NRel != len(q.Relevant) || s.Val != q.Val {
			t.Errorf("%s %s: answerable %v, %d relevant, val %v; the request %+v", s.Catalog, s.ID, s.Answerable, s.NRel, s.Val, q)
		}
		for i, n := range s.Names {
			if s.Rel[i] != slices.Contains(q.Relevant, n) {
				t.Errorf("%s %s: %s labelled %v", s.Catalog, s.ID, n, s.Rel[i])
			}
		}
	}
	if reqs != requests || probes != len(cats)*len(Probes) {
		t.Errorf("%d request samples and %d probe samples, want %d and %d", reqs, probes, requests, len(cats)*len(Probes))
	}
	// a request that says what the tool does has it first
	i := slices.IndexFunc(samples, func(s Sample) bool { return s.Catalog == "tldr/sub1" && s.ID == "tldr/pairs/2" })
	if i < 0 {
		t.Fatal("no sample of tldr/pairs/2 in tldr/sub1")
	}
	if s := samples[i]; len(s.Names) == 0 || s.Names[0] != "grep" || !s.Rel[0] {
		t.Errorf("%q: pool %v, labels %v; want grep first", "Search for a pattern within a file", s.Names, s.Rel)
	}
}

func TestExtractIsDeterministic(t *testing.T) {
	_, a := extractFixture(t)
	_, b := extractFixture(t)
	if len(a) != len(b) {
		t.Fatalf("%d samples, then %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || !slices.Equal(x.Names, y.Names) || !slices.Equal(x.Rel, y.Rel) {
			t.Fatalf("sample %d: %s %v, then %s %v", i, x.ID, x.Names, y.ID, y.Names)
		}
		// Features are sums over words in map order: equal up to rounding.
		for j := range x.Cand {
			for k := range x.Cand[j] {
				if d := math.Abs(x.Cand[j][k] - y.Cand[j][k]); d > 1e-12 {
					t.Errorf("sample %s candidate %d feature %s: %v then %v", x.ID, j, learn.CandNames[k], x.Cand[j][k], y.Cand[j][k])
				}
			}
		}
		for k := range x.Query {
			if d := math.Abs(x.Query[k] - y.Query[k]); d > 1e-12 {
				t.Errorf("sample %s query feature %s: %v then %v", x.ID, learn.AnsNames[k], x.Query[k], y.Query[k])
			}
		}
	}
}

func TestSamplesRoundTrip(t *testing.T) {
	in := []Sample{{Catalog: "c", ID: "1", Answerable: true, Names: []string{"a", "b"}, Rel: []bool{false, true},
		Cand: make([][learn.NumCand]float64, 2), Tools: 2}, {Catalog: "c", ID: "probe/0", Probe: true, Text: "hi"}}
	in[0].Cand[1][learn.CandScore] = 0.5
	in[0].Query[learn.AnsTerms] = 1.25
	path := filepath.Join(t.TempDir(), "s.gob")
	if err := SaveSamples(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := LoadSamples(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("loaded %+v\nsaved %+v", out, in)
	}
	if _, err := LoadSamples(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("loading a missing file: no error")
	}
}

func TestExportCorpus(t *testing.T) {
	c := &Catalog{Name: "demo/drop1", Tools: []ToolDef{
		{Name: "grep", Description: "Find patterns in files.", Keywords: []string{"search"}},
		{Name: "turn_on", Description: "Turns on a device.", Args: []string{"name"}},
	}, Queries: []LQuery{
		{ID: "1", Text: "search a file", Relevant: []string{"grep"}},
		{ID: "2", Text: "switch the light on", Relevant: []string{"turn_on"}, Val: true},
		{ID: "3", Text: "tell me a joke", Val: true},
	}}
	dir := filepath.Join(t.TempDir(), "demo")
	if err := ExportCorpus(dir, c, func(q LQuery) bool { return q.Val }); err != nil {
		t.Fatal(err)
	}
	got, err := eval.LoadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []eval.Query{{ID: "2", Text: "switch the light on", Relevant: []string{"turn_on"}}, {ID: "3", Text: "tell me a joke", Relevant: []string{}}}
	if !reflect.DeepEqual(got.Queries, want) {
		t.Errorf("exported %+v, want %+v", got.Queries, want)
	}
	metas, _ := filepath.Glob(filepath.Join(dir, "tools", "*.meta"))
	if len(metas) != 2 {
		t.Errorf("tools %v", metas)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tools", "turn_on.meta"))
	if err != nil || !strings.Contains(string(b), `"args":{"properties":{"name":{"type":"string"}},"type":"object"}`) {
		t.Errorf("turn_on.meta = %s, %v", b, err)
	}
	if err := ExportCorpus(filepath.Join(t.TempDir(), "none"), c, func(LQuery) bool { return false }); err == nil {
		t.Error("a corpus without requests: no error")
	}
}

func TestMoreCatalogs(t *testing.T) {
	srcs := loadFixture(t)
	MoreCatalogs = true
	defer func() { MoreCatalogs = false }()
	cats := TrainingCatalogs(srcs, 3000)
	names := map[string]*Catalog{}
	for _, c := range cats {
		names[c.Name] = c
	}
	for _, n := range []string{"tldr/size40", "cheatsheets/size60", "mix-tldr-hwu64/drop", "mix-cheatsheets-hwu64-home_assistant/drop"} {
		if names[n] == nil {
			t.Errorf("no catalog %s", n)
		}
	}
	for _, c := range cats {
		seen := map[string]bool{}
		for _, d := range c.Tools {
			if seen[d.Name] {
				t.Errorf("%s: tool name %s twice", c.Name, d.Name)
			}
			seen[d.Name] = true
		}
		for _, q := range c.Queries {
			for _, r := range q.Relevant {
				if !seen[r] {
					t.Errorf("%s: request %s names %s, not in the catalog", c.Name, q.ID, r)
				}
			}
		}
	}
}
