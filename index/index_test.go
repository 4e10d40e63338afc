package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// safetyNet bounds a test's wait for an event (a change applied): the
// test waits for the event itself, and this only ends a wait that would
// never end. Generous, because a loaded machine (load ~170 on 2 cores) is
// that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

func TestRestartWithNothingChangedEmbedsNothing(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	reg := loadReg(t, dir)
	n := len(reg.Catalog().Tools)

	emb := newHashEmbedder(64)
	ix := New(emb, Options{CacheDir: cache, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if got := emb.st.docTexts.Load(); got != int64(n) {
		t.Fatalf("first build embedded %d texts, want %d", got, n)
	}

	// A new process: a new index over the same cache directory.
	emb2 := newHashEmbedder(64)
	ix2 := New(emb2, Options{CacheDir: cache, Logger: quiet()})
	if err := ix2.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	if got := emb2.st.docCalls.Load(); got != 0 {
		t.Fatalf("restart with nothing changed made %d embedder calls, want 0", got)
	}
	r, err := ix2.Rank(ctx, Query{Text: "what is the temperature in Paris", K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Degraded || r.Hits[0].Name != "get_weather" {
		t.Fatalf("after restart: %+v", r)
	}
	if st := ix2.Stats(); st.Tools != n || st.Vectors != n || st.Missing != 0 {
		t.Fatalf("stats after restart: %+v", st)
	}
}

func TestOneEditCostsOneEmbedding(t *testing.T) {
	for _, aware := range []bool{false, true} {
		t.Run(fmt.Sprintf("catalogAware=%v", aware), func(t *testing.T) {
			ctx := context.Background()
			dir, cache := copyTools(t), t.TempDir()
			newEmb := func() (*hashEmbedder, Options) {
				return newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()}
			}
			wrap := func(e *hashEmbedder) *Index {
				_, o := newEmb()
				if aware {
					return New(awareEmbedder{e}, o)
				}
				return New(e, o)
			}
			e1, _ := newEmb()
			if err := wrap(e1).Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
				t.Fatal(err)
			}
			if aware && e1.st.fits.Load() != 1 {
				t.Fatalf("fits at first build = %d, want 1", e1.st.fits.Load())
			}

			writeMeta(t, dir, "get_weather", `{"description":"Weather report and seven day outlook for any town.","cmd":"cat"}`)
			e2, _ := newEmb()
			ix := wrap(e2)
			if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
				t.Fatal(err)
			}
			if c, n := e2.st.docCalls.Load(), e2.st.docTexts.Load(); c != 1 || n != 1 {
				t.Fatalf("one edit: %d calls embedding %d texts, want 1 and 1", c, n)
			}
			if !strings.Contains(e2.st.texts[0], "seven day outlook") {
				t.Fatalf("embedded %q, want the edited tool", e2.st.texts[0])
			}
			if aware && (e2.st.fits.Load() != 0 || e2.st.restores.Load() != 1) {
				t.Fatalf("restart: fits=%d restores=%d, want 0 and 1", e2.st.fits.Load(), e2.st.restores.Load())
			}
			r, _ := ix.Rank(ctx, Query{Text: "outlook for my town", K: 1})
			if r.Degraded || r.Hits[0].Name != "get_weather" {
				t.Fatalf("edited tool not found: %+v", r)
			}
		})
	}
}

func TestLargeChangeRefitsCatalogAwareEmbedder(t *testing.T) {
	ctx := context.Background()
	dir := copyTools(t)
	e := newHashEmbedder(64)
	ix := New(awareEmbedder{e}, Options{NoCache: true, Logger: quiet()})
	reg := loadReg(t, dir)
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ { // 8 new tools on 14: well over a quarter
		writeMeta(t, dir, fmt.Sprintf("new_tool_%d", i), fmt.Sprintf(`{"description":"brand new tool number %d","cmd":"cat"}`, i))
	}
	before := ix.Stats().Model
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if e.st.fits.Load() != 2 {
		t.Fatalf("fits = %d, want 2 (a re-fit after a large change)", e.st.fits.Load())
	}
	if after := ix.Stats(); after.Model == before || after.Embedder != "test/hash" || after.Vectors != 22 || after.Missing != 0 {
		t.Fatalf("after re-fit: %+v (before: %s)", after, before)
	}
}

func TestCorruptCacheIsRebuilt(t *testing.T) {
	corruptions := map[string]func(b []byte) []byte{
		"truncated":   func(b []byte) []byte { return b[:len(b)/2] },
		"bit flip":    func(b []byte) []byte { b[len(b)-10] ^= 0x40; return b },
		"garbage":     func([]byte) []byte { return []byte("\x00\x01not an index at all") },
		"empty":       func([]byte) []byte { return nil },
		"bad header":  func(b []byte) []byte { return append([]byte(cacheMagic+"{nope\n"), b[len(cacheMagic):]...) },
		"body forged": func(b []byte) []byte { return forgeBody(t, b) },
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir, cache := copyTools(t), t.TempDir()
			cat := loadReg(t, dir).Catalog()
			if err := New(newHashEmbedder(32), Options{CacheDir: cache, Logger: quiet()}).Sync(ctx, cat); err != nil {
				t.Fatal(err)
			}
			path := cacheFile(cache, "test/hash", cat.Dirs)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, corrupt(b), 0o644); err != nil {
				t.Fatal(err)
			}
			// Nor a vector library to take them from (TestVectorLibrary).
			if err := os.Remove(newLibrary(cache, "test/hash", false, quiet()).path); err != nil {
				t.Fatal(err)
			}
			e := newHashEmbedder(32)
			ix := New(e, Options{CacheDir: cache, Logger: quiet()})
			if err := ix.Sync(ctx, cat); err != nil {
				t.Fatalf("sync over a %s cache: %v", name, err)
			}
			if got := e.st.docTexts.Load(); got != int64(len(cat.Tools)) {
				t.Fatalf("rebuilt %d vectors, want %d", got, len(cat.Tools))
			}
			if _, _, err := readCache(path); err != nil {
				t.Fatalf("cache not rewritten: %v", err)
			}
			r, err := ix.Rank(ctx, Query{Text: "send a mail", K: 1})
			if err != nil || r.Degraded || r.Hits[0].Name != "send_email" {
				t.Fatalf("rank after recovery: %+v %v", r, err)
			}
		})
	}
}

