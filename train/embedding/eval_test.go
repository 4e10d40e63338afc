package embedding

import (
	"testing"
)

// The untouched split is FNV-32a of the query id mod 3; these values were
// computed independently and must never change.
func TestHeldoutSplitFixed(t *testing.T) {
	for id, want := range map[string]bool{
		"apibank-000002": false, "apibank-000003": true, "apibank-000004": false,
		"apibank-000005": false, "apibank-000006": true, "x": true, "q1": true, "q2": false,
	} {
		if got := heldout(id); got != want {
			t.Errorf("heldout(%q) = %v, want %v", id, got, want)
		}
	}
}

// judge ranks higher scores first and ties by name before eval.Score, so a
// tie never depends on the catalog's order.
func TestJudgeTiesByName(t *testing.T) {
	names := []string{"c", "b", "a", "d"}
	scores := []float64{1, 1, 1, 2} // ranking: d, a, b, c
	if m := judge(scores, names, []string{"a"}); m.MRR != 0.5 || m.R1 != 0 || m.R5 != 1 || m.Queries != 1 {
		t.Fatalf("judge = %+v, want a at rank 2", m)
	}
	// A relevant name the ranking lacks still counts in recall's denominator.
	if m := judge(scores, names, []string{"d", "missing"}); m.R1 != 0.5 || m.MRR != 1 {
		t.Fatalf("judge = %+v, want R@1 0.5 and MRR 1", m)
	}
}
