package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

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
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: cfg.Logger})
	if err := reg.Load(ctx); err != nil {
		return nil, err
	}
	emb, err := cfg.NewEmbedder()
	if err != nil {
		return nil, err
	}
	ix := index.New(emb, index.Options{NoCache: true, Logger: cfg.Logger})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		return nil, err
	}

	// Registry-side timestamps: when the change naming a tool arrived.
	var mu sync.Mutex
	seen := map[string]time.Time{}
	sub := reg.Subscribe(ctx)
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
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ix.Follow(ctx, reg.Subscribe(ctx)) }()
	watchErr := make(chan error, 1)
	go func() { defer wg.Done(); watchErr <- reg.Watch(ctx) }()
	defer wg.Wait()
	defer cancel()
	time.Sleep(200 * time.Millisecond) // let the watcher start

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
		mu.Lock()
		if t, ok := seen[name]; ok {
			regLat = append(regLat, t.Sub(start))
		}
		mu.Unlock()
		select {
		case err := <-watchErr:
			return nil, fmt.Errorf("the registry watcher stopped: %w", err)
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
