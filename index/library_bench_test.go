package index

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/toolsrv/toolsrv/embed/ollama"
)

// fakeEmbedServer answers Ollama's /api/embed (request {"model",
// "input"}; response {"model","embeddings"}) at once with a deterministic
// unit vector of dim per text: the wire contract of a server, without a
// model's time. texts, if set, counts the texts it embedded.
func fakeEmbedServer(b testing.TB, dim int, texts *atomic.Int64) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		if texts != nil {
			texts.Add(int64(len(req.Input)))
		}
		embs := make([][]float32, len(req.Input))
		for i, s := range req.Input {
			h := fnv.New64a()
			h.Write([]byte(s))
			x := h.Sum64()
			v := make([]float32, dim)
			var sq float64
			for k := range v {
				x = x*6364136223846793005 + 1442695040888963407
				v[k] = float32(int64(x>>11)%1000)/1000 + 0.001
				sq += float64(v[k] * v[k])
			}
			for k := range v {
				v[k] /= float32(math.Sqrt(sq))
			}
			embs[i] = v
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": embs})
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkVectorLibrary measures what the vector library (library.go)
// costs and saves, with the Ollama embedder (its real client) against a
// local server that answers /api/embed at once (no model time: the
// embedding saved is a lower bound of a real server's), 1,000 synthetic
// tools, 768 dimensions, each pair in one run:
//
//   - rank/embedded and rank/from-library: Rank (top 10) over an index
//     whose vectors were embedded, and over one whose vectors came from
//     the library: ranking never reads the library;
//
//   - start-warm/no-library and start-warm/library: a restart over a
//     warm catalog cache, without and with a library beside it (not read
//     when nothing misses the cache);
//
//   - start-other-dirs/embed and start-other-dirs/library: the same tools
//     in other tool directories (no catalog cache of their own), embedded
//     through the server, or taken from the library.
//
//     go test -run '^$' -bench BenchmarkVectorLibrary -benchtime 20x ./index/
func BenchmarkVectorLibrary(b *testing.B) {
	ctx := context.Background()
	const n, dim = 1000, 768
	emb, err := ollama.New(ollama.Options{Host: fakeEmbedServer(b, dim, nil), Model: "nomic-embed-text", Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	docs := synthDocs(n)
	src := func(dirs ...string) source {
		s := synthToolSource(docs)
		s.dirs = dirs
		return s
	}
	start := func(cache string, s source) *Index {
		ix := New(emb, Options{CacheDir: cache, NoCache: cache == "", Logger: quiet()})
		ix.upd.Lock()
		defer ix.upd.Unlock()
		if err := ix.updateLocked(ctx, s, nil, nil, true); err != nil {
			b.Fatal(err)
		}
		if err := ix.saveLocked(); err != nil {
			b.Fatal(err)
		}
		if st := ix.Stats(); st.Vectors != n {
			b.Fatalf("%d vectors", st.Vectors)
		}
		return ix
	}
	withLib, noLib := b.TempDir(), b.TempDir()
	embedded := start(withLib, src("/synthetic/a"))
	start(noLib, src("/synthetic/a"))
	if err := os.Remove(cacheFile(noLib, emb.ID(), []string{"/synthetic/a"})); err != nil {
		b.Fatal(err)
	}
	os.Remove(newLibrary(noLib, emb.ID(), false, quiet()).path)
	start(noLib, src("/synthetic/a")) // a warm catalog cache, no library
	os.Remove(newLibrary(noLib, emb.ID(), false, quiet()).path)
	fromLib := start(withLib, src("/synthetic/b"))

	queries := []string{"what's the weather forecast for my city", "convert this pdf document to an image",
		"send an email about the meeting schedule", "show git status of the repository"}
	for name, ix := range map[string]*Index{"embedded": embedded, "from-library": fromLib} {
		b.Run("rank/"+name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := ix.Rank(ctx, Query{Text: queries[i%len(queries)], K: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for name, cache := range map[string]string{"no-library": noLib, "library": withLib} {
		b.Run("start-warm/"+name, func(b *testing.B) {
			for b.Loop() {
				start(cache, src("/synthetic/a"))
			}
		})
	}
	for k, name := range []string{"embed", "library"} {
		cache := map[string]string{"embed": noLib, "library": withLib}[name]
		b.Run("start-other-dirs/"+name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				dir := fmt.Sprintf("/synthetic/other-%d-%d", k, i) // never cached
				start(cache, src(dir))
				os.Remove(cacheFile(cache, emb.ID(), []string{dir}))
				if name == "embed" {
					os.Remove(newLibrary(cache, emb.ID(), false, quiet()).path)
				}
			}
		})
	}
}
