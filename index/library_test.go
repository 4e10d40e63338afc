package index

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	chromem "github.com/philippgille/chromem-go"

	"github.com/toolsrv/toolsrv/embed/ollama"
)

// An embedder whose vectors depend on the text and the model alone keeps
// them in its vector library (a chromem-go collection in the cache
// directory, 0600): another catalog of the same tools (other tool
// directories), or the same catalog whose cache file is gone, embeds only
// the tools whose text changed; another embedder, and a CatalogAware one,
// do not share it; an index with a read-only cache reads it and leaves it.
func TestVectorLibrary(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	dirA := copyTools(t)
	catA := loadReg(t, dirA).Catalog()
	n := len(catA.Tools)
	sync := func(e *hashEmbedder, dir string, opts Options) *Index {
		t.Helper()
		if opts.CacheDir == "" {
			opts.CacheDir = cache
		}
		opts.Logger = quiet()
		ix := New(e, opts)
		if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
			t.Fatal(err)
		}
		return ix
	}
	e := newHashEmbedder(32)
	sync(e, dirA, Options{})
	lib := newLibrary(cache, "test/hash", false, quiet())
	if fi, err := os.Stat(lib.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the library: %v %v, want a file of mode 0600", fi, err)
	}

	// Another catalog (other directories): the same tools, one edited,
	// one new. Only those two are embedded.
	dirB := copyTools(t)
	writeMeta(t, dirB, "send_email", `{"description":"Send an e-mail, now with attachments.","cmd":"cat"}`)
	writeMeta(t, dirB, "resize_image", `{"description":"Resize an image to a given width.","cmd":"cat"}`)
	e = newHashEmbedder(32)
	ixB := sync(e, dirB, Options{})
	if got := e.st.docTexts.Load(); got != 2 {
		t.Errorf("another catalog of the same tools embedded %d texts, want 2 (the edited and the new)", got)
	}
	if st := ixB.Stats(); st.Vectors != n+1 || st.Missing != 0 {
		t.Errorf("stats %+v, want %d vectors", st, n+1)
	}
	for q, want := range map[string]string{"send a mail": "send_email", "make this picture smaller resize": "resize_image"} {
		if r, err := ixB.Rank(ctx, Query{Text: q, K: 1}); err != nil || r.Hits[0].Name != want {
			t.Errorf("%q: %+v %v, want %s", q, r.Hits, err, want)
		}
	}
	// The first catalog, its cache file gone: nothing embedded.
	if err := os.Remove(cacheFile(cache, "test/hash", catA.Dirs)); err != nil {
		t.Fatal(err)
	}
	e = newHashEmbedder(32)
	sync(e, dirA, Options{})
	if got := e.st.docTexts.Load(); got != 0 {
		t.Errorf("a catalog whose cache file is gone embedded %d texts, want none", got)
	}

	// Another embedder (another model): a library of its own.
	other := newHashEmbedder(32)
	other.id = "test/other"
	sync(other, dirA, Options{})
	if got := other.st.docTexts.Load(); got != int64(n) {
		t.Errorf("another embedder embedded %d texts, want %d", got, n)
	}
	// A CatalogAware embedder keeps none (its vectors are its fit's).
	awareCache := t.TempDir()
	ix := New(awareEmbedder{newHashEmbedder(32)}, Options{CacheDir: awareCache, Logger: quiet()})
	if err := ix.Sync(ctx, catA); err != nil {
		t.Fatal(err)
	}
	if libs, _ := filepath.Glob(filepath.Join(awareCache, "library-*")); len(libs) != 0 {
		t.Errorf("a CatalogAware embedder kept a library: %v", libs)
	}

	// A read-only cache reads the library, and writes nothing.
	dirC := copyTools(t)
	writeMeta(t, dirC, "zip_files", `{"description":"Pack files into a zip archive.","cmd":"cat"}`)
	before, _ := os.ReadFile(lib.path)
	e = newHashEmbedder(32)
	sync(e, dirC, Options{ReadOnlyCache: true})
	if got := e.st.docTexts.Load(); got != 1 {
		t.Errorf("a read-only index embedded %d texts, want 1", got)
	}
	if after, _ := os.ReadFile(lib.path); !bytes.Equal(before, after) {
		t.Error("a read-only index wrote the library")
	}
}

