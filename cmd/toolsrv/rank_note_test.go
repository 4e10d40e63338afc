package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rank's table says why DENSE is 0 where that puzzles (the README's
// quickstart: a catalog of one tool), and nowhere else.
func TestRankSaysWhyDenseIsZero(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	for dir, names := range map[string][]string{one: {"json_value"}, two: {"json_value", "word_count"}} {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n+".meta"), []byte(`{"description":"Extract a value from JSON with a jq filter.","keywords":["jq","json"],"cmd":"cat"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	const note = "note: DENSE compares a tool with the catalog's others: with one tool it is 0"
	for _, c := range []struct {
		name string
		args []string
		want bool
	}{
		{"one tool", []string{"rank", "--tools", one, "--no-cache", "get the version field out of this json"}, true},
		{"two tools", []string{"rank", "--tools", two, "--no-cache", "get the version field out of this json"}, false},
		{"one tool, JSON", []string{"rank", "--tools", one, "--no-cache", "--json", "get the version field out of this json"}, false},
	} {
		code, out, errs := runCLIWith(t, "", nil, c.args...)
		if code != 0 || !strings.Contains(out, "json_value") {
			t.Fatalf("%s: exit %d\n%s%s", c.name, code, out, errs)
		}
		if got := strings.Contains(errs, note); got != c.want {
			t.Errorf("%s: the note on stderr: %v, want %v\n%s", c.name, got, c.want, errs)
		}
		if strings.Contains(out, "note:") {
			t.Errorf("%s: the note went to standard output:\n%s", c.name, out)
		}
	}
}
