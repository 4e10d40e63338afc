package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/usage"
)

// UsageResult holds what the usage history costs: rankings at Tools
// tools with no history and with Events usage events recorded (merged and
// capped by the store into Entries), measured in one run, and what the
// history adds to an engine's start.
type UsageResult struct {
	Tools   int `json:"tools"`
	Events  int `json:"events"`
	Entries int `json:"entries"`
	// Weight is the usage weight the engine chose (0 would mean the
	// history is not used, and the comparison measures nothing).
	Weight float64 `json:"weight"`
	// Rank without and with the history, and RankRatio their p50s'.
	Rank      Latency `json:"rank"`
	RankUsage Latency `json:"rankUsage"`
	RankRatio float64 `json:"rankRatio"`
	// Start is a warm engine start with an empty store, StartUsage with
	// the history, as serve and mcp start (the history applied in the
	// background, UsageLater); Apply is a start that waits for the
	// history to be applied (as rank does), over Start, with the view
	// the previous start saved beside the store (the history unchanged
	// since); ApplyBuilt the same with no saved view (the first start
	// after the history changed builds it and chooses its weight).
	Start      time.Duration `json:"start"`
	StartUsage time.Duration `json:"startUsage"`
	Apply      time.Duration `json:"apply"`
	ApplyBuilt time.Duration `json:"applyBuilt"`
	// ApplyDelta is the same after one more event was recorded (the
	// first rank after a call: the saved view brought up to date).
	ApplyDelta time.Duration `json:"applyDelta"`
}

