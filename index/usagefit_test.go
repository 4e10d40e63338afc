package index

import (
	"context"
	"testing"
)

// Leave-one-out ranks a past request as a new one: none of its entries
// votes, neither its calls of other tools (which would push its tool down
// at full strength) nor another agent's identical request for the same
// tool (which would lift it as no new request's would). The trust, which
// asks how far the rest of the history agrees with an entry, leaves out
// only the entry itself.
func TestUsageLeaveOneOutLeavesTheRequestOut(t *testing.T) {
	uses := bitcoinUses("claude", "web_search", 6)
	uses = append(uses, bitcoinUses("claude", "calculator", 3)...) // a second call for three of the requests
	uses = append(uses, Use{Request: "bitcoin price today", Tool: "web_search", Principal: "gpt", Count: 1})
	ix, u := usageViewOf(t, uses)
	ctx := context.Background()
	for i := range int32(u.n) {
		q := ix.usageQueryOf(ctx, u, u.text[i])
		same := 0 // the other entries of its text
		for j := range int32(u.n) {
			if j != i && u.text[j] == u.text[i] {
				same++
			}
		}
		for _, tc := range []struct {
			out  leftOut
			want int // entries of the same text among the candidates
		}{
			{leftOut{i, true}, 0},
			{leftOut{entry: i}, same},
		} {
			sc := u.getScratch()
			got, left := 0, false
			for _, c := range u.candidates(q, nil, tc.out, sc, usageCommon) {
				if c == i {
					left = true
				}
				if u.text[c] == u.text[i] {
					got++
				}
			}
			u.putScratch(sc)
			if left || got != tc.want {
				t.Errorf("%q → %q, leaving out %+v: the entry among the candidates %v, %d of its text's other entries, want %d",
					u.text[i], u.toolOf(i), tc.out, left, got, tc.want)
			}
		}
	}
}
