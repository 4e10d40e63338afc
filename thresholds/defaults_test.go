package thresholds

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// offerWithDefaults ranks msg against the tools in dir with the built-in
// embedder, the shipped model and the shipped thresholds: what a bare
// `toolsrv rank` does.
func offerWithDefaults(t *testing.T, dir string, msgs ...string) []Selection {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: log})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ix := index.New(emb, index.Options{NoCache: true, Logger: log})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	pol, src, err := Load(emb.ID(), LoadOptions{Getenv: func(string) string { return "" }, Dir: t.TempDir()})
	if err != nil || src.Kind != FromShipped {
		t.Fatalf("shipped defaults: %v (%+v)", err, src)
	}
	var out []Selection
	for _, msg := range msgs {
		sel, _, err := pol.Offer(ctx, ix, reg.Catalog(), index.Query{Text: msg, K: 10}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sel)
	}
	return out
}

// TestDefaultsOnTheExamples: with the shipped defaults, a request no
// example tool serves gets "no tool fits", and a clear one gets its tool
// first and few companions.
func TestDefaultsOnTheExamples(t *testing.T) {
	sels := offerWithDefaults(t, filepath.Join("..", "examples", "tools"),
		"what's the weather like on mars",
		"show me what changed in my git working tree",
		"compress this folder into a zip file")
	if !sels[0].NoToolFits {
		t.Errorf("weather on mars: offered %v (%s), want no tool fits", sels[0].Names(), sels[0].Reason)
	}
	if n := sels[1].Names(); len(n) == 0 || !slices.Contains(n, "git_diff") && !slices.Contains(n, "git_status") {
		t.Errorf("git changes: offered %v (%s)", n, sels[1].Reason)
	}
	if n := sels[2].Names(); len(n) == 0 || n[0] != "archive_create" {
		t.Errorf("compress: offered %v (%s)", n, sels[2].Reason)
	}
}

// TestDefaultsSmallCatalog: in a catalog of three tools, a weather
// question is offered the weather tool alone.
func TestDefaultsSmallCatalog(t *testing.T) {
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"weather.meta":  `{"description":"Current weather forecast for a city","keywords":["rain","temperature"],"args":{"type":"object","properties":{"city":{"type":"string"}}},"cmd":"/bin/cat"}`,
		"git_push.meta": `{"description":"Push the current git branch to its remote","tier":"cold","cmd":"/bin/true"}`,
		"whoami.meta":   `{"description":"Say which server, session and agent called","tier":"hot","readOnly":true,"cmd":"/bin/true"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sel := offerWithDefaults(t, dir, "will it rain tomorrow?")[0]
	if n := sel.Names(); !slices.Equal(n, []string{"weather"}) {
		t.Errorf("offered %v (%s), want the weather tool alone", n, sel.Reason)
	}
}

// The built-in embedder finds the thresholds shipped for it, exactly; its
// fitted IDs ("+fit-…") belong to the same family and find them too.
func TestShippedForTheBuiltinEmbedder(t *testing.T) {
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	f, exact, ok := Shipped(emb.ID())
	if !ok || !exact || f.Embedder != emb.ID() {
		t.Fatalf("Shipped(%q) = %+v, exact %v, ok %v: want the file shipped for it (thresholds/defaults/%s.json)", emb.ID(), f, exact, ok, Key(emb.ID()))
	}
	fit, err := emb.Fit(context.Background(), []string{"read a file", "list a directory"})
	if err != nil {
		t.Fatal(err)
	}
	if g, _, ok := Shipped(fit.ID()); !ok || g.Embedder != f.Embedder {
		t.Errorf("Shipped(%q) = %+v, %v: want the built-in embedder's family defaults", fit.ID(), g, ok)
	}
}
