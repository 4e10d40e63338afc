package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// A newcomer's catalog (testdata/newcomer: 14 everyday tools, no usage):
// incidental words no longer make confident wrong answers, and the
// explanation names the words that matched and the rule for each tool
// left out.
func TestNewcomerCatalog(t *testing.T) {
	ctx := context.Background()
	eng, err := New(ctx, Options{Dirs: []string{"testdata/newcomer"}, NoCache: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cases := []struct {
		query string
		// notFirst may not be the first tool offered; first, when set,
		// must be.
		notFirst, first string
	}{
		// "order" is only in an argument's description ("Header names to
		// keep, in order.").
		{"order a pizza", "csv_columns", ""},
		// "TODO" in capitals is an ordinary word, not the tool todo's name.
		{"find every TODO comment in the go files", "todo", "file_find"},
		{"convert 5 miles to km", "", "unit_convert"},
		{"will it rain in Paris tomorrow", "", "weather"},
	}
	for _, tc := range cases {
		a, err := eng.Rank(ctx, Request{Query: tc.query, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		names := a.Names()
		if tc.notFirst != "" && len(names) > 0 && names[0] == tc.notFirst {
			t.Errorf("%q: offered %v, %s first", tc.query, names, tc.notFirst)
		}
		if tc.first != "" && (len(names) == 0 || names[0] != tc.first) {
			t.Errorf("%q: offered %v, want %s first", tc.query, names, tc.first)
		}
		for _, o := range a.Tools {
			if o.Named {
				t.Errorf("%q: %s taken as named", tc.query, o.Name)
			}
		}
		ex := a.Explain
		if ex == nil || len(ex.Tools) == 0 {
			t.Fatalf("%q: no explanation", tc.query)
		}
		var offered []string
		for _, te := range ex.Tools {
			if te.Offered {
				offered = append(offered, te.Name)
				continue
			}
			if te.Rule == "" || te.Detail == "" {
				t.Errorf("%q: %s left out with no rule (%+v)", tc.query, te.Name, te)
			}
		}
		if !slices.Equal(offered, names) {
			t.Errorf("%q: the explanation offers %v, the answer %v", tc.query, offered, names)
		}
	}

	// The words and fields: "file" is in file_find's name and description,
	// "order" only in an argument of csv_columns, which does not count in
	// the lexical score.
	a, err := eng.Rank(ctx, Request{Query: "find every TODO comment in the go files", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	matched := func(a Answer, tool string) string {
		for _, te := range a.Explain.Tools {
			if te.Name == tool {
				var b strings.Builder
				for _, m := range te.Matched {
					b.WriteString(m.Field + ":" + strings.Join(m.Words, ",") + ";")
				}
				return b.String()
			}
		}
		return "(not explained)"
	}
	if got := matched(a, "file_find"); !strings.Contains(got, "name:find,file;") || !strings.Contains(got, "description:file;") {
		t.Errorf("file_find matched %q", got)
	}
	p, err := eng.Rank(ctx, Request{Query: "order a pizza", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := matched(p, "csv_columns"); got != "arguments:order;" {
		t.Errorf("csv_columns matched %q, want only the argument's word", got)
	}
	for _, te := range p.Explain.Tools {
		if te.Name == "csv_columns" && te.Lexical != 0 {
			t.Errorf("csv_columns' lexical score %.3f from an argument's word", te.Lexical)
		}
	}
}
