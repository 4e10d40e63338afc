package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// usageIndex is an index of testdata/tools whose usage signal embeds with
// the test's hash embedder.
func usageIndex(t testing.TB) *Index {
	t.Helper()
	emb := newHashEmbedder(64)
	ix := New(emb, Options{NoCache: true, Logger: quiet(), UsageEmbedder: emb})
	if err := ix.Sync(context.Background(), loadReg(t, usageCatalog(t)).Catalog()); err != nil {
		t.Fatal(err)
	}
	return ix
}

// usageViewOf is usageIndex with uses set as its history, and the view
// they make.
func usageViewOf(t testing.TB, uses []Use) (*Index, *usageView) {
	t.Helper()
	ix := usageIndex(t)
	if _, err := ix.SetUsage(context.Background(), uses); err != nil {
		t.Fatal(err)
	}
	return ix, ix.usage.Load()
}

// usageCatalog is testdata/tools and 60 fillers, in a new directory: more
// tools, so that five of them are a small share of the catalog (Recall@5,
// which the weight is chosen by, means something).
func usageCatalog(t testing.TB) string {
	t.Helper()
	dir := copyTools(t)
	for i := 0; i < 60; i++ {
		writeMeta(t, dir, fmt.Sprintf("filler_%02d", i), fmt.Sprintf(`{"description":"Filler tool %d: handles widgets of kind %d and gadgets of class %d.","cmd":"cat"}`, i, i%7, i%11))
	}
	return dir
}

// bitcoinUses are past requests about bitcoin (a word no tool has) that an
// agent answered with tool.
func bitcoinUses(agent, tool string, n int) []Use {
	phr := []string{"what is a bitcoin worth in dollars", "bitcoin price today", "value of my bitcoin holdings",
		"how many euros is one bitcoin", "bitcoin to usd", "check the bitcoin rate", "bitcoin exchange value",
		"price of bitcoin now", "convert bitcoin to pounds", "what does bitcoin trade at"}
	var out []Use
	for i := 0; i < n; i++ {
		r := phr[i%len(phr)]
		if i >= len(phr) {
			r = fmt.Sprintf("%s (%d)", r, i)
		}
		out = append(out, Use{Request: r, Tool: tool, Principal: agent, Count: 1})
	}
	return out
}

// owned is uses as the owner's (each believed in full: what the tests of
// the signal's workings, not of whom it believes, take).
func owned(uses []Use) []Use {
	out := make([]Use, len(uses))
	for i, u := range uses {
		u.Role = RoleOwner
		out[i] = u
	}
	return out
}

func top(t *testing.T, ix *Index, q string) []string {
	t.Helper()
	r, err := ix.Rank(context.Background(), Query{Text: q, K: 5})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Name)
	}
	return out
}

// With no usage, rankings are exactly what they are without the signal.
func TestUsageEmptyIsIdentical(t *testing.T) {
	ix := usageIndex(t)
	ctx := context.Background()
	for _, uses := range [][]Use{nil, {}, {{Request: "   ", Tool: "calculator", Count: 1}}} {
		if _, err := ix.SetUsage(ctx, uses); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"what is the weather in Paris", "commit my changes", "bitcoin price today"} {
			a, _ := ix.Rank(ctx, Query{Text: q, K: 10})
			b, _ := ix.Rank(ctx, Query{Text: q, K: 10, NoUsage: true})
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%d uses, %q: %+v\nwithout usage: %+v", len(uses), q, a, b)
			}
		}
	}
}

