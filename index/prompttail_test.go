package index

import (
	"context"
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
