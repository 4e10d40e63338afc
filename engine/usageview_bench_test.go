package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// BenchmarkUses: turning a store's 50,000 entries into the index's, as
// every whole read of the history does (a start, a reload after Forget).
func BenchmarkUses(b *testing.B) {
	entries := make([]usage.Entry, 50_000)
	now := time.Now()
	for i := range entries {
		text := fmt.Sprintf("Show the  git status of project %d and what changed since yesterday", i)
		entries[i] = usage.Entry{Key: usage.Key{Request: usage.Normalize(text), Tool: fmt.Sprint("tool", i%300), Agent: "claude", Principal: "mcp:claude"},
			Text: text, Count: 3, First: now, Last: now}
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := uses(entries, 0); len(out) != len(entries) {
			b.Fatal(len(out))
		}
	}
}
