package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
)

// synthUses makes n usage events over the tools of docs: for a tool, a
// request of 4 to 7 words of its description and 0 to 2 other words (so
// that the history says something, and the weight is not 0), a tenth of
// the events repeats of an earlier request (merged, as the store merges
// them), spread over 5 agents.
func synthUses(docs []document, n int) []Use {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	seen := map[string]int{}
	var out []Use
	for i := 0; i < n; i++ {
		if len(out) > 0 && r.IntN(10) == 0 {
			out[r.IntN(len(out))].Count++
			continue
		}
		d := docs[r.IntN(len(docs))]
		desc := strings.Fields(d.fields[1].text)
		w := make([]string, 0, 9)
		for k := 4 + r.IntN(4); k > 0; k-- {
			w = append(w, desc[r.IntN(len(desc))])
		}
		for k := r.IntN(3); k > 0; k-- {
			w = append(w, benchWords[r.IntN(len(benchWords))])
		}
		req := strings.Join(w, " ")
		if k, ok := seen[req]; ok {
			out[k].Count++
			continue
		}
		seen[req] = len(out)
		out = append(out, Use{Request: req, Tool: d.name, Principal: fmt.Sprintf("agent%d", r.IntN(5)),
			Count: 1, Last: time.Unix(1.7e9, 0)})
	}
	return out
}

// BenchmarkRankUsage measures a ranking at 10k tools with no usage and
// with 100k usage events (merged into fewer entries, as the store merges
// them; the store's default caps would keep 50,000 at most), the owner's,
// and the same with a crowd of 2,000 principals besides, in one run; and
// logs what applying the history costs.
//
//	go test -run '^$' -bench BenchmarkRankUsage -benchtime 2000x ./index/
func BenchmarkRankUsage(b *testing.B) {
	ctx := context.Background()
	ix, docs := synthUsageIndex(b)
	syncSynth(b, ix, docs)
	uses := synthUses(docs, 100000)
	queries := []string{"what's the weather forecast for my city", "convert this pdf document to an image",
		"send an email about the meeting schedule", "show git status of the repository",
		"stock price and currency exchange rate", "summarize the news article"}
	rank := func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("events=0", rank)
	// The history as the owner's (one voice, as before principals), and
	// with a crowd of 2,000 new principals making one claim each besides
	// (judged: voices, groups of candidates, cross trust).
	crowd := owned(uses)
	for i, u := range synthUses(docs, 2000) {
		u.Principal, u.Role = fmt.Sprint("9p:new", i), RoleOther
		crowd = append(crowd, u)
	}
	for _, h := range []struct {
		name string
		uses []Use
	}{{"owner", owned(uses)}, {"owner+crowd", crowd}} {
		if _, err := ix.SetUsage(ctx, h.uses); err != nil { // embeds every request once
			b.Fatal(err)
		}
		runtime.GC() // the garbage of SetUsage is not the rankings'
		b.Run("events=100k/"+h.name, func(b *testing.B) {
			fit := ix.UsageFit()
			if fit.Weight == 0 {
				b.Fatalf("the history has no weight (%+v): the benchmark would measure nothing", fit)
			}
			b.ReportMetric(float64(fit.Entries), "entries")
			b.ReportMetric(fit.Weight, "weight")
			rank(b)
		})
	}
	// What applying the history costs (the request vectors cached, as
	// at a restart; the weight chosen by leave-one-out), once.
	start := time.Now()
	fit, err := ix.SetUsage(ctx, uses)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("SetUsage of %d entries (vectors cached): %v; %+v", len(uses), time.Since(start), fit)
}

// BenchmarkUsageTrust measures the trust of every entry of a history of
// 100k synthetic events at 10k tools (usagetrust.go), what a whole build
// adds for it.
//
//	go test -run '^$' -bench BenchmarkUsageTrust -benchtime 3x ./index/
func BenchmarkUsageTrust(b *testing.B) {
	ctx := context.Background()
	ix, docs := synthUsageIndex(b)
	u, _, err := ix.buildUsage(ctx, orderedUses(synthUses(docs, 100000)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(u.n), "entries")
	for b.Loop() {
		if err := u.setTrust(ctx, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// synthUsageIndex is an empty index of the built-in embedder, which the
// usage signal embeds with too, and 10,000 synthetic tools for it.
func synthUsageIndex(b *testing.B) (*Index, []document) {
	emb, err := builtin.New()
	if err != nil {
		b.Fatal(err)
	}
	return New(emb, Options{NoCache: true, Logger: quiet(), BatchSize: 4096, UsageEmbedder: emb}), synthDocs(10000)
}

// BenchmarkUsageReload measures what a server's reload after one recorded
// call costs with 100k synthetic events at 10k tools: the view in effect
// brought up to date in memory (delta), against the history built whole
// (whole), as it was before.
//
//	go test -run '^$' -bench BenchmarkUsageReload -benchtime 20x ./index/
func BenchmarkUsageReload(b *testing.B) {
	ctx := context.Background()
	ix, docs := synthUsageIndex(b)
	ix.opts.UsageViewPath = filepath.Join(b.TempDir(), "usage.db.view")
	syncSynth(b, ix, docs)
	uses := synthUses(docs, 100000)
	for i := range uses {
		uses[i].ID = fmt.Sprint(i)
	}
	load := func(context.Context) ([]Use, error) { return uses, nil }
	version := int64(1)
	if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: version, Load: load}); err != nil {
		b.Fatal(err)
	}
	b.Run("delta", func(b *testing.B) {
		for b.Loop() {
			version++
			added := Use{Request: fmt.Sprint("show the weather forecast ", version), Tool: docs[0].name, Principal: "agent0", Count: 1, ID: fmt.Sprint("new", version)}
			since := func(context.Context, int64) ([]Use, []string, error) { return []Use{added}, nil, nil }
			if _, err := ix.SetUsageSaved(ctx, History{Source: "s", Version: version, Load: load, Since: since}); err != nil {
				b.Fatal(err)
			}
		}
		ix.WaitSaves()
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			if _, err := ix.SetUsage(ctx, uses); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same history as the owner's: no principal judged (no rankings
	// of their requests, no cross trust, the words weighed alike).
	b.Run("whole-owner", func(b *testing.B) {
		mine := owned(uses)
		for b.Loop() {
			if _, err := ix.SetUsage(ctx, mine); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// syncSynth gives ix the catalog of docs (embedded in batches).
func syncSynth(b *testing.B, ix *Index, docs []document) {
	ix.upd.Lock()
	err := ix.updateLocked(context.Background(), synthSource(docs), nil, nil, true)
	ix.upd.Unlock()
	if err != nil {
		b.Fatal(err)
	}
}
