package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// prefillWords make the generated tools' texts.
var prefillWords = strings.Fields("archive backup calendar convert delete download email encrypt fetch filter " +
	"format image invoice join list merge monitor parse photo print query resize schedule search send " +
	"share sort sync translate upload video weather zip")

// writePrefillCatalog writes n generated tools (more than bulkMin, so that
// Preload prefills) into dir.
func writePrefillCatalog(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		writeMeta(t, dir, fmt.Sprintf("tool_%04d", i), prefillTool(i, "cat"))
	}
}

// prefillTool is generated tool i's .meta, with cmd.
func prefillTool(i int, cmd string) string {
	w := prefillWords
	desc := fmt.Sprintf("%s the %s and %s of a %s (tool %d).", w[i%len(w)], w[(i/3)%len(w)], w[(i/7)%len(w)], w[(i/11)%len(w)], i)
	return fmt.Sprintf(`{"description":%q,"keywords":[%q],"cmd":%q}`, desc, w[(i*5)%len(w)], cmd)
}

// checkLikeFresh says ix ranks as an index over the same caches (so, for
// a catalog-aware embedder, with the same fitted state) without a prefill.
func checkLikeFresh(t *testing.T, ctx context.Context, ix *Index, cat *registry.Catalog, cache string, wrap func(*hashEmbedder, Options) *Index, queries []string) {
	t.Helper()
	fresh := wrap(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet(), ReadOnlyCache: true})
	if err := fresh.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if fresh.prefilled != 0 {
		t.Fatal("Sync without Preload prefilled")
	}
	if got, want := ix.Stats(), fresh.Stats(); got.Tools != want.Tools || got.Vectors != want.Vectors {
		t.Fatalf("prefilled index %+v, fresh %+v", got, want)
	}
	for _, q := range queries {
		for _, mode := range []Mode{Hybrid, Lexical, Dense} {
			a, err := ix.Rank(ctx, Query{Text: q, K: 10, Mode: mode, NoLastStep: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := fresh.Rank(ctx, Query{Text: q, K: 10, Mode: mode, NoLastStep: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Hits) != len(b.Hits) {
				t.Fatalf("%q %s: %d hits prefilled, %d fresh", q, mode, len(a.Hits), len(b.Hits))
			}
			for i := range a.Hits {
				x, y := a.Hits[i], b.Hits[i]
				if x.Name != y.Name || math.Abs(x.Score-y.Score) > 1e-9 || math.Abs(x.Lexical-y.Lexical) > 1e-9 {
					t.Fatalf("%q %s, hit %d: prefilled %+v, fresh %+v", q, mode, i, x, y)
				}
			}
		}
	}
}

// A start whose index was prefilled from the caches answers as one built
// from the catalog afresh, with the catalog unchanged and after edits of
// every kind the update must take in; an unchanged catalog tokenizes and
// embeds nothing.
func TestPrefillAnswersAsAFreshBuild(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("filler words about nothing in particular. ", 60) // past maxPromptChars
	edits := []struct {
		name string
		edit func(t *testing.T, dir string)
	}{
		{"unchanged", func(*testing.T, string) {}},
		{"edited", func(t *testing.T, dir string) {
			writeMeta(t, dir, "tool_0003", `{"description":"Zanzibar ferry timetable lookup.","cmd":"cat"}`)
			writeMeta(t, dir, "tool_0004", `{"description":"Long prompt.","cmd":"cat","prompt":"`+long+` quetzalfeather"}`)
			writeMeta(t, dir, "tool_0005", prefillTool(5, "tac")) // the same document
			if err := os.Remove(filepath.Join(dir, "tool_0006.meta")); err != nil {
				t.Fatal(err)
			}
			writeMeta(t, dir, "new_tool", `{"description":"Brand new okapi tracker.","cmd":"cat"}`)
		}},
	}
	queries := []string{"zanzibar ferry", "quetzalfeather", "okapi", "resize the photo", "archive backup",
		"convert video", "weather email", "tool 6", "send invoice", "long prompt filler"}
	for _, aware := range []bool{false, true} {
		for _, tc := range edits {
			t.Run(fmt.Sprintf("%s/catalogAware=%v", tc.name, aware), func(t *testing.T) {
				dir, cache := t.TempDir(), t.TempDir()
				writePrefillCatalog(t, dir, 3*bulkMin/2)
				writeMeta(t, dir, "tool_0004", `{"description":"Long prompt.","cmd":"cat","prompt":"`+long+`"}`)
				wrap := func(e *hashEmbedder, o Options) *Index {
					if aware {
						return New(awareEmbedder{e}, o)
					}
					return New(e, o)
				}
				if err := wrap(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()}).Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
					t.Fatal(err)
				}
				tc.edit(t, dir)
				cat := loadReg(t, dir).Catalog()

				emb := newHashEmbedder(64)
				ix := wrap(emb, Options{CacheDir: cache, Logger: quiet()})
				ix.Preload(ctx, cat.Dirs)
				if ix.pre == nil {
					t.Fatal("Preload did not prefill")
				}
				if err := ix.Sync(ctx, cat); err != nil {
					t.Fatal(err)
				}
				if ix.prefilled != 1 {
					t.Fatal("the update did not adopt the prefilled view")
				}
				checkLikeFresh(t, ctx, ix, cat, cache, wrap, queries)
				for h := range ix.v.st.ids() {
					if q, _ := ix.v.st.quant(h); q != nil {
						t.Fatal("the store keeps the int8 rows the view took")
					}
				}
				if tc.name == "unchanged" && (ix.tokenized != 0 || emb.st.docTexts.Load() != 0) {
					t.Errorf("an unchanged catalog tokenized %d documents and embedded %d", ix.tokenized, emb.st.docTexts.Load())
				}
				// The memo's keys follow the catalog: a tool whose definition
				// changed but not its document (tool_0005: another cmd) is
				// saved under its new Hash.
				if tc.name == "edited" {
					t5, _ := cat.Get("tool_0005")
					ix.mu.RLock()
					s := ix.v.slots[ix.v.byName["tool_0005"]]
					ix.mu.RUnlock()
					if s.tool != t5.Hash {
						t.Errorf("tool_0005's slot keeps the Hash %s, the catalog's is %s", s.tool, t5.Hash)
					}
				}
			})
		}
	}
}