// Past requests teach words no tool has ("bitcoin" → web_search, where
// this installation's agents look it up);
// failed calls teach nothing; a removed tool's usage does nothing.
func TestUsageTeachesAndIsBounded(t *testing.T) {
	ix := usageIndex(t)
	ctx := context.Background()
	const q = "how much is a bitcoin worth today"
	before := top(t, ix, q)
	var taught []Use
	for _, r := range []string{"how is my bitcoin doing", "bitcoin worth", "is bitcoin up", "bitcoin today",
		"where is bitcoin at", "bitcoin now", "my bitcoin", "bitcoin this morning", "bitcoin tonight", "hows bitcoin",
		"bitcoin lately", "bitcoin this week", "bitcoin at noon", "bitcoin status", "bitcoin check"} {
		for _, a := range []string{"claude", "codex"} {
			taught = append(taught, Use{Request: r, Tool: "web_search", Principal: a, Count: 1})
		}
	}
	fit, err := ix.SetUsage(ctx, owned(taught))
	if err != nil {
		t.Fatal(err)
	}
	if got := top(t, ix, q); len(got) == 0 || got[0] != "web_search" {
		t.Errorf("after 30 bitcoin requests answered by web_search: %v (before %v), fit %+v", got, before, fit)
	}
	if fit.Weight == 0 {
		t.Errorf("fit %+v: no weight for a clear signal", fit)
	}

	failed := bitcoinUses("claude", "currency_convert", 30)
	for i := range failed {
		failed[i].Failed = failed[i].Count
	}
	if _, err := ix.SetUsage(ctx, failed); err != nil {
		t.Fatal(err)
	}
	if got := top(t, ix, q); !reflect.DeepEqual(got, before) {
		t.Errorf("failed calls moved the ranking: %v, want %v", got, before)
	}

	if _, err := ix.SetUsage(ctx, bitcoinUses("claude", "crypto_wallet", 30)); err != nil {
		t.Fatal(err)
	}
	for _, n := range top(t, ix, q) {
		if n == "crypto_wallet" {
			t.Errorf("a tool the catalog lacks was ranked: %v", top(t, ix, q))
		}
	}
}

// One agent's flood of false records cannot outvote honest records of
// several other agents: each agent's requests vote among themselves, and
// the weight is chosen on a sample the agents share in turn.
func TestUsageFloodFromOneAgent(t *testing.T) {
	ix := usageIndex(t)
	ctx := context.Background()
	const q = "bitcoin price today in dollars"
	var honest []Use
	for _, a := range []string{"alice", "bob", "carol"} {
		honest = append(honest, bitcoinUses(a, "currency_convert", 10)...)
	}
	if _, err := ix.SetUsage(ctx, honest); err != nil {
		t.Fatal(err)
	}
	if got := top(t, ix, q); got[0] != "currency_convert" {
		t.Fatalf("with honest records only: %v", got)
	}
	flood := append(honest, bitcoinUses("mallory", "send_email", 64)...)
	if _, err := ix.SetUsage(ctx, flood); err != nil {
		t.Fatal(err)
	}
	if got := top(t, ix, q); got[0] != "currency_convert" {
		t.Errorf("a flood of 64 false records from one agent against 30 honest ones: %v", got)
	}
}

// topByScore returns the n best ids, as a full sort would, for sizes
// around n and scores with ties.
func TestTopByScore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ size, n, levels int }{
		{0, 3, 5}, {3, 3, 5}, {4, 3, 5}, {100, 1, 3}, {100, 10, 1}, {1000, 512, 7}, {1000, 999, 1000}, {5000, 64, 50},
	} {
		score := make([]float32, c.size)
		ids := make([]int32, c.size)
		for i := range ids {
			ids[i] = int32(i)
			score[i] = float32(r.IntN(c.levels))
		}
		r.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
		want := append([]int32(nil), ids...)
		sort.Slice(want, func(a, b int) bool {
			if score[want[a]] != score[want[b]] {
				return score[want[a]] > score[want[b]]
			}
			return want[a] < want[b]
		})
		want = want[:min(c.n, len(want))]
		got := append([]int32(nil), topByScore(ids, score, c.n)...)
		sort.Slice(got, func(a, b int) bool {
			if score[got[a]] != score[got[b]] {
				return score[got[a]] > score[got[b]]
			}
			return got[a] < got[b]
		})
		if !slices.Equal(got, want) {
			t.Errorf("size %d, n %d, %d levels: got %v, want %v", c.size, c.n, c.levels, got, want)
		}
	}
}

// TestClearGain: a weight is used only when the requests it helped
// outnumber those it hurt by one standard deviation of a coin's toss and
// by at least usageMinNet.
func TestClearGain(t *testing.T) {
	for _, tc := range []struct {
		helped, hurt float64
		want         bool
	}{
		{0, 0, false},
		{1, 0, false}, // one or two requests are not evidence
		{2, 0, false},
		{3, 0, true},
		{4, 1, true},   // 3 ≥ √5
		{6, 2, true},   // 4 ≥ √8
		{10, 6, true},  // 4 ≥ √16
		{10, 7, false}, // 3 < √17
		{20, 20, false},
		{3, 5, false},
	} {
		if got := clearGain(tc.helped, tc.hurt); got != tc.want {
			t.Errorf("clearGain(%v, %v) = %v, want %v", tc.helped, tc.hurt, got, tc.want)
		}
	}
}
