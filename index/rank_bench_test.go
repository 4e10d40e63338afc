package index

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/registry"
)

// benchWords is a vocabulary for synthetic tool documents and queries.
var benchWords = strings.Fields(`file read write list directory search web page fetch url
http request response json csv parse convert image resize crop video audio transcribe
translate language text summary summarize email send message chat slack calendar event
meeting schedule weather forecast temperature city map route distance location address
stock price market currency exchange rate payment invoice order product shop cart
database query table sql index record user account login password token key secret
git commit branch merge status diff log repository code test build deploy server
container docker kubernetes cluster node pod service network port dns domain certificate
backup restore archive compress zip unzip upload download storage bucket cloud disk
memory cpu process kill monitor metric alert notify report chart plot graph statistics
math calculate number sum average random date time timezone convert unit recipe food
movie music song playlist book author news article paper research citation dictionary
word definition synonym spell grammar code review lint format compile run debug
pdf document page render print scan ocr qr barcode color font design layout template`)

// synthDocs makes n synthetic tool documents with Zipf-distributed words.
func synthDocs(n int) []document {
	r := rand.New(rand.NewPCG(42, uint64(n)))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = benchWords[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
	docs := make([]document, n)
	for i := range docs {
		name := fmt.Sprintf("%s_%s_%d", benchWords[r.IntN(len(benchWords))], benchWords[r.IntN(len(benchWords))], i)
		d := document{name: name, fields: []field{
			{strings.ReplaceAll(name, "_", " "), weightName},
			{words(12 + r.IntN(12)), weightDescription},
			{words(3), weightKeywords},
			{"", weightArgs},
			{words(40 + r.IntN(60)), weightPrompt},
		}}
		d.hash = fmt.Sprintf("%x", i)
		docs[i] = d
	}
	return docs
}

func synthSource(docs []document) source {
	byName := map[string]int{}
	for i, d := range docs {
		byName[d.name] = i
	}
	return source{rev: 1, n: len(docs),
		all: func(*docMemo) []document { return docs },
		get: func(n string) (document, bool) {
			i, ok := byName[n]
			if !ok {
				return document{}, false
			}
			return docs[i], true
		},
		has: func(n string) bool { _, ok := byName[n]; return ok },
	}
}

// BenchmarkRank measures rank latency at 1k, 10k and 100k tools with the
// built-in embedder, beside chromem-go's own QueryEmbedding over the very
// same stored vectors (top 10, and the whole collection as Rank needs for
// a full ranking), and the flat-matrix scan Rank uses; -exhaustive: every
// tool scored exactly rather than pruned (the same hits).
//
//	go test -run '^$' -bench BenchmarkRank -benchtime 200x ./index/
func BenchmarkRank(b *testing.B) {
	ctx := context.Background()
	emb, err := builtin.New()
	if err != nil {
		b.Fatal(err)
	}
	queries := []string{"what's the weather forecast for my city", "convert this pdf document to an image",
		"send an email about the meeting schedule", "show git status of the repository",
		"stock price and currency exchange rate", "summarize the news article"}
	for _, n := range []int{1000, 10000, 100000} {
		ix := New(emb, Options{NoCache: true, Logger: quiet(), BatchSize: 4096})
		ix.upd.Lock()
		err := ix.updateLocked(ctx, synthSource(synthDocs(n)), nil, nil, true)
		ix.upd.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		v := ix.v
		qvecs := make([][]float32, len(queries))
		for i, q := range queries {
			qvecs[i], _ = v.emb.EmbedQuery(ctx, q)
			qvecs[i] = normalized(qvecs[i])
		}
		for _, exhaustive := range []bool{false, true} {
			name := "hybrid-k10"
			if exhaustive {
				name += "-exhaustive" // every tool scored: what pruning saves
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10, Exhaustive: exhaustive}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("n=%d/hybrid-all", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				ix.Rank(ctx, Query{Text: queries[i%len(queries)]})
			}
		})
		for _, exhaustive := range []bool{false, true} {
			name := "bm25-k10"
			if exhaustive {
				name += "-exhaustive"
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10, Mode: Lexical, Exhaustive: exhaustive})
				}
			})
		}
		b.Run(fmt.Sprintf("n=%d/query-embedding", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				v.emb.EmbedQuery(ctx, queries[i%len(queries)])
			}
		})
		b.Run(fmt.Sprintf("n=%d/flat-scan", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				v.denseScores(qvecs[i%len(qvecs)], nil)
			}
		})
		for _, k := range []int{10, n} {
			b.Run(fmt.Sprintf("n=%d/chromem-QueryEmbedding-k%d", n, k), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := v.st.col.QueryEmbedding(ctx, qvecs[i%len(qvecs)], k, nil, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBuild measures building the index from scratch (fit, embed every
// document with the built-in embedder, BM25, matrix, and the calibration of
// the answerability: the probes ranked against the catalog), without a
// cache; calibrate-only is the calibration alone on the built index.
//
//	go test -run '^$' -bench BenchmarkBuild -benchtime 1x ./index/
func BenchmarkBuild(b *testing.B) {
	ctx := context.Background()
	emb, err := builtin.New()
	if err != nil {
		b.Fatal(err)
	}
	m, err := learn.Default()
	if err != nil || m.Calib == nil {
		b.Fatal("the shipped model has no calibration", err)
	}
	for _, n := range []int{1000, 10000, 100000} {
		docs := synthDocs(n)
		var ix *Index
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				ix = New(emb, Options{NoCache: true, Logger: quiet()})
				ix.upd.Lock()
				err := ix.updateLocked(ctx, synthSource(docs), nil, nil, true)
				if err == nil {
					err = ix.calibrateLocked(ctx)
				}
				ix.upd.Unlock()
				if err != nil {
					b.Fatal(err)
				}
				if _, p := ix.ProbeLogits(); len(p) != len(m.Calib.Probes) {
					b.Fatalf("%d probe logits", len(p))
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/calibrate-only", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ix.rankProbes(ctx, ix.v, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// synthToolSource is synthSource over registry tools: every update builds
// the documents from the tools (argument schema parsed, text hashed), as a
// Sync over a registry catalog does.
func synthToolSource(docs []document) source {
	tools := make([]*registry.Tool, len(docs))
	byName := map[string]int{}
	for i, d := range docs {
		tools[i] = &registry.Tool{Name: d.name, Description: d.fields[1].text,
			Keywords: strings.Fields(d.fields[2].text), Prompt: d.fields[4].text,
			Args: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file or directory to work on"},"limit":{"type":"integer","description":"at most this many results"}}}`)}
		byName[d.name] = i
	}
	return source{rev: 1, n: len(tools),
		all: func(*docMemo) []document {
			out := make([]document, len(tools))
			for i, t := range tools {
				out[i] = newDocument(t)
			}
			return out
		},
		get: func(n string) (document, bool) {
			i, ok := byName[n]
			if !ok {
				return document{}, false
			}
			return newDocument(tools[i]), true
		},
		has: func(n string) bool { _, ok := byName[n]; return ok },
	}
}

// BenchmarkRestart measures a restart with nothing changed: build the
// documents from the tools, load the cache file, restore the fit, rebuild
// BM25 and the matrix, embed nothing.
//
//	go test -run '^$' -bench BenchmarkRestart -benchtime 1x ./index/
func BenchmarkRestart(b *testing.B) {
	ctx := context.Background()
	emb, err := builtin.New()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 10000, 100000} {
		src := synthToolSource(synthDocs(n))
		src.dirs = []string{fmt.Sprintf("/synthetic/%d", n)}
		cache := b.TempDir()
		sync := func() *Index {
			ix := New(emb, Options{CacheDir: cache, Logger: quiet()})
			ix.upd.Lock()
			defer ix.upd.Unlock()
			if err := ix.updateLocked(ctx, src, nil, nil, true); err != nil {
				b.Fatal(err)
			}
			if err := ix.calibrateLocked(ctx); err != nil { // the cached probe logits
				b.Fatal(err)
			}
			if err := ix.saveLocked(); err != nil {
				b.Fatal(err)
			}
			return ix
		}
		sync()
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if st := sync().Stats(); st.Vectors != n {
					b.Fatalf("restart: %+v", st)
				}
			}
		})
	}
}
