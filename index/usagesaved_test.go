package index

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// savedUsageIndex is usageIndex's catalog with the usage view saved in
// path.
func savedUsageIndex(t *testing.T, dir, path string) *Index {
	t.Helper()
	emb := newHashEmbedder(64)
	ix := New(emb, Options{NoCache: true, Logger: quiet(), UsageEmbedder: emb, UsageViewPath: path})
	if err := ix.Sync(context.Background(), loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	return ix
}

// savedHistory is a history that earns a weight: bitcoin requests
// answered by web_search, by two agents, and a few by other tools.
func savedHistory() []Use {
	uses := append(bitcoinUses("claude", "web_search", 30), bitcoinUses("codex", "web_search", 30)...)
	uses = append(uses, Use{Request: "convert ten dollars to euros", Tool: "calculator", Agent: "claude", Count: 3, Failed: 1},
		Use{Request: "tell me a joke", Tool: "", Agent: "codex", Count: 1})
	return uses
}

// A later index of the same catalog takes the saved view of the same
// entries (in any order) instead of building it, and ranks exactly as the
// index that built it; other entries, a damaged or foreign file, are
// built again; no entries remove the file.
func TestUsageViewSaved(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	path := filepath.Join(t.TempDir(), "usage.db.view")
	uses := savedHistory()

	built := savedUsageIndex(t, dir, path)
	fit, err := built.SetUsage(ctx, uses)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Weight == 0 || built.usage.Load().text == nil {
		t.Fatalf("the first index should build a view with a weight: %+v", fit)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved view: %v, %v", fi, err)
	}

	shuffled := append([]Use(nil), uses...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	loaded := savedUsageIndex(t, dir, path)
	fit2, err := loaded.SetUsage(ctx, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.usage.Load().text != nil {
		t.Fatal("the second index built the view again instead of taking the saved one")
	}
	if fit2 != fit {
		t.Errorf("saved fit %+v, built %+v", fit2, fit)
	}
	for _, q := range []string{"how much is a bitcoin worth today", "bitcoin", "convert dollars to euros", "tell me a joke", "what is the weather in Paris"} {
		a, _ := built.Rank(ctx, Query{Text: q, K: 10})
		b, _ := loaded.Rank(ctx, Query{Text: q, K: 10})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: built view %+v\nsaved view %+v", q, a, b)
		}
	}

	// Other entries: built again, and saved (the first save of an index).
	other := savedUsageIndex(t, dir, path)
	if _, err := other.SetUsage(ctx, uses[1:]); err != nil {
		t.Fatal(err)
	}
	if other.usage.Load().text == nil {
		t.Error("a view saved for other entries was used")
	}

	// A damaged file is a cache miss, whatever the damage.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := other.usageViewKey(uses[1:])
	if _, err := decodeUsageView(good, key); err != nil {
		t.Fatalf("the saved view does not decode: %v", err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 400; i++ {
		b := append([]byte(nil), good...)
		switch i % 3 {
		case 0:
			b = b[:rng.IntN(len(b))]
		case 1:
			b[len(usageViewMagic)+32+rng.IntN(len(b)-len(usageViewMagic)-32)] ^= byte(1 + rng.IntN(255))
		case 2:
			b = append(b, 0)
		}
		if u, err := decodeUsageView(b, key); err == nil {
			// A flipped weight or scale decodes; then it must still be a
			// consistent view (rankable).
			u.evidence(usageQuery{words: []termWeight{{0, 1}}}, nil, -1)
		}
	}
	if _, err := decodeUsageView(good, [32]byte{1}); !errors.Is(err, errUsageView) {
		t.Errorf("another key's view decoded: %v", err)
	}

	// Saved again within a minute by the same index: not saved, and the
	// file, which no longer matches, goes.
	if _, err := other.SetUsage(ctx, uses[2:]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a saved view of entries no longer in effect is still there: %v", err)
	}

	// No entries: nothing to save, and the old file goes.
	empty := savedUsageIndex(t, dir, path)
	if _, err := empty.SetUsage(ctx, uses); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if _, err := empty.SetUsage(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after an empty history the saved view is still there: %v", err)
	}
}
