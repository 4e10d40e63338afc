package thresholds

import (
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/learn"
)

func TestScoresWarning(t *testing.T) {
	for _, tc := range []struct {
		tuned, used, want string
	}{
		{"", "", ""},
		{"learn/v1-aa", "learn/v1-aa", ""},
		{"", "learn/v1-aa", "fixed-fusion scores"},
		{"learn/v1-aa", "", "rankings use the fixed fusion"},
		{"learn/v1-aa", "learn/v1-bb", "not learn/v1-bb"},
	} {
		w := Source{File: &File{Scores: tc.tuned}}.ScoresWarning(tc.used)
		if (w == "") != (tc.want == "") || !strings.Contains(w, tc.want) {
			t.Errorf("tuned %q, used %q: %q, want %q", tc.tuned, tc.used, w, tc.want)
		}
	}
	if w := (Source{}).ScoresWarning("learn/v1-aa"); w != "" {
		t.Errorf("no file: %q", w)
	}
	// the shipped defaults were tuned on the shipped model (make learn
	// retrains both)
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	f, exact, ok := Shipped(emb.ID())
	m, err := learn.Default()
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !exact || f.Version != Version || f.Scores != m.ID {
		t.Fatalf("shipped defaults tuned on %q, shipped model %s (exact %v, ok %v): run make learn", f.Scores, m.ID, exact, ok)
	}
}
