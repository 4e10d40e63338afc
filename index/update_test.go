package index

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An edit past the embedded start of a long prompt changes the document's
// lexical entry but not its vector: a live index must take it in.
func TestPromptTailEditReachesTheLexicalIndex(t *testing.T) {
	ctx := context.Background()
	dir := copyTools(t)
	long := strings.Repeat("filler words about nothing in particular. ", 60) // past maxPromptChars
	writeMeta(t, dir, "get_weather", `{"description":"Weather report.","cmd":"cat","prompt":"`+long+`"}`)
	ix := New(newHashEmbedder(64), Options{NoCache: true, Logger: quiet()})
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	writeMeta(t, dir, "get_weather", `{"description":"Weather report.","cmd":"cat","prompt":"`+long+` zanzibarquux"}`)
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	r, err := ix.Rank(ctx, Query{Text: "zanzibarquux", K: 1, Mode: Lexical})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) == 0 || r.Hits[0].Name != "get_weather" || r.Hits[0].Lexical == 0 {
		t.Fatalf("the word added at the prompt's end is not indexed: %+v", r.Hits)
	}
}

// Two tools with the same text share one stored vector: removing one
// leaves it to the other (a restart then embeds nothing).
func TestRemovingATwinKeepsTheSharedVector(t *testing.T) {
	ctx := context.Background()
	dir, cache := copyTools(t), t.TempDir()
	twin := `{"description":"Weather report.","cmd":"cat"}`
	writeMeta(t, dir, "weather_now", twin)
	writeMeta(t, dir, "weather-now", twin) // the same words, so the same text
	ix := New(newHashEmbedder(64), Options{CacheDir: cache, Logger: quiet()})
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "weather_now.meta")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	emb := newHashEmbedder(64)
	again := New(emb, Options{CacheDir: cache, Logger: quiet()})
	if err := again.Sync(ctx, loadReg(t, dir).Catalog()); err != nil {
		t.Fatal(err)
	}
	if n := emb.st.docTexts.Load(); n != 0 {
		t.Fatalf("a restart embedded %d texts: the removed twin took the other's vector with it", n)
	}
}
