package main

import (
	"encoding/json"
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
