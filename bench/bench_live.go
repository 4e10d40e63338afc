package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

	// Registry-side timestamps: when the change naming a tool arrived.
	var mu sync.Mutex
	seen := map[string]time.Time{}
	sub := eng.Registry().Subscribe(ctx)
	go func() {
		for ch := range sub {
			now := time.Now()
			mu.Lock()
			for _, n := range ch.Upserted {
				if _, ok := seen[n]; !ok {
					seen[n] = now
				}
			}
			mu.Unlock()
		}
	}()
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
		ok := false
		for time.Since(start) < 5*time.Second {
			r, err := ix.Rank(ctx, index.Query{Text: "tell me about " + word, K: 1})
			if err != nil {
				return nil, err
			}
			if len(r.Hits) > 0 && r.Hits[0].Name == name && !r.Degraded {
				rankLat = append(rankLat, time.Since(start))
				ok = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !ok {
			lr.Misses++
		}
		// The index may have the tool before the timestamp subscriber has
		// seen its change (both receive it): wait for that too.
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			t, ok := seen[name]
			mu.Unlock()
			if ok {
				regLat = append(regLat, t.Sub(start))
				break
			}
			if time.Now().After(deadline) {
				break
			}
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