// A lexical cache whose entries do not tokenize as the catalog's
// documents do is not used: the prefilled view is dropped with it, and
// the index is what an update without them makes.
func TestPrefillDroppedWhenTheLexicalCacheDisagrees(t *testing.T) {
	ctx := context.Background()
	dir, cache := t.TempDir(), t.TempDir()
	writePrefillCatalog(t, dir, 3*bulkMin/2)
	cat := loadReg(t, dir).Catalog()
	if err := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()}).Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet(), ReadOnlyCache: true})
	ix.Preload(ctx, cat.Dirs)
	if ix.pre == nil {
		t.Fatal("Preload did not prefill")
	}
	// The first tool's entry, as if tokenizing had changed since: its
	// first term's frequency doubled (entry: length, term count, then
	// term index and frequency per term).
	d := newDocument(cat.Tools[0])
	off, ok := ix.lexc.at[d.lexKey]
	if !ok {
		t.Fatal("no cached entry for the first tool")
	}
	tf := off + 4 + 4 + 4
	b := ix.lexc.body[tf : tf+4]
	binary.LittleEndian.PutUint32(b, math.Float32bits(2*math.Float32frombits(binary.LittleEndian.Uint32(b))))
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if ix.prefilled != 0 {
		t.Fatal("the prefilled view was adopted over a disagreeing lexical cache")
	}
	if ix.tokenized != len(cat.Tools) {
		t.Errorf("%d documents tokenized, want all %d (the cache is not used)", ix.tokenized, len(cat.Tools))
	}
	fresh := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet()})
	if err := fresh.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"archive backup", "resize the photo", "tool 7"} {
		a, _ := ix.Rank(ctx, Query{Text: q, K: 5, Mode: Lexical})
		b, _ := fresh.Rank(ctx, Query{Text: q, K: 5, Mode: Lexical})
		for i := range b.Hits {
			if i >= len(a.Hits) || a.Hits[i].Name != b.Hits[i].Name || math.Abs(a.Hits[i].Lexical-b.Hits[i].Lexical) > 1e-9 {
				t.Fatalf("%q: %+v, tokenized afresh %+v", q, a.Hits, b.Hits)
			}
		}
	}
}