// The library is a file toolsrv reads: a damaged one is no library (every
// document embedded, the file written anew), and a vector in it that is
// not one the embedder could have made (another dimension, NaN, zero) is
// not taken: its document is embedded.
func TestVectorLibraryDistrusted(t *testing.T) {
	ctx := context.Background()
	dir := copyTools(t)
	cat := loadReg(t, dir).Catalog()
	n := len(cat.Tools)
	for name, spoil := range map[string]func(t *testing.T, path string, hashes []string){
		"garbage": func(t *testing.T, path string, _ []string) {
			if err := os.WriteFile(path, []byte("not a library at all"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"bad vectors": func(t *testing.T, path string, hashes []string) {
			db := chromem.NewDB()
			col, _ := db.CreateCollection("test/hash", nil, refuseEmbedding)
			for i, h := range hashes {
				v := make([]float32, 32)
				switch i % 3 {
				case 0:
					v = v[:31] // another dimension
					v[0] = 1
				case 1:
					v[0] = float32(nan())
				case 2: // zero
				}
				if err := col.AddDocument(ctx, chromem.Document{ID: h, Embedding: v}); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.ExportToFile(path, false, "", "test/hash"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			ix := New(newHashEmbedder(32), Options{CacheDir: cache, Logger: quiet()})
			if err := ix.Sync(ctx, cat); err != nil {
				t.Fatal(err)
			}
			var hashes []string
			for h := range ix.v.st.ids() {
				hashes = append(hashes, h)
			}
			if err := os.Remove(cacheFile(cache, "test/hash", cat.Dirs)); err != nil {
				t.Fatal(err)
			}
			lib := newLibrary(cache, "test/hash", false, quiet())
			spoil(t, lib.path, hashes)
			e := newHashEmbedder(32)
			ix = New(e, Options{CacheDir: cache, Logger: quiet()})
			if err := ix.Sync(ctx, cat); err != nil {
				t.Fatal(err)
			}
			if got := e.st.docTexts.Load(); got != int64(n) {
				t.Errorf("embedded %d texts, want all %d", got, n)
			}
			if r, err := ix.Rank(ctx, Query{Text: "send a mail", K: 1}); err != nil || r.Degraded || r.Hits[0].Name != "send_email" {
				t.Errorf("rank: %+v %v", r, err)
			}
			if found := lib.lookup(ctx, docsOf(hashes), 32); len(found) != n {
				t.Errorf("the library written anew holds %d of the %d vectors", len(found), n)
			}
		})
	}
}

// docsOf are documents of these hashes.
func docsOf(hashes []string) []*document {
	out := make([]*document, len(hashes))
	for i, h := range hashes {
		out[i] = &document{name: h, hash: h}
	}
	return out
}

// Two processes adding to one library keep both's vectors (a save merges
// what another wrote meanwhile), and a library beyond its cap keeps the
// vectors its last index used.
func TestVectorLibraryMergesAndIsBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	vec := func(i int) []float32 {
		v := make([]float32, 8)
		v[i%8] = 1
		return v
	}
	doc := func(i int) vecDoc { return vecDoc{hash: fmt.Sprint("doc", i), vec: vec(i)} }
	a, b := newLibrary(dir, "m", false, quiet()), newLibrary(dir, "m", false, quiet())
	a.add(ctx, []vecDoc{doc(0)})
	if err := a.save(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.lookup(ctx, docsOf([]string{"doc0"}), 8); len(got) != 1 { // b reads the file now
		t.Fatalf("b sees %d of a's vectors", len(got))
	}
	a.add(ctx, []vecDoc{doc(1)})
	if err := a.save(ctx); err != nil {
		t.Fatal(err)
	}
	b.add(ctx, []vecDoc{doc(2)})
	if err := b.save(ctx); err != nil {
		t.Fatal(err)
	}
	all := docsOf([]string{"doc0", "doc1", "doc2"})
	if got := newLibrary(dir, "m", false, quiet()).lookup(ctx, all, 8); len(got) != 3 {
		t.Errorf("after both saved: %d vectors, want 3", len(got))
	}

	c := newLibrary(dir, "m", false, quiet())
	c.cap = 4
	c.lookup(ctx, docsOf([]string{"doc1"}), 8) // used by this index
	c.add(ctx, []vecDoc{doc(3), doc(4), doc(5)})
	if err := c.save(ctx); err != nil {
		t.Fatal(err)
	}
	got := newLibrary(dir, "m", false, quiet()).lookup(ctx, docsOf([]string{"doc0", "doc1", "doc2", "doc3", "doc4", "doc5"}), 8)
	if len(got) != 4 {
		t.Errorf("a library capped at 4 holds %d", len(got))
	}
	for _, h := range []string{"doc1", "doc3", "doc4", "doc5"} {
		if got[h] == nil {
			t.Errorf("the library cut %s, which its last index used", h)
		}
	}
}

// The Ollama embedder (its client, against a server speaking Ollama's
// /api/embed): a restart over other tool directories, or after the
// catalog's cache file is gone, sends the server only the tools whose
// text changed; another model sends them all.
func TestVectorLibraryOllama(t *testing.T) {
	ctx := context.Background()
	var texts atomic.Int64
	host := fakeEmbedServer(t, 64, &texts)
	cache := t.TempDir()
	// sync starts an index over dir and returns the texts it sent.
	sync := func(model, dir string) int64 {
		t.Helper()
		emb, err := ollama.New(ollama.Options{Host: host, Model: model, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		ix := New(emb, Options{CacheDir: cache, Logger: quiet()})
		texts.Store(0)
		if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
			t.Fatal(err)
		}
		sent := texts.Load()
		if r, err := ix.Rank(ctx, Query{Text: "send a mail", K: 3}); err != nil || r.Degraded || len(r.Hits) == 0 {
			t.Fatalf("rank: %+v %v", r, err)
		}
		return sent
	}
	dirA := copyTools(t)
	n := int64(len(loadReg(t, dirA).Catalog().Tools))
	if got := sync("nomic-embed-text", dirA); got != n {
		t.Fatalf("the first start sent %d texts, want %d", got, n)
	}
	dirB := copyTools(t)
	writeMeta(t, dirB, "get_weather", `{"description":"Weather now and the forecast for the week.","cmd":"cat"}`)
	if got := sync("nomic-embed-text", dirB); got != 1 {
		t.Errorf("other directories, one tool edited: %d texts sent, want 1", got)
	}
	if got := sync("all-minilm", dirB); got != n {
		t.Errorf("another model: %d texts sent, want %d", got, n)
	}
}