// forgeBody replaces the body with garbage and fixes the checksum, so only
// the decoder can notice.
func forgeBody(t *testing.T, b []byte) []byte {
	h, _, err := readCache(writeTemp(t, b))
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, nil)
	if err := writeCache(path, h, func(w io.Writer) error { _, err := io.WriteString(w, "this is not a gob stream"); return err }); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(path)
	return out
}

func writeTemp(t *testing.T, b []byte) string {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, b, 0o644)
	return p
}

func TestChangedDimensionRebuilds(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	cat := loadReg(t, dir).Catalog()
	if err := New(newHashEmbedder(32), Options{CacheDir: cache, Logger: quiet()}).Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	e := newHashEmbedder(48) // same ID, new dimension
	ix := New(e, Options{CacheDir: cache, Logger: quiet()})
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	if got := e.st.docTexts.Load(); got != int64(len(cat.Tools)) {
		t.Fatalf("embedded %d, want all %d again", got, len(cat.Tools))
	}
	if st := ix.Stats(); st.Dim != 48 {
		t.Fatalf("dim %d, want 48", st.Dim)
	}
}

func TestDegradedAnswersWithinDeadlineWhenEmbedderHangs(t *testing.T) {
	ctx := context.Background()
	cat := loadReg(t, copyTools(t)).Catalog()
	e := newHashEmbedder(64)
	ix := New(e, Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	e.hang = make(chan struct{})
	defer close(e.hang)

	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	r, err := ix.Rank(qctx, Query{Text: "convert dollars to euro exchange", K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if qctx.Err() != nil {
		t.Fatalf("answered after the deadline")
	}
	if !r.Degraded || !strings.Contains(r.Reason, "deadline") {
		t.Fatalf("want a degraded answer that says why, got %+v", r)
	}
	if r.Hits[0].Name != "currency_convert" || r.Hits[0].Dense != 0 || r.Hits[0].Score != r.Hits[0].Lexical {
		t.Fatalf("lexical answer wrong: %+v", r.Hits)
	}
	// While the embedder is known bad, the next query does not wait for it.
	r, _ = ix.Rank(ctx, Query{Text: "git status", K: 1})
	if !r.Degraded || !strings.Contains(r.Reason, "unavailable") {
		t.Fatalf("breaker not open: %+v", r)
	}
}

func TestFailingEmbedderDegradesAndRecovers(t *testing.T) {
	ctx := context.Background()
	dir := copyTools(t)
	e := newHashEmbedder(64)
	e.fail = errors.New("no server at http://127.0.0.1:1")
	ix := New(e, Options{NoCache: true, Logger: quiet()})
	err := ix.Sync(ctx, loadReg(t, dir).Catalog())
	if err == nil || !strings.Contains(err.Error(), "no server") {
		t.Fatalf("sync error = %v, want the embedder's", err)
	}
	r, err := ix.Rank(ctx, Query{Text: "list folder entries", K: 2})
	if err != nil || !r.Degraded || r.Hits[0].Name != "list_dir" || !strings.Contains(r.Reason, "no vector") {
		t.Fatalf("lexical fallback: %+v %v", r, err)
	}
	e.fail = nil
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	r, _ = ix.Rank(ctx, Query{Text: "list folder entries", K: 2})
	if r.Degraded {
		t.Fatalf("still degraded after the embedder came back: %s", r.Reason)
	}
}

func TestRankScoresAndFilters(t *testing.T) {
	ctx := context.Background()
	cat := loadReg(t, copyTools(t)).Catalog()
	ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet()})
	if _, err := ix.Rank(ctx, Query{Text: "x"}); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("rank before sync: %v", err)
	}
	if err := ix.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		q     Query
		first string
		n     int
	}{
		{"hybrid", Query{Text: "what's the weather forecast in Oslo"}, "get_weather", len(cat.Tools)},
		{"bm25", Query{Text: "record staged changes", Mode: Lexical, K: 2}, "git_commit", 2},
		{"dense", Query{Text: "translate this into german", Mode: Dense, K: 1}, "translate_text", 1},
		{"named beats content", Query{Text: "use read_file to show the weather forecast", K: 3}, "read_file", 3},
		{"named, case folded", Query{Text: "run the Calculator tool please", K: 1}, "calculator", 1},
		{"allow filter", Query{Text: "git", Allow: func(n string) bool { return n != "git_status" }, K: 1}, "git_commit", 1},
		{"context helps", Query{Text: "and for Berlin?", Context: []string{"what is the temperature forecast in Rome"}, K: 1}, "get_weather", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ix.Rank(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Hits) != c.n || r.Hits[0].Name != c.first {
				t.Fatalf("got %d hits, first %+v; want %d, first %s", len(r.Hits), r.Hits[0], c.n, c.first)
			}
			if r.Revision != cat.Revision {
				t.Fatalf("revision %d, want %d", r.Revision, cat.Revision)
			}
			for i, h := range r.Hits {
				for _, s := range []float64{h.Score, h.Dense, h.Lexical} {
					if s < 0 || s > 1 || s != s {
						t.Fatalf("score out of [0,1]: %+v", h)
					}
				}
				if i > 0 && !r.Hits[i-1].Named && h.Score > r.Hits[i-1].Score {
					t.Fatalf("not sorted: %+v", r.Hits)
				}
			}
		})
	}
	// Calibration: a query about nothing in the catalog scores lower than a
	// precise one, in absolute terms.
	good, _ := ix.Rank(ctx, Query{Text: "send an email to my boss", K: 1})
	bad, _ := ix.Rank(ctx, Query{Text: "zebra giraffe savanna", K: 1})
	if !(good.Hits[0].Score > 0.4 && bad.Hits[0].Score < good.Hits[0].Score/2) {
		t.Fatalf("scores not comparable across queries: good %+v, unrelated %+v", good.Hits[0], bad.Hits[0])
	}
}

func TestFollowAppliesRegistryChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := copyTools(t)
	reg := loadReg(t, dir)
	e := newHashEmbedder(64)
	ix := New(e, Options{CacheDir: t.TempDir(), Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	calls := e.st.docTexts.Load()
	done := make(chan struct{})
	changes := reg.Subscribe(ctx)
	go func() { ix.Follow(ctx, changes); close(done) }()

	os.Remove(filepath.Join(dir, "git_status.meta"))
	writeMeta(t, dir, "pdf_render", `{"description":"Render a PDF document page to a PNG image.","cmd":"cat"}`)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	want := reg.Catalog().Revision
	deadline := time.Now().Add(safetyNet)
	for ix.Stats().Revision != want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r, _ := ix.Rank(ctx, Query{Text: "render pdf page as png"})
	if r.Revision != want || r.Hits[0].Name != "pdf_render" {
		t.Fatalf("change not applied: %+v", r)
	}
	for _, h := range r.Hits {
		if h.Name == "git_status" {
			t.Fatal("removed tool still ranked")
		}
	}
	if got := e.st.docTexts.Load() - calls; got != 1 {
		t.Fatalf("the change embedded %d texts, want 1", got)
	}
	if st := ix.Stats(); st.Vectors != st.Tools || st.Tools != 14 {
		t.Fatalf("stale vectors kept: %+v", st)
	}
	cancel()
	<-done
	if _, _, err := readCache(ix.Stats().Cache); err != nil {
		t.Fatalf("Follow did not save on exit: %v", err)
	}
}

func TestEmptyCatalog(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(registry.Options{Dirs: []string{t.TempDir()}, Logger: quiet()})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ix := New(newHashEmbedder(16), Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	r, err := ix.Rank(ctx, Query{Text: "anything"})
	if err != nil || len(r.Hits) != 0 {
		t.Fatalf("empty catalog: %+v %v", r, err)
	}
}

func TestReadsServedWhileUpdating(t *testing.T) {
	ctx := context.Background()
	dir := copyTools(t)
	reg := loadReg(t, dir)
	e := newHashEmbedder(64)
	ix := New(e, Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	e.gate = make(chan struct{}) // the next embedding blocks
	writeMeta(t, dir, "pdf_render", `{"description":"Render a PDF document page to a PNG image.","cmd":"cat"}`)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	synced := make(chan error, 1)
	go func() { synced <- ix.Sync(ctx, reg.Catalog()) }()
	for e.st.docCalls.Load() < 2 { // wait until Sync is inside the embedder
		time.Sleep(time.Millisecond)
	}
	r, err := ix.Rank(ctx, Query{Text: "weather forecast", K: 1})
	if err != nil || r.Hits[0].Name != "get_weather" || r.Revision != 1 {
		t.Fatalf("rank during update: %+v %v", r, err)
	}
	close(e.gate)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	r, _ = ix.Rank(ctx, Query{Text: "render a pdf page", K: 1})
	if r.Hits[0].Name != "pdf_render" || r.Revision != 2 {
		t.Fatalf("after update: %+v", r)
	}
}

func TestMessageWithoutWords(t *testing.T) {
	ctx := context.Background()
	e := newHashEmbedder(32)
	ix := New(e, Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, loadReg(t, copyTools(t)).Catalog()); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"", "  ", "?!…"} {
		r, err := ix.Rank(ctx, Query{Text: text, K: 3})
		if err != nil || r.Degraded || len(r.Hits) != 3 {
			t.Fatalf("%q: %+v %v", text, r, err)
		}
		for _, h := range r.Hits {
			if h.Score != 0 {
				t.Fatalf("%q matched %+v", text, h)
			}
		}
	}
	if n := e.st.queryCalls.Load(); n != 0 {
		t.Fatalf("embedded a message without words %d times", n)
	}
}

func TestFollowRetriesMissingVectors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := copyTools(t)
	reg := loadReg(t, dir)
	e := newHashEmbedder(32)
	e.fail = errors.New("embedder down")
	ix := New(e, Options{NoCache: true, Logger: quiet(), RetryEvery: 20 * time.Millisecond})
	if err := ix.Sync(ctx, reg.Catalog()); err == nil {
		t.Fatal("sync with a failing embedder reported no error")
	}
	done := make(chan struct{})
	changes := reg.Subscribe(ctx)
	go func() { ix.Follow(ctx, changes); close(done) }()
	// A change arrives while the embedder is still down: applied lexically.
	writeMeta(t, dir, "pdf_render", `{"description":"Render a PDF document page to a PNG image.","cmd":"cat"}`)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(safetyNet)
	for ix.Stats().Revision != reg.Catalog().Revision && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := ix.Stats(); st.Missing != 15 {
		t.Fatalf("while down: %+v", st)
	}
	e.st.mu.Lock()
	e.fail = nil // the embedder comes back
	e.st.mu.Unlock()
	for ix.Stats().Missing != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r, _ := ix.Rank(ctx, Query{Text: "render pdf as png", K: 1})
	if r.Degraded || r.Hits[0].Name != "pdf_render" {
		t.Fatalf("after recovery: %+v", r)
	}
	cancel()
	<-done
}

// An index over a catalog plus a few tools of its own (a session's) starts
// from the vectors the catalog's index saved, embeds only its own tools,
// takes changes synchronously with Update, and never writes the cache.
func TestReadOnlyCacheAndUpdate(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	reg := loadReg(t, dir)
	if err := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()}).Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "index-*.gob"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	before, _ := os.Stat(files[0])

	emb := newHashEmbedder(64)
	ix := New(emb, Options{CacheDir: cache, ReadOnlyCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	if c := emb.st.docCalls.Load(); c != 0 {
		t.Fatalf("the overlay index embedded %d batches; the cache has every vector", c)
	}
	writeMeta(t, dir, "lunar_phase", `{"description":"Phase of the moon tonight, waxing or waning.","cmd":"cat"}`)
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Update(ctx, registry.Change{Catalog: reg.Catalog(), Upserted: []string{"lunar_phase"}}); err != nil {
		t.Fatal(err)
	}
	if n := emb.st.docTexts.Load(); n != 1 {
		t.Fatalf("Update embedded %d texts, want 1", n)
	}
	r, err := ix.Rank(ctx, Query{Text: "is the moon waxing", K: 1})
	if err != nil || r.Hits[0].Name != "lunar_phase" {
		t.Fatalf("after Update: %+v, %v", r, err)
	}
	if err := ix.Update(ctx, registry.Change{Catalog: reg.Catalog(), Removed: []string{"lunar_phase"}}); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Tools != len(reg.Catalog().Tools)-1 {
		t.Errorf("after removal the index has %d tools", st.Tools)
	}
	ix.upd.Lock()
	if err := ix.saveLocked(); err != nil {
		t.Fatal(err)
	}
	ix.upd.Unlock()
	after, _ := os.Stat(files[0])
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Error("a read-only cache was written")
	}
}

