package index

import (
	"context"
	"testing"
)

// An entry whose near requests all went to another tool (a call credited
// to the wrong tool) is trusted little, and its vote counts as much less;
// entries that agree with their neighbours, a tool's only request and a
// request answered with no tool keep their full vote.
func TestUsageTrust(t *testing.T) {
	uses := bitcoinUses("claude", "web_search", 8)
	uses = append(uses,
		Use{Request: "bitcoin value in dollars today", Tool: "calculator", Principal: "claude", Count: 1}, // wrong
		Use{Request: "commit my staged changes", Tool: "git_commit", Principal: "claude", Count: 1},       // alone
		Use{Request: "tell me a joke", Tool: "", Principal: "claude", Count: 1})
	ix, u := usageViewOf(t, uses)
	ctx := context.Background()
	if len(u.trust) != u.n {
		t.Fatalf("%d trusts for %d entries", len(u.trust), u.n)
	}
	full := 0
	for i := range u.n {
		req, tool, tr := u.text[i], u.toolOf(int32(i)), u.trust[i]
		switch {
		case tr <= 0 || tr > 1:
			t.Errorf("%q → %q: trust %v, outside (0, 1]", req, tool, tr)
		case tool == "calculator" && tr > 0.5:
			t.Errorf("the call credited to the wrong tool (%q → %q): trust %v, want ≤ 0.5", req, tool, tr)
		case (tool == "git_commit" || tool == "") && tr != 1:
			t.Errorf("%q → %q (no neighbour, or no tool): trust %v, want 1", req, tool, tr)
		case tool == "web_search" && tr < 0.5:
			// (the wrong call's nearest neighbours lose a little too)
			t.Errorf("%q → %q: trust %v, want ≥ 0.5", req, tool, tr)
		case tool == "web_search" && tr == 1:
			full++
		}
	}
	if full < 5 {
		t.Errorf("%d of the 8 calls that agree keep their full vote, want most", full)
	}
	// The wrong entry's vote: its share with trust below its share in full.
	q := ix.usageQueryOf(ctx, u, "bitcoin worth in dollars today")
	trusted, _ := u.evidence(q, nil, -1)
	trust := u.trust
	u.trust = nil // every vote in full
	whole, _ := u.evidence(q, nil, -1)
	u.trust = trust
	if trusted.p["calculator"] >= whole.p["calculator"]*0.6 || trusted.p["web_search"] <= whole.p["web_search"] {
		t.Errorf("evidence with trust %v, in full %v: want calculator's share cut and web_search's raised", trusted, whole)
	}
}
