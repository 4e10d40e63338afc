package index

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
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
	uses = append(uses, Use{Request: "convert ten dollars to euros", Tool: "calculator", Principal: "claude", Count: 3, Failed: 1},
		Use{Request: "tell me a joke", Tool: "", Principal: "codex", Count: 1})
	return owned(uses)
}

// loads gives uses, in a random order, counting the calls.
func loads(uses []Use, calls *int) func(context.Context) ([]Use, error) {
	return func(context.Context) ([]Use, error) {
		*calls++
		out := append([]Use(nil), uses...)
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out, nil
	}
}

// A later index of the same catalog takes the view saved for the same
// history (tag) instead of reading and building it, and ranks exactly as
// the index that built it; another tag, a damaged or foreign file, are
// built again; no entries remove the file; a failed read changes
// nothing.
func TestUsageViewSaved(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	path := filepath.Join(t.TempDir(), "usage.db.view")
	uses := savedHistory()

	built := savedUsageIndex(t, dir, path)
	calls := 0
	fit, err := built.SetUsageSaved(ctx, History{Source: "test", Version: 1, Load: loads(uses, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	built.WaitSaves()
	if fit.Weight == 0 || built.usage.Load().text == nil {
		t.Fatalf("the first index should build a view with a weight: %+v", fit)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != int64(built.usage.Load().savedSize()) {
		t.Fatalf("saved view: %v, %v (size %d expected)", fi, err, built.usage.Load().savedSize())
	}

	loaded := savedUsageIndex(t, dir, path)
	fit2, err := loaded.SetUsageSaved(ctx, History{Source: "test", Version: 1, Load: loads(uses, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.usage.Load().text != nil || calls != 1 {
		t.Fatalf("the second index read the history (%d reads) and built the view again instead of taking the saved one", calls)
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

	// The same history on another catalog (a tool more): built again.
	dir2 := usageCatalog(t)
	writeMeta(t, dir2, "extra_tool", `{"description":"Looks up the price of a coin.","cmd":"cat"}`)
	grown := savedUsageIndex(t, dir2, path)
	if _, err := grown.SetUsageSaved(ctx, History{Source: "test", Version: 1, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	grown.WaitSaves()
	if grown.usage.Load().text == nil {
		t.Error("a view saved for another catalog was used")
	}

	// Another history: built again, and saved (the first save of an index).
	other := savedUsageIndex(t, dir, path)
	if _, err := other.SetUsageSaved(ctx, History{Source: "test", Version: 2, Load: loads(uses[1:], &calls)}); err != nil {
		t.Fatal(err)
	}
	other.WaitSaves()
	if other.usage.Load().text == nil {
		t.Error("a view saved for other entries was used")
	}

	// A damaged file is a cache miss, whatever the damage.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := viewHeader{base: other.usageViewBase("test"), version: 2}
	if _, h, err := decodeView(good); err != nil || h != want {
		t.Fatalf("the saved view does not decode as version 2 of its base: %v", err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 400; i++ {
		b := append([]byte(nil), good...)
		switch i % 3 {
		case 0:
			b = b[:rng.IntN(len(b))]
		case 1:
			b[len(usageViewMagic)+viewHeaderSize+rng.IntN(len(b)-len(usageViewMagic)-viewHeaderSize)] ^= byte(1 + rng.IntN(255))
		case 2:
			b = append(b, 0)
		}
		if u, _, err := decodeView(b); err == nil {
			// A flipped weight or scale decodes; then it must still be a
			// consistent view (rankable).
			u.evidence(usageQuery{words: []termWeight{{0, 1}}}, nil, -1)
		}
	}
	if u, _ := other.loadUsageView([32]byte{1}); u != nil {
		t.Error("a view of another base was loaded")
	}

	// Saved again within a minute by the same index: not saved, and the
	// file, which no longer matches, goes.
	if _, err := other.SetUsageSaved(ctx, History{Source: "test", Version: 3, Load: loads(uses[2:], &calls)}); err != nil {
		t.Fatal(err)
	}
	other.WaitSaves()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a saved view of entries no longer in effect is still there: %v", err)
	}

	// No entries: nothing to save, and the old file goes.
	empty := savedUsageIndex(t, dir, path)
	if _, err := empty.SetUsageSaved(ctx, History{Source: "test", Version: 4, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	empty.WaitSaves()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	failed := func(context.Context) ([]Use, error) { return nil, errors.New("store unreadable") }
	if _, err := empty.SetUsageSaved(ctx, History{Source: "test", Version: 5, Load: failed}); err == nil || empty.UsageFit() == (UsageFit{}) {
		t.Errorf("a failed read: %v, and the history in effect is now %+v", err, empty.UsageFit())
	}
	if _, err := empty.SetUsageSaved(ctx, History{Source: "test", Version: 6, Load: loads(nil, &calls)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after an empty history the saved view is still there: %v", err)
	}

	// A save still under way gives way to the history that followed: a
	// history forgotten at once leaves no file, whichever runs first.
	for i := 0; i < 20; i++ {
		racer := savedUsageIndex(t, dir, path)
		if _, err := racer.SetUsageSaved(ctx, History{Source: fmt.Sprint("r", i), Version: 1, Load: loads(uses, &calls)}); err != nil {
			t.Fatal(err)
		}
		if _, err := racer.SetUsageSaved(ctx, History{Source: fmt.Sprint("r", i), Version: 2, Load: loads(nil, &calls)}); err != nil {
			t.Fatal(err)
		}
		racer.WaitSaves()
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a history forgotten while its view was being saved left the file: %v", err)
		}
	}
}

// orderedUses orders by agent, tool and request, whatever the order given.
func TestOrderedUses(t *testing.T) {
	var uses []Use
	for i := 0; i < 300; i++ {
		uses = append(uses, Use{Principal: fmt.Sprint("agent", i%3), Tool: fmt.Sprint("tool", i%17), Request: fmt.Sprint("request ", i%41, " ", i)})
	}
	rand.Shuffle(len(uses), func(i, j int) { uses[i], uses[j] = uses[j], uses[i] })
	got := orderedUses(uses)
	want := append([]Use(nil), uses...)
	slices.SortFunc(want, func(a, b Use) int {
		return cmp.Or(strings.Compare(a.Principal, b.Principal), strings.Compare(a.Tool, b.Tool), strings.Compare(a.Request, b.Request))
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("orderedUses: %v\nwant %v", got[:5], want[:5])
	}
}

// The requests' vectors are cached beside the index: a later index of the
// same cache embeds none of them again, and gets the same vectors; a
// damaged cache file is only a cache miss.
func TestUsageVectorsCached(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	cache := t.TempDir()
	uses := savedHistory()
	start := func() (*Index, *hashEmbedder) {
		t.Helper()
		uemb := newHashEmbedder(64)
		ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet(), UsageEmbedder: uemb})
		if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.SetUsage(ctx, uses); err != nil {
			t.Fatal(err)
		}
		return ix, uemb
	}
	// (Each also embeds the requests its leave-one-out ranks as messages.)
	distinct := map[string]bool{}
	for _, u := range uses {
		distinct[u.Request] = true
	}
	first, e1 := start()
	all := e1.st.queryCalls.Load()
	if all < int64(len(distinct)) {
		t.Fatalf("the first index embedded %d texts, fewer than its %d requests", all, len(distinct))
	}
	second, e2 := start()
	if n := e2.st.queryCalls.Load(); n != all-int64(len(distinct)) {
		t.Errorf("a later index embedded %d texts, want %d (the history's all cached)", n, all-int64(len(distinct)))
	}
	a, b := first.usage.Load(), second.usage.Load()
	if !reflect.DeepEqual(a.qvecs, b.qvecs) || !reflect.DeepEqual(a.qscale, b.qscale) {
		t.Error("cached vectors differ from the ones embedded")
	}
	// A damaged cache is only a cache miss: every text embedded again, to
	// the same vectors. Cut short, or of the right size with a scale no
	// unit vector has (here NaN, which would reach every score).
	path := first.usageVecPath(e1.ID())
	for _, damage := range []struct {
		what  string
		spoil func(b []byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)-7] }},
		{"a NaN scale", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(usageVecMagic)+4+16:], math.Float32bits(float32(math.NaN())))
			return b
		}},
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, damage.spoil(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		again, e := start()
		if n := e.st.queryCalls.Load(); n != all {
			t.Errorf("with a cache %s, %d texts embedded, want %d", damage.what, n, all)
		}
		if c := again.usage.Load(); !reflect.DeepEqual(a.qvecs, c.qvecs) || !reflect.DeepEqual(a.qscale, c.qscale) {
			t.Errorf("with a cache %s, the vectors embedded again differ", damage.what)
		}
	}
}

// checkView fails t unless u's parts agree with each other (what a delta
// must keep true).
func checkView(t *testing.T, u *usageView) {
	t.Helper()
	if len(u.toolID) != u.n || len(u.principal) != u.n || len(u.ids) != u.n || len(u.trust) != u.n || len(u.wordsAt) != u.n+1 ||
		(u.dim > 0 && (len(u.qscale) != u.n || len(u.qvecs) != u.n*u.dim)) || u.nprincipals != len(u.principals) {
		t.Fatalf("view of %d entries: %d tools, %d agents, %d ids, %d offsets, %d scales", u.n, len(u.toolID), len(u.principal), len(u.ids), len(u.wordsAt), len(u.qscale))
	}
	pairs := 0
	for i := 0; i < u.n; i++ {
		row := u.row(int32(i))
		for k, tw := range row {
			if int(tw.id) >= len(u.idf) || (k > 0 && row[k-1].id >= tw.id) {
				t.Fatalf("entry %d's words: %v", i, row)
			}
		}
		pairs += len(row)
		if int(u.toolID[i]) >= len(u.tools) || int(u.principal[i]) >= u.nprincipals || !(u.trust[i] > 0 && u.trust[i] <= 1) {
			t.Fatalf("entry %d: tool %d, agent %d, trust %v", i, u.toolID[i], u.principal[i], u.trust[i])
		}
	}
	posted, byTool := 0, 0
	for id, post := range u.post {
		for _, e := range post {
			found := false
			for _, tw := range u.row(e.id) {
				found = found || (int(tw.id) == id && tw.w == e.w)
			}
			if !found {
				t.Fatalf("term %d's postings name entry %d, which lacks it", id, e.id)
			}
		}
		posted += len(post)
	}
	for _, rows := range u.byTool {
		byTool += len(rows)
	}
	if posted != pairs || byTool != u.n {
		t.Fatalf("%d postings for %d words; %d entries by tool of %d", posted, pairs, byTool, u.n)
	}
}

// A saved view of an older version is brought up to date with what
// changed since (no full read): a removed entry goes, an added one
// votes; a change too large for a delta, or a source that cannot tell,
// reads the history whole.
func TestUsageViewDelta(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	path := filepath.Join(t.TempDir(), "usage.db.view")
	uses := savedHistoryIDs()
	calls := 0
	first := savedUsageIndex(t, dir, path)
	fit, err := first.SetUsageSaved(ctx, History{Source: "s", Version: 1, Load: loads(uses, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	first.WaitSaves()
	checkView(t, first.usage.Load())

	added := Use{Request: "what is ethereum trading at", Tool: "calculator", Principal: "gemini", Count: 1, ID: "gemini/calculator/ethereum"}
	gone := uses[0]
	since := func(changed []Use, removed []string, err error) func(context.Context, int64) ([]Use, []string, error) {
		return func(_ context.Context, v int64) ([]Use, []string, error) {
			if v != 1 {
				t.Errorf("changes asked since version %d, the saved view is of 1", v)
			}
			return changed, removed, err
		}
	}
	later := savedUsageIndex(t, dir, path)
	fit2, err := later.SetUsageSaved(ctx, History{Source: "s", Version: 2, Load: loads(uses, &calls),
		Since: since([]Use{added}, []string{gone.ID}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	later.WaitSaves()
	u := later.usage.Load()
	checkView(t, u)
	if calls != 1 || fit2.Entries != fit.Entries || fit2.Weight != fit.Weight {
		t.Errorf("delta: %d full reads (want 1, the first), fit %+v (before %+v)", calls, fit2, fit)
	}
	// Every row kept has its own vector, words, tool and agent still.
	was := first.usage.Load()
	rowOf := map[[16]byte]int{}
	for i, id := range was.ids {
		rowOf[id] = i
	}
	for i, id := range u.ids {
		j, ok := rowOf[id]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(u.qvecs[i*u.dim:(i+1)*u.dim], was.qvecs[j*was.dim:(j+1)*was.dim]) || u.qscale[i] != was.qscale[j] ||
			!reflect.DeepEqual(u.row(int32(i)), was.row(int32(j))) || u.toolOf(int32(i)) != was.toolOf(int32(j)) ||
			u.principals[u.principal[i]] != was.principals[was.principal[j]] || u.trust[i] != was.trust[j] {
			t.Errorf("entry %d (was %d) changed in the delta", i, j)
		}
	}
	p, _ := u.evidence(later.usageQueryOf(ctx, u, added.Request), nil, -1)
	if p.p["calculator"] == 0 || len(u.byTool[gone.Tool]) != len(first.usage.Load().byTool[gone.Tool])-1 {
		t.Errorf("after the delta: evidence %v; %d entries of %s (were %d)", p, len(u.byTool[gone.Tool]), gone.Tool, len(first.usage.Load().byTool[gone.Tool]))
	}
	// The delta was saved: a third start of version 2 takes it as it is.
	third := savedUsageIndex(t, dir, path)
	if _, err := third.SetUsageSaved(ctx, History{Source: "s", Version: 2, Load: loads(uses, &calls)}); err != nil || calls != 1 {
		t.Errorf("the view brought up to date was not saved: %d full reads, %v", calls, err)
	}

	// Too much changed (more than a twentieth since the full build), or
	// the source cannot tell: read whole.
	var many []Use
	for i := 0; i < 5; i++ {
		many = append(many, Use{Request: fmt.Sprint("convert unit number ", i), Tool: "calculator", Principal: "a", Count: 1, ID: fmt.Sprint("many", i)})
	}
	for k, s := range []func(context.Context, int64) ([]Use, []string, error){
		func(context.Context, int64) ([]Use, []string, error) { return many, nil, nil },
		func(context.Context, int64) ([]Use, []string, error) { return nil, nil, errors.New("cannot tell") },
	} {
		before := calls
		ix := savedUsageIndex(t, dir, path)
		if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: int64(3 + k), Load: loads(uses, &calls), Since: s}); err != nil {
			t.Fatal(err)
		}
		ix.WaitSaves()
		if calls != before+1 {
			t.Errorf("case %d: %d full reads, want 1", k, calls-before)
		}
		checkView(t, ix.usage.Load())
	}
}

// An index whose view in effect is of an older version of the same
// history (a server reloading) brings a copy of it up to date: neither the
// history nor the saved file is read, and the view that rankings were
// reading is left as it was. The same version again changes nothing.
func TestUsageViewDeltaInMemory(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	path := filepath.Join(t.TempDir(), "usage.db.view")
	uses := savedHistoryIDs()
	calls := 0
	ix := savedUsageIndex(t, dir, path)
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 1, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	ix.WaitSaves()
	old := ix.usage.Load()
	before := old.clone()
	if err := os.Remove(path); err != nil { // only the view in memory is left to start from
		t.Fatal(err)
	}
	added := Use{Request: "what is ethereum trading at", Tool: "calculator", Principal: "gemini", Count: 1, ID: "gemini/calculator/ethereum"}
	asked := int64(-1)
	fit, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Load: loads(uses, &calls),
		Since: func(_ context.Context, v int64) ([]Use, []string, error) {
			asked = v
			return []Use{added}, []string{uses[0].ID}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ix.WaitSaves()
	u := ix.usage.Load()
	checkView(t, u)
	if calls != 1 || asked != 1 || u == old || u.n != old.n || fit.Weight != old.w {
		t.Fatalf("reload: %d full reads (want 1), changes since %d (want 1), %d entries (were %d), weight %v (was %v)",
			calls, asked, u.n, old.n, fit.Weight, old.w)
	}
	if p, _ := u.evidence(ix.usageQueryOf(ctx, u, added.Request), nil, -1); p.p["calculator"] == 0 {
		t.Errorf("the added entry does not vote: %v", p)
	}
	if !reflect.DeepEqual(old.qvecs, before.qvecs) || !reflect.DeepEqual(old.toolID, before.toolID) ||
		!reflect.DeepEqual(old.tools, before.tools) || !reflect.DeepEqual(old.dict, before.dict) ||
		!reflect.DeepEqual(old.idf, before.idf) || !reflect.DeepEqual(old.trust, before.trust) ||
		!reflect.DeepEqual(old.principals, before.principals) || !reflect.DeepEqual(old.ids, before.ids) {
		t.Error("the delta changed the view rankings were reading")
	}
	// The same version again: nothing read, the same view.
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Load: loads(uses, &calls)}); err != nil || calls != 1 || ix.usage.Load() != u {
		t.Errorf("the same version again: %d full reads, view replaced %v, %v", calls, ix.usage.Load() != u, err)
	}
}

// savedHistoryIDs is savedHistory with an ID for each entry (what a delta
// needs).
func savedHistoryIDs() []Use {
	uses := savedHistory()
	for i := range uses {
		uses[i].ID = uses[i].Principal + "/" + uses[i].Tool + "/" + uses[i].Request
	}
	return uses
}

// A saved view is read from a file: whatever it holds, decoding it never
// panics, and a view it accepts is consistent and ranks with finite
// scores (a NaN there would reach every answer, and JSON cannot say it).
func FuzzDecodeView(f *testing.F) {
	_, u := usageViewOf(f, savedHistory())
	var good bytes.Buffer
	if err := encodeUsageView(&good, viewHeader{version: 1}, u); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:len(good.Bytes())/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		u, _, err := decodeView(b)
		if err != nil {
			return
		}
		checkView(t, u)
		// Messages of words alone, and the entries' own (with their
		// vectors: the dense part).
		var qs []usageQuery
		for _, text := range []string{"bitcoin price", "tell me a joke", "convert dollars"} {
			q := usageQuery{}
			for _, t := range uniq(terms(text)) {
				if id, ok := u.dict[t]; ok {
					q.words = append(q.words, termWeight{id, 1})
				}
			}
			slices.SortFunc(q.words, func(a, b termWeight) int { return cmp.Compare(a.id, b.id) })
			qs = append(qs, q)
		}
		for _, i := range []int32{0, int32(u.n / 2), int32(u.n - 1)} {
			qs = append(qs, u.entryQuery(i))
		}
		for k, q := range qs {
			p, none := u.evidence(q, nil, -1)
			r := Ranking{Hits: []Hit{{Name: "web_search", Score: 0.5}, {Name: "calculator", Score: 0.4}}}
			applyUsage(&r, p, none, u.w, func(string) (bool, bool) { return true, true })
			for _, h := range r.Hits {
				if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) || math.IsNaN(h.Usage) {
					t.Fatalf("a decoded view gave %q a score of %v (usage %v) for message %d", h.Name, h.Score, h.Usage, k)
				}
			}
		}
	})
}

// A saved view whose numbers are out of their range is not taken, each
// case on its own (the rest of the file as written).
func TestDecodeViewRejectsBadNumbers(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name  string
		spoil func(u *usageView)
	}{
		{"NaN IDF", func(u *usageView) { u.idf[0] = nan }},
		{"negative IDF", func(u *usageView) { u.idf[1] = -1 }},
		{"NaN word weight", func(u *usageView) { u.words[0].w = float32(nan) }},
		{"word weight above 1", func(u *usageView) { u.words[1].w = 2 }},
		{"a row out of term order", func(u *usageView) {
			row := u.row(0)
			row[0], row[1] = row[1], row[0]
		}},
		{"infinite scale", func(u *usageView) { u.qscale[2] = float32(math.Inf(1)) }},
		{"NaN weight", func(u *usageView) { u.w = nan }},
		{"weight beyond the grid", func(u *usageView) { u.w = 1e9 }},
		{"NaN recall", func(u *usageView) { u.loo.Recall = nan }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, u := usageViewOf(t, savedHistory())
			if len(u.row(0)) < 2 || u.qscale == nil {
				t.Fatalf("the first entry has %d words, scales %v: not what the cases need", len(u.row(0)), u.qscale != nil)
			}
			var b bytes.Buffer
			if err := encodeUsageView(&b, viewHeader{}, u); err != nil {
				t.Fatal(err)
			}
			if _, _, err := decodeView(b.Bytes()); err != nil {
				t.Fatalf("the view as built does not decode: %v", err)
			}
			c.spoil(u)
			b.Reset()
			if err := encodeUsageView(&b, viewHeader{}, u); err != nil {
				t.Fatal(err)
			}
			if _, _, err := decodeView(b.Bytes()); err == nil {
				t.Error("decoded")
			}
		})
	}
}

// The requests' vectors are derived from the users' requests: they are
// kept beside the saved view (in the usage store's private place, which
// the store clears when it forgets), only for the requests of the history
// (a request forgotten leaves no vector behind at the next whole build),
// and an empty history removes them; a cache an earlier version kept in
// the index's cache directory goes too.
func TestUsageVectorsGoWithTheHistory(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	path := filepath.Join(t.TempDir(), "usage.db.view")
	cache := t.TempDir()
	emb := newHashEmbedder(64)
	ix := New(emb, Options{CacheDir: cache, Logger: quiet(), UsageEmbedder: emb, UsageViewPath: path})
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	legacy := ix.cacheDirUsageVecPath(emb.ID())
	if legacy == "" {
		t.Fatal("no cache directory")
	}
	if err := os.WriteFile(legacy, []byte("vectors of an earlier version"), 0o600); err != nil {
		t.Fatal(err)
	}
	vec := ix.usageVecPath(emb.ID())
	if filepath.Dir(vec) != filepath.Dir(path) || !strings.HasPrefix(filepath.Base(vec), filepath.Base(path)+".") {
		t.Fatalf("the vectors are kept at %s, not beside the view %s", vec, path)
	}
	cached := func() map[[16]byte]bool {
		t.Helper()
		other := New(emb, Options{NoCache: true, Logger: quiet(), UsageEmbedder: emb, UsageViewPath: path})
		out := map[[16]byte]bool{}
		for k := range other.loadUsageVectors(emb.ID(), emb.Dim()).row {
			out[k] = true
		}
		return out
	}
	requests := func(uses []Use) map[[16]byte]bool {
		out := map[[16]byte]bool{}
		for _, u := range uses {
			out[usageKey(u.Request)] = true
		}
		return out
	}
	uses := savedHistory()
	for _, h := range [][]Use{uses, uses[len(uses)-12:]} {
		if _, err := ix.SetUsage(ctx, h); err != nil {
			t.Fatal(err)
		}
		if got, want := cached(), requests(h); !reflect.DeepEqual(got, want) {
			t.Errorf("a history of %d requests: %d vectors cached, want %d", len(want), len(got), len(want))
		}
	}
	if _, err := os.Stat(legacy); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the vectors of an earlier version are still in the cache directory: %v", err)
	}
	if _, err := ix.SetUsage(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(vec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("with an empty history, the vectors are still there: %v", err)
	}
}

// The view in effect is the index's one copy of the history: a change too
// large for a delta, or other Extra (the tools' examples) or another
// catalog for the same history, is built whole from the view's own rows
// and what changed, without reading the history again, and makes the
// very view a whole read would.
func TestUsageViewRebuiltFromItsRows(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	uses := savedHistoryIDs()
	calls := 0
	ix := savedUsageIndex(t, dir, "") // no saved file: only the view in memory
	extra := []Use{{Request: "what time is it in tokyo", Tool: "calculator", Principal: "(examples)", Count: 1}}
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 1, Extra: extra, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	// The view a whole read of these entries builds.
	same := func(step string, want []Use) {
		t.Helper()
		fresh := savedUsageIndex(t, dir, "")
		if _, err := fresh.SetUsage(ctx, want); err != nil {
			t.Fatal(err)
		}
		a, b := ix.usage.Load(), fresh.usage.Load()
		checkView(t, a)
		if a.n != b.n || !reflect.DeepEqual(a.text, b.text) || !reflect.DeepEqual(a.ids, b.ids) ||
			!reflect.DeepEqual(a.toolID, b.toolID) || !reflect.DeepEqual(a.tools, b.tools) ||
			!reflect.DeepEqual(a.principal, b.principal) || !reflect.DeepEqual(a.principals, b.principals) ||
			!reflect.DeepEqual(a.qvecs, b.qvecs) || !reflect.DeepEqual(a.qscale, b.qscale) ||
			!reflect.DeepEqual(a.words, b.words) || !reflect.DeepEqual(a.wordsAt, b.wordsAt) ||
			!reflect.DeepEqual(a.idf, b.idf) || !reflect.DeepEqual(a.trust, b.trust) || a.w != b.w || a.loo != b.loo {
			t.Errorf("%s: the view rebuilt from its rows (%d entries, fit %+v) is not the one a whole read builds (%d, %+v)",
				step, a.n, a.loo, b.n, b.loo)
		}
	}
	same("built", append(append([]Use(nil), uses...), extra...))

	// More than a twentieth changed: built whole, from the view's rows.
	var many []Use
	for i := 0; i < 5; i++ {
		many = append(many, Use{Request: fmt.Sprint("convert unit number ", i), Tool: "calculator", Principal: "a", Count: 1, ID: fmt.Sprint("many", i)})
	}
	asked := int64(-1)
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Extra: extra, Load: loads(uses, &calls),
		Since: func(_ context.Context, v int64) ([]Use, []string, error) {
			asked = v
			return many, []string{uses[0].ID}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || asked != 1 {
		t.Errorf("a large change: %d reads of the whole history (want 1, the first), changes since %d (want 1)", calls, asked)
	}
	now := append(append([]Use(nil), uses[1:]...), many...)
	same("after a large change", append(append([]Use(nil), now...), extra...))

	// Other examples, the same history: built whole from the rows.
	extra2 := []Use{{Request: "multiply these two numbers", Tool: "calculator", Principal: "(examples)", Count: 1}}
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Extra: extra2, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("other examples: %d reads of the whole history, want none more", calls-1)
	}
	same("after other examples", append(append([]Use(nil), now...), extra2...))

	// Another history: read whole.
	if _, err := ix.SetUsageSaved(ctx, History{Source: "another", Version: 2, Extra: extra2, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("another history: %d reads of it, want 1", calls-1)
	}
	// A history whose entries have no IDs cannot be made again from the
	// rows (no telling them from Extra): read whole.
	anon := savedHistory()
	if _, err := ix.SetUsageSaved(ctx, History{Source: "anon", Version: 1, Extra: extra, Load: loads(anon, &calls)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.SetUsageSaved(ctx, History{Source: "anon", Version: 1, Extra: extra2, Load: loads(anon, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 4 {
		t.Errorf("a history without IDs, other examples: %d reads of it, want 2", calls-2)
	}
	same("a history without IDs", append(append([]Use(nil), anon...), extra2...))
}

// A principal's failed calls count against it the same whether its view
// is built whole, built again from the view's rows (other examples), or
// read from the file that rebuild saved: a rebuild once kept only each
// entry's successful calls and dropped the entries whose calls all
// failed, and believed a principal with 90% failed calls as if all had
// succeeded.
func TestUsageRebuiltKeepsFailures(t *testing.T) {
	ctx := context.Background()
	dir := usageCatalog(t)
	long := time.Now().Add(-30 * 24 * time.Hour)
	uses := append(weatherUses("mcp:a", "get_weather", long, 0, 16), weatherUses("mcp:b", "get_weather", long, 4, 16)...)
	for _, e := range weatherUses("mcp:bad", "get_weather", long, 0, 12) {
		e.Count, e.Failed = 10, 9
		uses = append(uses, e)
	}
	for _, e := range weatherUses("mcp:bad", "send_email", long, 0, 6) {
		e.Count, e.Failed = 5, 5
		uses = append(uses, e)
	}
	beliefs := func(ix *Index) map[string]float32 {
		u := ix.usage.Load()
		out := map[string]float32{}
		for p, name := range u.principals {
			out[name] = u.voice.belief[p]
		}
		return out
	}
	extra := []Use{{Request: "what time is it in tokyo", Tool: "calculator", Principal: "(examples)", Count: 1}}
	extra2 := []Use{{Request: "multiply these two numbers", Tool: "calculator", Principal: "(examples)", Count: 1}}
	whole := savedUsageIndex(t, dir, "")
	if _, err := whole.SetUsage(ctx, append(append([]Use(nil), uses...), extra2...)); err != nil {
		t.Fatal(err)
	}
	want := beliefs(whole)
	if want["mcp:bad"] >= want["mcp:a"]/2 {
		t.Fatalf("built whole, the principal whose calls fail is believed %v, mcp:a %v: the test needs it far below", want["mcp:bad"], want["mcp:a"])
	}
	path := filepath.Join(t.TempDir(), "usage.db.view")
	calls := 0
	ix := savedUsageIndex(t, dir, path)
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 1, Extra: extra, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	ix.WaitSaves()
	ix.usage.saved.at = time.Time{} // the rebuild's view saved too, within the minute
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 1, Extra: extra2, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("other examples: %d reads of the history, want 1 (the rebuild from the rows is what is tested)", calls)
	}
	ix.WaitSaves()
	if got := beliefs(ix); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rebuilt from the view's rows, beliefs %v; built whole %v", got, want)
	}
	again := savedUsageIndex(t, dir, path)
	if _, err := again.SetUsageSaved(ctx, History{Source: "s", Version: 1, Extra: extra2, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("the saved view was not taken: %d reads of the history", calls)
	}
	again.WaitSaves()
	if got := beliefs(again); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read from the saved view, beliefs %v; built whole %v", got, want)
	}
	// A small change (a delta: an entry of mcp:bad's whose calls all
	// failed now, one of its failed-only ones gone, one more), then other
	// examples again: built from the rows the delta left, as a whole build
	// of the history as it is now.
	changed := []Use{uses[32], {}}
	changed[0].Count, changed[0].Failed = 10, 10
	changed[1] = Use{Request: "forecast for oslo today", Tool: "send_email", Principal: "mcp:bad", Count: 7, Failed: 7, First: long, ID: "bad/new"}
	removed := []string{uses[len(uses)-2].ID}
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Extra: extra2, Load: loads(uses, &calls),
		Since: func(context.Context, int64) ([]Use, []string, error) { return changed, removed, nil }}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: 2, Extra: extra, Load: loads(uses, &calls)}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("a delta, then other examples: %d reads of the history, want none more", calls-1)
	}
	now := append(slices.Clone(uses[:len(uses)-2]), uses[len(uses)-1], changed[1])
	now[32] = changed[0]
	fresh := savedUsageIndex(t, dir, "")
	if _, err := fresh.SetUsage(ctx, append(now, extra...)); err != nil {
		t.Fatal(err)
	}
	if got, want := beliefs(ix), beliefs(fresh); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after a delta, rebuilt from the rows: beliefs %v; built whole %v", got, want)
	}
}
