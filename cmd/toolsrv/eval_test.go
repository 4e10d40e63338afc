package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalOnASmallCorpus(t *testing.T) {
	root := t.TempDir()
	corpus := filepath.Join(root, "mini")
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		t.Fatal(err)
	}
	tools := rankFixture(t)
	if err := os.Symlink(tools, filepath.Join(corpus, "tools")); err != nil {
		t.Fatal(err)
	}
	queries := `{"id":"1","query":"will it rain tomorrow in Oslo","relevant":["get_weather"]}
{"id":"2","query":"mail the report to Alice","relevant":["send_email"]}
{"id":"3","query":"what is 17 times 23","relevant":["calculator"]}
`
	os.WriteFile(filepath.Join(corpus, "queries.jsonl"), []byte(queries), 0o644)

	code, out, errs := runCLIWith(t, "", nil, "eval", "--corpus", root, "--mode", "all", "--no-cache", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res []evalResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(res) != 3 || res[0].Mode != "bm25" || res[2].Mode != "hybrid" {
		t.Fatalf("modes: %+v", res)
	}
	for _, r := range res {
		if len(r.Corpora) != 1 || r.Corpora[0].Corpus != "mini" || r.Corpora[0].Queries != 3 {
			t.Fatalf("%s: %+v", r.Mode, r.Corpora)
		}
		m := r.Macro
		if m.R10 != 1 || m.R1 < 0 || m.R1 > m.R5 || m.MRR <= 0 || m.MRR > 1 || m.NDCG10 > 1 {
			t.Fatalf("%s: implausible metrics %+v", r.Mode, m)
		}
	}
	if res[0].Macro.R1 < 2.0/3 {
		t.Fatalf("bm25 should find at least 2 of 3: %+v", res[0].Macro)
	}

	code, out, _ = runCLIWith(t, "", nil, "eval", "--corpus", corpus, "--no-cache")
	if code != 0 || !strings.Contains(out, "mode hybrid") || !strings.Contains(out, "macro") || !strings.Contains(out, "NDCG@10") {
		t.Fatalf("table:\n%s", out)
	}
	if code, _, _ := runCLIWith(t, "", nil, "eval"); code != 2 {
		t.Fatalf("eval without --corpus: exit %d, want 2", code)
	}
	if code, _, errs := runCLIWith(t, "", nil, "eval", "--corpus", tools); code != 1 || !strings.Contains(errs, "not a corpus") {
		t.Fatalf("a non-corpus: exit %d, %s", code, errs)
	}
}

// eval --usage ranks each corpus with the lines naming its tools (a line
// naming a tool of no corpus is left out), and the history moves the
// figures: a word no tool has ("btc") is learnt from the past requests.
func TestEvalWithUsage(t *testing.T) {
	root := t.TempDir()
	corpus := filepath.Join(root, "mini")
	tools := filepath.Join(corpus, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, d := range map[string]string{
		"price_lookup": "Look up the current price of an asset.",
		"send_mail":    "Send an email message to someone.",
		"weather":      "Current weather and forecast for a city.",
		"todo_add":     "Add an item to the todo list.",
		"git_log":      "Show the commit history of a repository.",
	} {
		os.WriteFile(filepath.Join(tools, n+".meta"), []byte(`{"description":"`+d+`","cmd":"cat"}`), 0o644)
	}
	os.WriteFile(filepath.Join(corpus, "queries.jsonl"), []byte(`{"id":"1","query":"how is my btc stash doing","relevant":["price_lookup"]}
`), 0o644)
	var hist strings.Builder
	for tool, reqs := range map[string][]string{
		"price_lookup": {"what is btc at", "btc now", "my btc stash", "how much is btc", "btc today", "check btc", "btc value", "is btc up"},
		"send_mail":    {"mail bob the report", "write to alice", "email the team", "drop a note to carol", "message my boss", "send the invoice to dave"},
		"weather":      {"will it rain", "do i need an umbrella", "is it cold outside", "how hot is it in rome", "snow tomorrow?", "sunny this weekend?"},
		"todo_add":     {"remind me to buy milk", "note: call mum", "put laundry on my list", "i must pay rent", "add dentist to my tasks", "remember the keys"},
		"git_log":      {"what did i change yesterday", "recent commits", "who touched this last", "history of main", "last five changes", "when did we release"},
		"elsewhere":    {"a tool of another catalog"},
	} {
		for _, r := range reqs {
			fmt.Fprintf(&hist, `{"request":%q,"tool":%q}`+"\n", r, tool)
		}
	}
	file := filepath.Join(root, "usage.jsonl")
	os.WriteFile(file, []byte(hist.String()), 0o644)

	r1 := func(args ...string) (float64, string) {
		code, out, errs := runCLIWith(t, "", nil, append([]string{"eval", "--corpus", root, "--no-cache", "--no-offer", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("eval %v: exit %d: %s", args, code, errs)
		}
		var res []evalResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return res[0].Macro.R1, errs
	}
	without, _ := r1()
	with, errs := r1("--usage", file)
	if !strings.Contains(errs, "corpus mini: usage history of 32 entries") {
		t.Errorf("want the history's 32 entries of the corpus's tools reported, got %q", errs)
	}
	if without != 0 || with != 1 {
		t.Errorf("Recall@1 without usage %v (want 0), with %v (want 1)", without, with)
	}

	os.WriteFile(file, []byte(hist.String()+"{not json\n"), 0o644)
	if code, _, errs := runCLIWith(t, "", nil, "eval", "--corpus", root, "--no-cache", "--usage", file); code != 1 || !strings.Contains(errs, "line 34") {
		t.Errorf("a bad usage file: exit %d, %q; want 1 and the line named", code, errs)
	}
}