// runUsage measures the usage history at cfg.UsageSize tools and
// cfg.UsageEvents events.
func runUsage(ctx context.Context, cfg Config, pool *textPool, queries []string, progress func(string)) (*UsageResult, error) {
	n := cfg.UsageSize
	ur := &UsageResult{Tools: n, Events: cfg.UsageEvents}
	dir := filepath.Join(cfg.WorkDir, "usage-tools")
	cache := filepath.Join(cfg.WorkDir, "usage-cache")
	db := filepath.Join(cfg.WorkDir, "usage.db")
	empty := filepath.Join(cfg.WorkDir, "usage-empty.db")
	for _, p := range []string{dir, cache, db, empty} {
		os.RemoveAll(p)
		defer os.RemoveAll(p)
	}
	progress(fmt.Sprintf("usage at %d tools: writing .meta files", n))
	if err := writeSynthetic(dir, n, pool); err != nil {
		return nil, err
	}

	progress(fmt.Sprintf("usage at %d tools: recording %d events", n, cfg.UsageEvents))
	store, _, err := usage.Open(ctx, db, usage.Options{})
	if err != nil {
		return nil, err
	}
	evs := synthEvents(n, pool, cfg.UsageEvents)
	var tool0 string
	if len(evs) > 0 {
		tool0 = evs[0].Tool
	}
	for len(evs) > 0 {
		k := min(len(evs), 2000)
		if err := store.Record(ctx, evs[:k]...); err != nil {
			store.Close()
			return nil, fmt.Errorf("recording usage: %w", err)
		}
		evs = evs[k:]
	}
	st, err := store.Stats(ctx)
	store.Close()
	if err != nil {
		return nil, err
	}
	ur.Entries = st.Entries

	// One engine builds the cache; then the starts are timed, each best of
	// three, the store opened as the commands open it.
	start := func(path string, later, fresh bool) (*engine.Engine, time.Duration, error) {
		emb, err := cfg.NewEmbedder()
		if err != nil {
			return nil, 0, err
		}
		runtime.GC()
		t0 := time.Now()
		s, _, err := usage.Open(ctx, path, usage.Options{})
		if err != nil {
			return nil, 0, err
		}
		if p := usage.NewFollower(s).DerivedPath(); p != "" && fresh {
			os.Remove(p) // no view saved: it is built
		}
		eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, Embedder: emb, CacheDir: cache,
			Logger: cfg.Logger, Usage: s, UsageLater: later})
		if err != nil {
			s.Close()
			return nil, 0, err
		}
		return eng, time.Since(t0), nil
	}
	best := func(path string, later, fresh bool) (time.Duration, error) {
		var b time.Duration
		for i := 0; i < 3; i++ {
			eng, d, err := start(path, later, fresh)
			if err != nil {
				return 0, err
			}
			eng.Close()
			if i == 0 || d < b {
				b = d
			}
		}
		return b, nil
	}
	progress(fmt.Sprintf("usage at %d tools: engine starts", n))
	if eng, _, err := start(empty, false, false); err != nil { // builds the index cache
		return nil, err
	} else {
		eng.Close()
	}
	if eng, _, err := start(db, false, false); err != nil { // caches the requests' vectors
		return nil, err
	} else {
		eng.Close()
	}
	if ur.Start, err = best(empty, true, false); err != nil {
		return nil, err
	}
	if ur.StartUsage, err = best(db, true, false); err != nil {
		return nil, err
	}
	built, err := best(db, false, true)
	if err != nil {
		return nil, err
	}
	applied, err := best(db, false, false)
	if err != nil {
		return nil, err
	}
	ur.Apply, ur.ApplyBuilt = applied-ur.Start, built-ur.Start
	var delta time.Duration
	for i := 0; i < 3 && tool0 != ""; i++ {
		s, _, err := usage.Open(ctx, db, usage.Options{})
		if err != nil {
			return nil, err
		}
		err = s.Record(ctx, usage.Event{Request: fmt.Sprintf("one more request number %d", i), Tool: tool0, OK: true, Source: usage.SourceAPI})
		s.Close()
		if err != nil {
			return nil, err
		}
		eng, d, err := start(db, false, false)
		if err != nil {
			return nil, err
		}
		eng.Close()
		if i == 0 || d < delta {
			delta = d
		}
	}
	ur.ApplyDelta = delta - ur.Start

	progress(fmt.Sprintf("usage at %d tools: rank latency without and with the history", n))
	plain, _, err := start(empty, false, false)
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	used, _, err := start(db, false, false)
	if err != nil {
		return nil, err
	}
	defer used.Close()
	ur.Weight = used.UsageFit().Weight
	qs := make([]string, cfg.Queries)
	for i := range qs {
		qs[i] = queries[(i*104729)%len(queries)]
	}
	// Alternate the two, query by query, so that the machine's moods
	// fall on both alike.
	var a, b []time.Duration
	for i, q := range append(qs[:5:5], qs...) {
		for k, ix := range []*index.Index{plain.Index(), used.Index()} {
			s := time.Now()
			if _, err := ix.Rank(ctx, index.Query{Text: q, K: 10}); err != nil {
				return nil, err
			}
			if d := time.Since(s); i >= 5 && k == 0 {
				a = append(a, d)
			} else if i >= 5 {
				b = append(b, d)
			}
		}
	}
	ur.Rank, ur.RankUsage = Summarize(a), Summarize(b)
	if ur.Rank.P50 > 0 {
		ur.RankRatio = float64(ur.RankUsage.P50) / float64(ur.Rank.P50)
	}
	return ur, nil
}

// synthEvents makes n usage events over the synthetic tools (as
// writeSynthetic names them): for a tool, a request of 4 to 7 words of
// its description and up to 2 words of another's, from 5 agents; a tenth
// repeat an earlier request.
func synthEvents(tools int, pool *textPool, n int) []usage.Event {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	var out []usage.Event
	now := time.Now()
	for i := 0; i < n; i++ {
		if len(out) > 0 && r.IntN(10) == 0 {
			ev := out[r.IntN(len(out))]
			ev.ID = ""
			out = append(out, ev)
			continue
		}
		t := r.IntN(tools)
		desc := strings.Fields(pool.descs[t%len(pool.descs)])
		other := strings.Fields(pool.descs[r.IntN(len(pool.descs))])
		w := make([]string, 0, 9)
		for k := 4 + r.IntN(4); k > 0; k-- {
			w = append(w, desc[r.IntN(len(desc))])
		}
		for k := r.IntN(3); k > 0; k-- {
			w = append(w, other[r.IntN(len(other))])
		}
		out = append(out, usage.Event{Request: strings.Join(w, " "), Tool: synthName(pool.names[t%len(pool.names)], t),
			OK: true, Agent: fmt.Sprintf("agent%d", r.IntN(5)), Time: now, Source: usage.SourceImport})
	}
	return out
}
