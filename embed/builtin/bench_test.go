package builtin

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchDocs makes n synthetic tool documents of realistic length: about
// 120 words from a list of words tool descriptions use, one in ten an
// identifier the table does not know.
func benchDocs(n int) []string {
	words := strings.Fields(`weather forecast city email send message convert currency amount stock price
	image resize translate text language calendar event schedule meeting file compress archive search
	web news music playlist recipe nutrition flight hotel booking payment invoice database query user
	account create delete update list return result parameter string number date time location address
	report summary analyze data chart upload download share link password reset order product review
	rating movie book author weather temperature country population health doctor patient insurance
	vehicle route traffic map restaurant menu reservation ticket concert sport score team player game
	job salary resume company employee customer support chat notification reminder task project note`)
	docs := make([]string, n)
	var b strings.Builder
	for i := range docs {
		b.Reset()
		fmt.Fprintf(&b, "tool_%d_%s_%s: ", i, words[i%len(words)], words[(i*7)%len(words)])
		for j := 0; j < 120; j++ {
			if j%10 == 9 {
				fmt.Fprintf(&b, "acct%dId ", (i*13+j)%5000)
				continue
			}
			b.WriteString(words[(i*31+j*17)%len(words)])
			b.WriteByte(' ')
		}
		docs[i] = b.String()
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

// BenchmarkEmbedQueryPRF is BenchmarkEmbedQuery with query feedback on
// (options that are off in the shipped embedder), for a 1,000-tool catalog.
func BenchmarkEmbedQueryPRF(b *testing.B) {
	base, err := New()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	docs := benchDocs(1000)
	for _, mode := range []struct {
		name string
		prf  int
	}{{"term", PRFTerm}, {"exact", PRFExact}} {
		b.Run(mode.name, func(b *testing.B) {
			o := DefaultOptions()
			o.ID = "builtin/bench"
			o.PRF, o.PRFBeta, o.PRFK, o.PRFMaxDocs, o.PRFPower = mode.prf, 0.15, 3, len(docs), 1
			e, err := FromTable(base.Table(), o)
			if err != nil {
				b.Fatal(err)
			}
			f, err := e.Fit(ctx, docs)
			if err != nil {
				b.Fatal(err)
			}
			q := "Can you tell me what the weather forecast is for Paris this weekend, and convert 20 EUR to USD?"
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.EmbedQuery(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
