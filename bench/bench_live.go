package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// runLive measures a .meta file written → rankable, through the real
// registry watcher and index.Follow, on a catalog of cfg.LiveSize tools.
func runLive(ctx context.Context, cfg Config, pool *textPool) (*LiveResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir := filepath.Join(cfg.WorkDir, "live-tools")
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	if err := writeSynthetic(dir, cfg.LiveSize, pool); err != nil {
		return nil, err
	}
	emb, err := cfg.NewEmbedder()
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, Embedder: emb, NoCache: true, NoThresholds: true, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	ix := eng.Index()

	// Run watches the directory (writes before its watch is in place are
	// found by the rescan it starts with) and keeps the index following.
	runDone := make(chan struct{})
	var runErr error
	go func() {
		defer close(runDone)
		runErr = eng.Run(ctx)
	}()
	defer func() { cancel(); <-runDone }()

	lr := &LiveResult{Tools: cfg.LiveSize}
	var regLat, rankLat []time.Duration
	for i := 0; i < cfg.LiveUpdates; i++ {
		word := liveWord(i)
		name := fmt.Sprintf("live-%04d", i)
		data, _ := json.Marshal(map[string]any{
			"description": "Benchmark tool " + word + ": answers questions about " + word + ".",
			"prompt":      "Use this tool when the user asks about " + word + ".",
			"cmd":         "cat",
		})
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := os.Rename(tmp, filepath.Join(dir, name+".meta")); err != nil {
			return nil, err
		}
		// The registry publishes its catalog before it tells the index: a
		// tool is looked up in the catalog first, then ranked, in each
		// round, so the catalog's time can never come after the index's.
		// (A subscriber's time stamps, taken when its goroutine ran, could:
		// under load it ran after the index had the tool.)
		ok := false
		regAt := time.Duration(-1)
		for time.Since(start) < 5*time.Second {
			if regAt < 0 {
				if _, in := eng.Registry().Catalog().Get(name); in {
					regAt = time.Since(start)
				}
			}
			r, err := ix.Rank(ctx, index.Query{Text: "tell me about " + word, K: 1})
			if err != nil {
				return nil, err
			}
			if len(r.Hits) > 0 && r.Hits[0].Name == name && !r.Degraded {
				at := time.Since(start)
				if regAt < 0 {
					regAt = at // published between the lookup and the ranking
				}
				rankLat = append(rankLat, at)
				ok = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		if regAt >= 0 {
			regLat = append(regLat, regAt)
		}
		if !ok {
			lr.Misses++
		}
		select {
		case <-runDone:
			return nil, fmt.Errorf("the registry watcher stopped: %v", runErr)
		default:
		}
		time.Sleep(50 * time.Millisecond) // separate the writes
	}
	lr.Registry, lr.Rankable = Summarize(regLat), Summarize(rankLat)

	// Baseline: no Follow; a rescan and a fresh index over the catalog.
	var rebuild []time.Duration
	for i := 0; i < min(5, cfg.LiveUpdates); i++ {
		s := time.Now()
		r2 := registry.New(registry.Options{Dirs: []string{dir}, Logger: cfg.Logger})
		if err := r2.Load(ctx); err != nil {
			return nil, err
		}
		e2, err := cfg.NewEmbedder()
		if err != nil {
			return nil, err
		}
		ix2 := index.New(e2, index.Options{NoCache: true, Logger: cfg.Logger})
		if err := ix2.Sync(ctx, r2.Catalog()); err != nil {
			return nil, err
		}
		rebuild = append(rebuild, time.Since(s))
	}
	lr.Rebuild = Summarize(rebuild)
	return lr, nil
}

// liveWord is a made-up word no corpus contains, distinct per i.
func liveWord(i int) string {
	const letters = "bcdfghjklmnpqrstvwxz"
	b := []byte("zq")
	for j := 0; j < 4; j++ {
		b = append(b, letters[i%len(letters)])
		i /= len(letters)
	}
	return string(b) + "vy"
}
