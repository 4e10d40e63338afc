package index

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// sameLexical fails unless two views hold the same lexical index (term ids
// and posting order included) and the same quantized rows.
func sameLexical(t *testing.T, what string, a, b *view) {
	t.Helper()
	la, lb := a.lex, b.lex
	check := func(field string, equal bool) {
		t.Helper()
		if !equal {
			t.Errorf("%s: %s differs", what, field)
		}
	}
	check("terms", slices.Equal(la.terms, lb.terms))
	check("postings", slices.EqualFunc(la.postings, lb.postings, func(x, y []posting) bool { return slices.Equal(x, y) }))
	check("docLen", slices.Equal(la.docLen, lb.docLen))
	eq32 := func(x, y []int32) bool { return slices.Equal(x, y) }
	check("docTerms", slices.EqualFunc(la.docTerms, lb.docTerms, eq32))
	check("docPos", slices.EqualFunc(la.docPos, lb.docPos, eq32))
	check("totalLen", la.totalLen == lb.totalLen && la.n == lb.n)
	check("short terms", slices.EqualFunc(a.short.bySlot, b.short.bySlot, func(x, y []uint32) bool { return slices.Equal(x, y) }))
	check("4-bit rows", a.q4.Equal(b.q4))
	check("8-bit rows", slices.Equal(a.q8, b.q8) && slices.Equal(a.q8scale, b.q8scale))
	check("slots", slices.EqualFunc(a.slots, b.slots, func(x, y slot) bool {
		return x.name == y.name && x.hash == y.hash && x.lex == y.lex && x.live == y.live && x.vec == y.vec
	}))
}

// manyTools writes n tools (enough for upsertAll's bulk path when n ≥
// bulkMin) with arguments, keywords and a long prompt.
func manyTools(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		writeMeta(t, dir, fmt.Sprintf("tool_%d", i), fmt.Sprintf(
			`{"description":"Tool number %d converts files of kind k%d to other kinds","keywords":["k%d","convert"],"cmd":"cat",`+
				`"args":{"type":"object","properties":{"inputPath":{"type":"string","description":"the file to read"}}},"prompt":%q}`,
			i, i%37, i%11, strings.Repeat(fmt.Sprintf("Use it with care, case %d. ", i%5), 120)))
	}
}

func TestLexicalCache(t *testing.T) {
	for _, n := range []int{0, bulkMin + 88} { // the fixtures alone, and the bulk path
		t.Run(fmt.Sprintf("extra=%d", n), func(t *testing.T) {
			ctx := context.Background()
			dir, cache := copyTools(t), t.TempDir()
			manyTools(t, dir, n)
			cat := loadReg(t, dir).Catalog()
			total := len(cat.Tools)
			open := func(c string) *Index {
				ix := New(newHashEmbedder(64), Options{CacheDir: c, Logger: quiet()})
				if err := ix.Sync(ctx, cat); err != nil {
					t.Fatal(err)
				}
				return ix
			}
			// tokenizing is an index over the same vector cache without the
			// lexical one (a restart normalizes the stored vectors again,
			// which may change a quantized row's last bit).
			tokenizing := func() *Index {
				t.Helper()
				c := t.TempDir()
				ents, _ := os.ReadDir(cache)
				for _, e := range ents {
					if b, err := os.ReadFile(filepath.Join(cache, e.Name())); err == nil && filepath.Ext(e.Name()) == ".gob" {
						os.WriteFile(filepath.Join(c, e.Name()), b, 0o644)
					}
				}
				ix := open(c)
				if ix.tokenized != len(cat.Tools) {
					t.Fatalf("the reference tokenized %d documents, want %d", ix.tokenized, len(cat.Tools))
				}
				return ix
			}
			first := open(cache)
			if first.tokenized != total {
				t.Fatalf("first start tokenized %d documents, want %d", first.tokenized, total)
			}
			lex := lexPath(first.path)
			if _, err := os.Stat(lex); err != nil {
				t.Fatalf("no lexical cache written: %v", err)
			}

			// A restart reads every entry and builds the same index.
			again := open(cache)
			if again.tokenized != 0 || again.recalled != total {
				t.Fatalf("restart tokenized %d documents and recalled %d, want 0 and %d", again.tokenized, again.recalled, total)
			}
			fresh := tokenizing()
			sameLexical(t, "restart", fresh.v, again.v)
			q := Query{Text: "convert files of kind k3", K: 5}
			r1, _ := fresh.Rank(ctx, q)
			r2, _ := again.Rank(ctx, q)
			if fmt.Sprint(r1.Hits) != fmt.Sprint(r2.Hits) {
				t.Fatalf("rankings differ:\n%v\n%v", r1.Hits, r2.Hits)
			}

			// One edit tokenizes one document, and the file is rewritten
			// with it.
			writeMeta(t, dir, "get_weather", `{"description":"Weather report and seven day outlook for any town.","cmd":"cat"}`)
			cat = loadReg(t, dir).Catalog()
			edited := open(cache)
			if edited.tokenized != 1 || edited.recalled != total-1 {
				t.Fatalf("after one edit tokenized %d documents and recalled %d, want 1 and %d", edited.tokenized, edited.recalled, total-1)
			}
			sameLexical(t, "after an edit", tokenizing().v, edited.v)
			if ix := open(cache); ix.tokenized != 0 {
				t.Fatalf("after the edit was saved, a restart tokenized %d documents, want 0", ix.tokenized)
			}

			// A corrupt file is ignored and replaced.
			b, err := os.ReadFile(lex)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-3] ^= 0x40
			if err := os.WriteFile(lex, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if ix := open(cache); ix.tokenized != total {
				t.Fatalf("with a corrupt file tokenized %d documents, want %d", ix.tokenized, total)
			}
			if ix := open(cache); ix.tokenized != 0 {
				t.Fatalf("the corrupt file was not replaced: a restart tokenized %d documents", ix.tokenized)
			}
		})
	}
}

