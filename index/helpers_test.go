package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/registry"
)

// hashEmbedder is a small deterministic embedder for tests: a feature-hashed
// bag of (stemmed) words, optionally weighted by IDF. It counts its calls,
// and can be told to fail or to hang (ignoring ctx) on queries.
type hashEmbedder struct {
	id   string
	dim  int
	idf  map[string]float64 // nil: unweighted
	st   *embedStats
	hang chan struct{} // if non-nil, EmbedQuery blocks until it is closed
	gate chan struct{} // if non-nil, EmbedDocuments blocks until it is closed
	fail error
}

type embedStats struct {
	docCalls, docTexts, queryCalls atomic.Int64
	fits, restores                 atomic.Int64
	mu                             sync.Mutex
	texts                          []string
}

func newHashEmbedder(dim int) *hashEmbedder {
	return &hashEmbedder{id: "test/hash", dim: dim, st: &embedStats{}}
}

func (e *hashEmbedder) ID() string { return e.id }
func (e *hashEmbedder) Dim() int   { return e.dim }

func (e *hashEmbedder) vec(text string) []float32 {
	v := make([]float32, e.dim)
	v[0] = 0.05 // never a zero vector
	for _, t := range tokens(text) {
		h := fnv.New32a()
		h.Write([]byte(t))
		w := 1.0
		if e.idf != nil {
			w = e.idf[t]
			if w == 0 {
				w = 1
			}
		}
		v[1+int(h.Sum32())%(e.dim-1)] += float32(w)
	}
	var sq float64
	for _, x := range v {
		sq += float64(x * x)
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(sq))
	}
	return v
}

func (e *hashEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.st.docCalls.Add(1)
	e.st.docTexts.Add(int64(len(texts)))
	e.st.mu.Lock()
	e.st.texts = append(e.st.texts, texts...)
	fail := e.fail
	e.st.mu.Unlock()
	if e.gate != nil {
		<-e.gate
	}
	if fail != nil {
		return nil, fail
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vec(t)
	}
	return out, nil
}

func (e *hashEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e.st.queryCalls.Add(1)
	if e.hang != nil {
		<-e.hang // deliberately ignores ctx: the worst embedder
	}
	if e.fail != nil {
		return nil, e.fail
	}
	return e.vec(text), nil
}

// awareEmbedder is a CatalogAware hashEmbedder: Fit computes IDF weights.
type awareEmbedder struct{ *hashEmbedder }

type fittedEmbedder struct {
	*hashEmbedder
	state []byte
}

func (f fittedEmbedder) State() []byte { return f.state }

func (a awareEmbedder) Fit(ctx context.Context, docs []string) (embed.Fitted, error) {
	a.st.fits.Add(1)
	df := map[string]int{}
	for _, d := range docs {
		seen := map[string]bool{}
		for _, t := range tokens(d) {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	idf := map[string]float64{}
	for t, n := range df {
		idf[t] = math.Log(1 + float64(len(docs))/float64(n))
	}
	state, _ := json.Marshal(idf)
	return a.fitted(idf, state), nil
}

func (a awareEmbedder) fitted(idf map[string]float64, state []byte) embed.Fitted {
	sum := sha256.Sum256(state)
	h := *a.hashEmbedder
	h.id = a.id + "+" + hex.EncodeToString(sum[:4])
	h.idf = idf
	return fittedEmbedder{&h, state}
}

func (a awareEmbedder) Restore(state []byte) (embed.Fitted, error) {
	a.st.restores.Add(1)
	var idf map[string]float64
	if err := json.Unmarshal(state, &idf); err != nil {
		return nil, errors.New("bad state")
	}
	return a.fitted(idf, state), nil
}

// copyTools copies testdata/tools into a fresh directory.
func copyTools(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	ents, err := os.ReadDir("testdata/tools")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata/tools", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func loadReg(t testing.TB, dir string) *registry.Registry {
	t.Helper()
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: quiet()})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(reg.Catalog().Problems) > 0 {
		t.Fatalf("fixture problems: %v", reg.Catalog().Problems)
	}
	return reg
}

func writeMeta(t testing.TB, dir, name, meta string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
}

// upsert puts a document (and its vector, nil if unknown) into the view, as
// an update does for one document.
func (v *view) upsert(d *document, vec []float32, why error) {
	v.upsertAhead(d, nil, vec, why, nil)
}
