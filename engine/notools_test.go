package engine

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// Options.NoTools: an answer ranked on a catalog without a tool carries
// its reason, with and without thresholds, for the engine and a session's
// overlay alike; once a tool is there, answers are as usual.
func TestNoToolsReason(t *testing.T) {
	for _, noThr := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "tools")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const why = "no tool directory: make one"
		eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: noThr, Logger: slog.New(slog.DiscardHandler),
			NoTools: func(cat *registry.Catalog) string { return why }})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		ov := eng.NewOverlay("s1")
		defer ov.Close()
		for name, rank := range map[string]func(context.Context, Request) (Answer, error){"engine": eng.Rank, "overlay": ov.Rank} {
			a, err := rank(ctx, Request{Query: "will it rain"})
			if err != nil {
				t.Fatal(err)
			}
			if !a.NoToolFits || a.Reason != why || len(a.Tools) != 0 {
				t.Errorf("no thresholds %v, %s, empty catalog: %+v; want no tool fits, %q", noThr, name, a, why)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "weather.meta"), []byte(`{"description":"Weather forecast: will it rain","cmd":"true"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		full, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: noThr, Logger: slog.New(slog.DiscardHandler),
			NoTools: func(cat *registry.Catalog) string { return why }})
		if err != nil {
			t.Fatal(err)
		}
		defer full.Close()
		a, err := full.Rank(ctx, Request{Query: "will it rain"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Reason == why {
			t.Errorf("no thresholds %v: the reason stays with a tool in the catalog: %+v", noThr, a)
		}
	}
}