// TestLexicalCacheDisagreeing: a file whose entries do not match what
// tokenizing gives (an analysis changed without the format saying so) is
// found out by its first entries and ignored.
func TestLexicalCacheDisagreeing(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	cat := loadReg(t, dir).Catalog()
	ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	// Rewrite the file, checksum and all, with the first document's first
	// term counting double.
	v := ix.v
	id := v.lex.docTerms[0][0]
	p := &v.lex.postings[id][v.lex.docPos[0][0]]
	p.tf *= 2
	if err := writeLexCache(lexPath(ix.path), v, ix.program); err != nil {
		t.Fatal(err)
	}
	p.tf /= 2

	again := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	if err := again.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if again.tokenized != len(cat.Tools) {
		t.Fatalf("tokenized %d documents, want all %d: the disagreeing file was used", again.tokenized, len(cat.Tools))
	}
	sameLexical(t, "disagreeing file", ix.v, again.v)
}

// TestLexKeySeparatesFields: documents whose embedded texts are the same
// (a field's text moved into another, or a prompt that differs past the
// embedded part) have different lexical keys.
func TestLexKeySeparatesFields(t *testing.T) {
	long := strings.Repeat("words ", maxPromptChars/6+10)
	pairs := [][2]document{
		{{fields: []field{{"a", 3}, {"b\nKeywords: c", 2}, {"", 3}, {"", 1}, {"", 1}}},
			{fields: []field{{"a", 3}, {"b", 2}, {"c", 3}, {"", 1}, {"", 1}}}},
		{{fields: []field{{"a", 3}, {"b", 2}, {"", 3}, {"", 1}, {long + "tail one", 1}}},
			{fields: []field{{"a", 3}, {"b", 2}, {"", 3}, {"", 1}, {long + "tail two", 1}}}},
	}
	for i, p := range pairs {
		var s1, s2 []byte
		if string(p[0].appendText(s1)) != string(p[1].appendText(s2)) {
			t.Fatalf("pair %d: the embedded texts differ; the case tests nothing", i)
		}
		k := func(d document) string { return string(d.appendFields(nil)) }
		if k(p[0]) == k(p[1]) {
			t.Errorf("pair %d: the same lexical key input for different fields", i)
		}
	}
}

// TestDocumentMemo: the memo is used only by the program that wrote it,
// and one whose documents are not what making them gives is dropped.
func TestDocumentMemo(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	cat := loadReg(t, dir).Catalog()
	total := len(cat.Tools)
	open := func() *Index {
		t.Helper()
		ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
		if err := ix.Sync(ctx, cat); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	first := open()
	want := first.v
	rewrite := func(program string, change func(v *view)) {
		t.Helper()
		v := first.v
		saved := slices.Clone(v.slots)
		change(v)
		if err := writeLexCache(lexPath(first.path), v, program); err != nil {
			t.Fatal(err)
		}
		copy(v.slots, saved)
	}
	cases := []struct {
		name    string
		program string
		change  func(v *view)
	}{
		{"another program", "some other toolsrv", func(*view) {}},
		{"wrong hash", first.program, func(v *view) { v.slots[0].hash = strings.Repeat("0", 32) }},
		{"wrong lexical key", first.program, func(v *view) { v.slots[0].lex[3] ^= 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rewrite(c.program, c.change)
			ix := open()
			if ix.recalled != 0 {
				t.Fatalf("recalled %d documents from a memo it must not use", ix.recalled)
			}
			sameLexical(t, c.name, want, ix.v)
			// The file is written again, and the next start uses it.
			if ix := open(); ix.recalled != total {
				t.Fatalf("the next start recalled %d documents, want %d", ix.recalled, total)
			}
		})
	}
}

// TestLexicalCacheNotRewrittenForNothing: a later update of the whole
// catalog (Sync again, or the retry of missing vectors) that changes no
// document leaves the lexical cache file alone.
func TestLexicalCacheNotRewrittenForNothing(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	cat := loadReg(t, dir).Catalog()
	ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	inode := func() uint64 {
		t.Helper()
		fi, err := os.Stat(lexPath(ix.path))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := inode()
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if after := inode(); after != before {
		t.Errorf("a second Sync with nothing changed wrote the lexical cache again")
	}
}