// TestPreloadReadsTheCatalogsCache: a cache read ahead of the first Sync
// (while the registry loads) serves that Sync when the directories match,
// and is set aside for the catalog's own cache when they do not.
func TestPreloadReadsTheCatalogsCache(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	cat := loadReg(t, dir).Catalog()
	n := len(cat.Tools)
	first := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	if err := first.Sync(ctx, cat); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		preload   []string
		wantCalls int64
	}{
		{"the catalog's directories", cat.Dirs, 0},
		{"other directories", []string{t.TempDir()}, 0},
		{"no directories", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := newHashEmbedder(64)
			ix := New(emb, Options{CacheDir: cache, Logger: quiet()})
			ix.Preload(ctx, tc.preload)
			if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
				t.Fatal(err)
			}
			if got := emb.st.docCalls.Load(); got != tc.wantCalls {
				t.Fatalf("Sync after Preload(%v) made %d embedder calls, want %d", tc.preload, got, tc.wantCalls)
			}
			if st := ix.Stats(); st.Tools != n || st.Vectors != n || st.Missing != 0 {
				t.Fatalf("stats: %+v", st)
			}
			if got, want := ix.cachePath.Load(), first.cachePath.Load(); got == nil || *got != *want {
				t.Fatalf("cache file %v, want %s", got, *want)
			}
		})
	}
	// A cache of other directories is no cache for these: Preload of a
	// directory without one leaves Sync to embed, into its own file.
	other := loadReg(t, copyTools(t)).Catalog()
	// (Its tools are the same: the vector library would give their
	// vectors, TestVectorLibrary.)
	if err := os.Remove(newLibrary(cache, "test/hash", false, quiet()).path); err != nil {
		t.Fatal(err)
	}
	emb := newHashEmbedder(64)
	ix := New(emb, Options{CacheDir: cache, Logger: quiet()})
	ix.Preload(ctx, cat.Dirs)
	if err := ix.Sync(ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := emb.st.docTexts.Load(); got != int64(len(other.Tools)) {
		t.Fatalf("a catalog over other directories embedded %d texts after Preload of the cached ones, want %d", got, len(other.Tools))
	}
	if got, was := ix.cachePath.Load(), first.cachePath.Load(); got == nil || *got == *was {
		t.Fatalf("the other catalog's cache file is %v, the first's %s", got, *was)
	}
}
