package builtin

import (
	"context"
	"fmt"
	"testing"
)

// benchDocs makes n synthetic tool documents of realistic length.
func benchDocs(n int) []string {
	words := []string{"weather", "forecast", "city", "email", "send", "message", "convert", "currency",
		"amount", "stock", "price", "image", "resize", "translate", "text", "language", "calendar",
		"event", "schedule", "meeting", "file", "compress", "archive", "search", "web", "news", "music",
		"playlist", "recipe", "nutrition", "flight", "hotel", "booking", "payment", "invoice", "database"}
	docs := make([]string, n)
	for i := range docs {
		s := fmt.Sprintf("tool_%d_%s_%s: ", i, words[i%len(words)], words[(i*7)%len(words)])
		for j := 0; j < 60; j++ {
			s += words[(i*31+j*17)%len(words)] + fmt.Sprintf(" w%d ", (i*13+j)%5000)
		}
		docs[i] = s
	}
	return docs
}

func BenchmarkEmbedQuery(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	f, _ := e.Fit(ctx, benchDocs(1000))
	q := "Can you tell me what the weather forecast is for Paris this weekend, and convert 20 EUR to USD?"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.EmbedQuery(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndex10k is the embedder's share of indexing 10,000 tools: Fit
// plus EmbedDocuments.
func BenchmarkIndex10k(b *testing.B) {
	e, err := New()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	docs := benchDocs(10000)
	b.ReportAllocs()
	for b.Loop() {
		f, err := e.Fit(ctx, docs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.EmbedDocuments(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}
