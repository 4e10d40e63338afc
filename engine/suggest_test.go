package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/usage"
)

// copyCatalog copies the .meta files of dir into a new directory.
func copyCatalog(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.meta"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .meta in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// editMeta changes tool's .meta in dir as a user would by hand.
func editMeta(t *testing.T, dir, tool string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, tool+".meta")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// historyCatalog writes five tools, each with the requests of its
// author (examples): enough for the usage signal to be weighed above 0.
func historyCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tools := map[string][2]string{
		"price_lookup": {"Look up the current price of an asset.", `["what is btc at", "btc now", "my btc stash", "how much is btc", "btc today", "check btc", "btc value", "is btc up"]`},
		"send_mail":    {"Send an email message to someone.", `["mail bob the report", "write to alice", "email the team", "drop a note to carol", "message my boss", "send the invoice to dave"]`},
		"weather":      {"Current weather and forecast for a city.", `["will it rain", "do i need an umbrella", "is it cold outside", "how hot is it in rome", "snow tomorrow?", "sunny this weekend?"]`},
		"todo_add":     {"Add an item to the todo list.", `["remind me to buy milk", "note: call mum", "put laundry on my list", "i must pay rent", "add dentist to my tasks", "remember the keys"]`},
		"git_log":      {"Show the commit history of a repository.", `["what did i change yesterday", "recent commits", "who touched this last", "history of main", "last five changes", "when did we release"]`},
	}
	for n, d := range tools {
		meta := `{"description":"` + d[0] + `","cmd":"cat","examples":` + d[1] + `}`
		if err := os.WriteFile(filepath.Join(dir, n+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func explained(a Answer, tool string) (ToolExplanation, bool) {
	if a.Explain == nil {
		return ToolExplanation{}, false
	}
	i := slices.IndexFunc(a.Explain.Tools, func(te ToolExplanation) bool { return te.Name == tool })
	if i < 0 {
		return ToolExplanation{}, false
	}
	return a.Explain.Tools[i], true
}

func suggested(te ToolExplanation, kind SuggestionKind) (Suggestion, bool) {
	i := slices.IndexFunc(te.Suggest, func(s Suggestion) bool { return s.Kind == kind })
	if i < 0 {
		return Suggestion{}, false
	}
	return te.Suggest[i], true
}

// A tool left out of an answer ends its explanation with the changes that
// would bring it in, of each kind the engine knows; each change, made to
// a copy of the catalog, the thresholds file or the request as the
// suggestion says, makes the next ranking offer the tool. (The keyword and
// example kinds are not checked by the engine itself, which does not
// re-rank a changed catalog: here they are.)
func TestSuggestionsBringTheToolIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type setup struct {
		dir string
		req Request
		opt Options
	}
	open := func(s setup) *Engine {
		t.Helper()
		o := s.opt
		o.Dirs, o.NoCache, o.Logger = []string{s.dir}, true, slog.New(slog.DiscardHandler)
		eng, err := New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		return eng
	}
	newcomer := func(t *testing.T) string { return copyCatalog(t, "testdata/newcomer") }
	cases := []struct {
		name string
		kind SuggestionKind
		tool string
		// prepare makes the catalog and request; apply makes the change
		// the suggestion says.
		prepare func(t *testing.T) setup
		apply   func(t *testing.T, s setup, sg Suggestion, eng *Engine) setup
	}{
		{"keyword", SuggestKeyword, "weather",
			func(t *testing.T) setup {
				return setup{dir: newcomer(t), req: Request{Query: "do I need an umbrella in Lyon"}}
			},
			func(t *testing.T, s setup, sg Suggestion, _ *Engine) setup {
				if !slices.Contains(sg.Words, "umbrella") {
					t.Errorf("the keyword suggestion %+v does not name umbrella", sg)
				}
				editMeta(t, s.dir, "weather", func(m map[string]any) {
					m["keywords"] = append(m["keywords"].([]any), anys(sg.Words)...)
				})
				return s
			}},
		{"threshold", SuggestThreshold, "weather",
			func(t *testing.T) setup {
				return setup{dir: newcomer(t), req: Request{Query: "do I need an umbrella in Lyon tomorrow"}}
			},
			func(t *testing.T, s setup, sg Suggestion, eng *Engine) setup {
				s.opt.Thresholds = thresholdsFileWith(t, eng, sg)
				return s
			}},
		{"tier", SuggestTier, "file_find",
			func(t *testing.T) setup {
				dir := newcomer(t)
				editMeta(t, dir, "file_find", func(m map[string]any) { m["tier"] = "cold" })
				return setup{dir: dir, req: Request{Query: "how many lines are in this essay"}}
			},
			func(t *testing.T, s setup, sg Suggestion, _ *Engine) setup {
				editMeta(t, s.dir, "file_find", func(m map[string]any) { m["tier"] = sg.Tier })
				return s
			}},
		{"limit", SuggestLimit, "http_get",
			func(t *testing.T) setup {
				return setup{dir: newcomer(t), req: Request{Query: "how big is my downloads folder", Limit: 1}}
			},
			func(t *testing.T, s setup, sg Suggestion, _ *Engine) setup {
				s.req.Limit = sg.Limit
				return s
			}},
		{"example", SuggestExample, "weather",
			func(t *testing.T) setup {
				return setup{dir: historyCatalog(t), req: Request{Query: "bring a jacket?"}}
			},
			func(t *testing.T, s setup, sg Suggestion, _ *Engine) setup {
				editMeta(t, s.dir, "weather", func(m map[string]any) { m["examples"] = append(m["examples"].([]any), sg.Example) })
				return s
			}},
		{"history", SuggestHistory, "weather",
			func(t *testing.T) setup {
				// The owner called send_mail for this request, five times:
				// the history lifts it, and weather is left out.
				st, _, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for range 5 {
					if err := st.Record(ctx, usage.Event{Request: "mail me the forecast", Tool: "send_mail", OK: true, Principal: usage.Owner, Source: "cli"}); err != nil {
						t.Fatal(err)
					}
				}
				return setup{dir: historyCatalog(t), req: Request{Query: "mail me the forecast"}, opt: Options{Usage: st}}
			},
			func(t *testing.T, s setup, sg Suggestion, _ *Engine) setup {
				if !strings.Contains(sg.Text, "send_mail") {
					t.Errorf("the history suggestion %q does not name what it lifted (send_mail)", sg.Text)
				}
				// Without the history (the engine before closed the store)
				// and the tools' examples, as the suggestion ranked it.
				s.opt.Usage = nil
				for _, n := range []string{"price_lookup", "send_mail", "weather", "todo_add", "git_log"} {
					editMeta(t, s.dir, n, func(m map[string]any) { delete(m, "examples") })
				}
				return s
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.prepare(t)
			eng := open(s)
			q := s.req
			q.Explain = true
			a, err := eng.Rank(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(a.Names(), tc.tool) {
				t.Fatalf("%q: %s is offered already (%v): pick a request it misses", q.Query, tc.tool, a.Names())
			}
			te, ok := explained(a, tc.tool)
			if !ok {
				t.Fatalf("%q: %s is not explained", q.Query, tc.tool)
			}
			sg, ok := suggested(te, tc.kind)
			if !ok {
				t.Fatalf("%q: %s (%s: %s) has no %s suggestion: %+v", q.Query, tc.tool, te.Rule, te.Detail, tc.kind, te.Suggest)
			}
			if sg.Text == "" {
				t.Errorf("suggestion %+v without text", sg)
			}
			kinds := SuggestionKinds()
			if !slices.IsSortedFunc(te.Suggest, func(a, b Suggestion) int { return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind) }) {
				t.Errorf("suggestions out of order: %+v", te.Suggest)
			}
			for _, o := range a.Explain.Tools {
				if o.Offered && len(o.Suggest) > 0 {
					t.Errorf("offered %s has suggestions %+v", o.Name, o.Suggest)
				}
			}
			after := tc.apply(t, s, sg, eng)
			b, err := open(after).Rank(ctx, after.req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(b.Names(), tc.tool) {
				t.Errorf("%q: after %q, %s is still left out: offered %v (%s)", q.Query, sg.Text, tc.tool, b.Names(), b.Reason)
			}
		})
	}
}

func anys(words []string) []any {
	out := make([]any, len(words))
	for i, w := range words {
		out[i] = w
	}
	return out
}

// thresholdsFileWith writes the thresholds eng has in effect, with the
// changes sg names made to the file's fields, and returns its path.
func thresholdsFileWith(t *testing.T, eng *Engine, sg Suggestion) string {
	t.Helper()
	_, src := eng.Policy()
	if src.File == nil {
		t.Fatalf("the thresholds in effect (%s) come from no file", src)
	}
	b, err := json.Marshal(src.File)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(sg.Thresholds) == 0 {
		t.Fatalf("threshold suggestion without fields: %+v", sg)
	}
	for _, c := range sg.Thresholds {
		path := strings.Split(c.Field, ".")
		obj := m
		for _, p := range path[:len(path)-1] {
			obj = obj[p].(map[string]any)
		}
		leaf := path[len(path)-1]
		if got, ok := obj[leaf].(float64); !ok && c.From != 0 || ok && got != c.From {
			t.Errorf("%s is %v in the file, the suggestion says %v", c.Field, obj[leaf], c.From)
		}
		obj[leaf] = c.To
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Request.Expect: a tool the asker expected is explained wherever it
// ranks, and one that is not ranked says why (not in the catalog,
// invalid, hidden on this host, not allowed by the profile), each with
// what would bring it in; a client other than the owner learns only that
// there is no such tool among those it may be offered.
func TestExpectExplainsMissingTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := copyCatalog(t, "testdata/newcomer")
	write := func(name, meta string) {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("broken", `{"description": "A tool whose schema does not compile.", "cmd": "cat", "args": {"type": 7}}`)
	write("elsewhere", `{"variants": [{"match": {"os": "plan9"}, "description": "Only on Plan 9.", "cmd": "cat"}]}`)
	eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	allow := []string{"weather", "timezone", "git_summary", "todo"}
	prof := &registry.Profile{Name: "helper", File: "/home/u/.config/ollie/agents/helper.json", AllowTools: &allow}
	expect := []string{"weather", "git_summary", "nosuch", "broken", "elsewhere", "unit_convert"}
	const query = "will it rain in Paris tomorrow"
	a, err := eng.Rank(ctx, Request{Query: query, Expect: expect, Profile: prof, Caller: Caller{Transport: "cli", Client: "owner"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Explain == nil {
		t.Fatal("expect did not ask for the explanation")
	}
	want := map[string]struct {
		rule string
		kind SuggestionKind
	}{
		"nosuch":       {UnknownRule, SuggestDefinition},
		"broken":       {InvalidRule, SuggestDefinition},
		"elsewhere":    {HiddenRule, SuggestDefinition},
		"unit_convert": {ProfileRule, SuggestProfile},
	}
	for _, n := range expect {
		te, ok := explained(a, n)
		if !ok || !te.Expected {
			t.Errorf("expected %s: not explained as expected (%+v)", n, te)
			continue
		}
		switch w, absent := want[n]; {
		case n == "weather":
			if !te.Offered || len(te.Suggest) > 0 {
				t.Errorf("weather: %+v, want offered with nothing to suggest", te)
			}
		case n == "git_summary":
			if te.Offered || te.Rank == 0 || te.Rule == "" || len(te.Suggest) == 0 {
				t.Errorf("git_summary: %+v, want its rank, the rule that left it out and suggestions", te)
			}
		case absent:
			if te.Rule != w.rule || te.Rank != 0 || te.Offered {
				t.Errorf("%s: rule %q (%s), rank %d; want %q", n, te.Rule, te.Detail, te.Rank, w.rule)
			}
			if _, ok := suggested(te, w.kind); !ok {
				t.Errorf("%s: no %s suggestion: %+v", n, w.kind, te.Suggest)
			}
		}
	}
	if te, _ := explained(a, "broken"); !strings.Contains(te.Detail, "args") {
		t.Errorf("broken: %q does not say what is wrong", te.Detail)
	}
	if te, _ := explained(a, "unit_convert"); !strings.Contains(te.Suggest[0].Text, prof.File) {
		t.Errorf("unit_convert: %q does not name the profile's file", te.Suggest[0].Text)
	}
	// git_summary, past the ranking's best, says where it ranks.
	if te, _ := explained(a, "git_summary"); te.Rank <= explainTools && te.Missing != "" || te.Rank > explainTools && !strings.Contains(te.Missing, "ranks") {
		t.Errorf("git_summary ranks %d: missing %q", te.Rank, te.Missing)
	}

	// An MCP client: what it may not see is not there.
	m, err := eng.Rank(ctx, Request{Query: query, Expect: expect, Profile: prof, Caller: Caller{Transport: "mcp", Client: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"nosuch", "broken", "elsewhere", "unit_convert"} {
		te, _ := explained(m, n)
		if te.Rule != UnknownRule || len(te.Suggest) > 0 || te.Detail != strings.ReplaceAll(m.Explain.Tools[len(m.Explain.Tools)-1].Detail, "unit_convert", n) {
			t.Errorf("to an MCP client, %s: %+v; want it told apart from no tool at all", n, te)
		}
	}
	if strings.Contains(mustJSON(t, m.Explain), dir) {
		t.Errorf("an MCP client's explanation names the tools directory: %s", mustJSON(t, m.Explain))
	}

	if _, err := eng.Rank(ctx, Request{Query: query, Expect: make([]string, MaxExpect+1)}); err == nil {
		t.Errorf("%d expected tools taken", MaxExpect+1)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
