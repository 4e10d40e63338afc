package laststep

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture is testdata/data: a few lines of every source, in train/data's
// layout.
const fixture = "testdata/data"

func loadFixture(t *testing.T) []*Source {
	t.Helper()
	srcs, err := LoadSources(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}

func TestMetaNameWordsCapitalise(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"git status", "git_status"},
		{"accept_reservations", "accept_reservations"},
		{"--weird//name..", "weird_name"},
		{"", "tool"},
		{"***", "tool"},
		{strings.Repeat("a", 130), strings.Repeat("a", 120)},
	} {
		if got := metaName(c.in); got != c.want {
			t.Errorf("metaName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"kitchen_and_dining", "kitchen and dining"},
		{"alarm-query/x", "alarm query x"},
		{"", ""},
	} {
		if got := words(c.in); got != c.want {
			t.Errorf("words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{{"accept", "Accept"}, {"", ""}, {"A", "A"}} {
		if got := capitalise(c.in); got != c.want {
			t.Errorf("capitalise(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLoadSources(t *testing.T) {
	srcs := loadFixture(t)
	var names []string
	bySrc := map[string]*Source{}
	for _, s := range srcs {
		names = append(names, s.Name)
		bySrc[s.Name] = s
	}
	if !slices.Equal(names, SourceNames) {
		t.Fatalf("sources %v, want %v", names, SourceNames)
	}
	tool := func(src, id string) ToolDef {
		t.Helper()
		for _, d := range bySrc[src].Tools {
			if d.ID == id {
				return d
			}
		}
		t.Fatalf("%s has no tool %s", src, id)
		return ToolDef{}
	}
	for _, c := range []struct {
		src, id, name, desc string
		keywords, args      []string
	}{
		// tldr: its own summary; a name two platforms share gets the platform
		{"tldr", "common/tar", "tar", "Archiving utility. Often combined with a compression method, such as gzip or bzip2.", nil, nil},
		{"tldr", "common/ls", "ls_common", "List directory contents.", nil, nil},
		{"tldr", "windows/ls", "ls_windows", "List the contents of a directory on Windows.", nil, nil},
		{"tldr", "common/git status", "git_status", "Show the changes to files in a Git repository.", nil, nil},
		// cheat sheets: tldr's summary of the same command, else "<name> command."; tags as keywords
		{"cheatsheets", "tar", "tar", "Archiving utility. Often combined with a compression method, such as gzip or bzip2.", []string{"compression"}, nil},
		{"cheatsheets", "jq", "jq", "jq command.", []string{"json", "text"}, nil},
		// intents: a description from the label and the domain or scenario
		{"clinc150", "accept_reservations", "accept_reservations", "Accept reservations (kitchen and dining).", nil, nil},
		{"hwu64", "play_music", "play_music", "Play music (play).", nil, nil},
		// Home Assistant: its own description, slots as arguments
		{"home_assistant", "HassTurnOn", "HassTurnOn", "Turns on a device or entity", nil, []string{"name", "area"}},
	} {
		d := tool(c.src, c.id)
		if d.Name != c.name || d.Description != c.desc || !slices.Equal(d.Keywords, c.keywords) || !slices.Equal(d.Args, c.args) {
			t.Errorf("%s/%s = %+v, want name %q, description %q, keywords %v, args %v", c.src, c.id, d, c.name, c.desc, c.keywords, c.args)
		}
	}
	for _, s := range srcs {
		if !slices.IsSortedFunc(s.Tools, func(a, b ToolDef) int { return strings.Compare(a.ID, b.ID) }) {
			t.Errorf("%s: tools not sorted by ID", s.Name)
		}
		seen := map[string]bool{}
		for _, d := range s.Tools {
			if seen[d.Name] {
				t.Errorf("%s: name %s twice", s.Name, d.Name)
			}
			seen[d.Name] = true
		}
	}
	// requests: pairs, then ambiguous ones (several tools), then those no
	// tool serves; blank lines and blank requests are left out
	tldr := bySrc["tldr"]
	if len(tldr.Queries) != 10 || tldr.Queries[0].ID != "tldr/pairs/0" || !slices.Equal(tldr.Queries[0].Tools, []string{"common/tar"}) {
		t.Errorf("tldr requests %+v", tldr.Queries)
	}
	cs := bySrc["cheatsheets"].Queries
	if last := cs[len(cs)-1]; last.ID != "cheatsheets/ambiguous/3" || !slices.Equal(last.Tools, []string{"tar", "jq"}) {
		t.Errorf("cheat sheets' ambiguous request %+v", last)
	}
	var none int
	for _, q := range bySrc["clinc150"].Queries {
		if len(q.Tools) == 0 {
			none++
			if !strings.HasPrefix(q.ID, "clinc150/out_of_scope/") {
				t.Errorf("request %+v serves no tool but is not out of scope", q)
			}
		}
	}
	if none != 12 {
		t.Errorf("%d out-of-scope requests, want 12", none)
	}
}

func TestLoadSourceErrors(t *testing.T) {
	if _, err := LoadSource(t.TempDir(), "tldr", nil); err == nil || !strings.Contains(err.Error(), "no tools.jsonl") {
		t.Errorf("a source without tools: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.jsonl"), []byte("{\"tool\":\"a\"}\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSource(filepath.Dir(dir), "x", nil); err == nil || !strings.Contains(err.Error(), "tools.jsonl:2") {
		t.Errorf("a bad line: %v, want an error naming it", err)
	}
}

func TestReadJSONLReadsGzip(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "pairs.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte("{\"query\":\"a\"}\n\n{\"query\":\"b\"}\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p, ok := find(dir, "pairs.jsonl")
	if !ok || filepath.Base(p) != "pairs.jsonl.gz" {
		t.Fatalf("find = %q, %v", p, ok)
	}
	var lines []string
	if err := readJSONL(p, func(b []byte) error { lines = append(lines, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Errorf("lines %q, want the two non-blank ones", lines)
	}
}

func TestSplitsAreFixed(t *testing.T) {
	// Share is eval.Share: the same number on every machine and run.
	if a, b := Share("heldout-tool", "tldr/common/tar"), Share("heldout-tool", "tldr/common/tar"); a != b || a < 0 || a >= 1 {
		t.Errorf("Share = %v then %v", a, b)
	}
	held := 0
	for i := range 1000 {
		if HeldOutTool("src", strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26)) {
			held++
		}
	}
	if held < 150 || held > 250 {
		t.Errorf("%d of 1000 tools held out, want about 200", held)
	}
	dev := 0
	for i := range 900 {
		if EvalDev(strings.Repeat("q", 1+i%5) + string(rune('0'+i%10)) + strings.Repeat("z", i/10)) {
			dev++
		}
	}
	if dev < 540 || dev > 660 {
		t.Errorf("%d of 900 queries in the dev half, want about 600", dev)
	}
}
