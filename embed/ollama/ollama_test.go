package ollama

// The tests in this file are CONTRACT tests: no Ollama server exists where
// they run, so fakeOllama implements the documented /api/embed endpoint
// (request {"model","input","truncate","keep_alive","dimensions","options"};
// response {"model","embeddings":[[...]]}; errors as {"error": "..."} with
// the HTTP status, 404 for a model that is not pulled) and the real
// github.com/ollama/ollama/api client talks to it over a real socket.

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeOllama struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []map[string]any // decoded request bodies
	failures int              // answer this many requests with 500 first
	hang     time.Duration    // sleep before answering
	dim      int
	models   map[string]bool
	mangle   func(*[][]float32) // tamper with the response
}

func newFakeOllama(t *testing.T) *fakeOllama {
	f := &fakeOllama{dim: 8, models: map[string]bool{"nomic-embed-text": true, "all-minilm": true}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOllama) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/embed" || r.Method != http.MethodPost {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	var req map[string]any
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	hang, dim, mangle := f.hang, f.dim, f.mangle
	f.mu.Unlock()
	if hang > 0 {
		select {
		case <-time.After(hang):
		case <-r.Context().Done():
			return
		}
	}
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]string{"error": "llama runner process has terminated"})
		return
	}
	model, _ := req["model"].(string)
	if !f.models[model] {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]string{"error": "model \"" + model + "\" not found, try pulling it first"})
		return
	}
	var inputs []string
	switch in := req["input"].(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, x := range in {
			s, ok := x.(string)
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(map[string]string{"error": "invalid input type"})
				return
			}
			inputs = append(inputs, s)
		}
	}
	embs := make([][]float32, len(inputs))
	for i, s := range inputs {
		embs[i] = fakeVector(s, dim)
	}
	if mangle != nil {
		mangle(&embs)
	}
	json.NewEncoder(w).Encode(map[string]any{"model": model, "embeddings": embs, "total_duration": 1000})
}

// fakeVector is a deterministic unit vector for a text (what the server's
// L2-normalised embeddings look like).
func fakeVector(s string, dim int) []float32 {
	v := make([]float32, dim)
	h := fnv.New64a()
	h.Write([]byte(s))
	x := h.Sum64()
	var sq float64
	for i := range v {
		x = x*6364136223846793005 + 1442695040888963407
		v[i] = float32(int64(x>>11)%1000)/1000 + 0.001
		sq += float64(v[i] * v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(sq))
	}
	return v
}

func (f *fakeOllama) reqs() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (f *fakeOllama) embedder(t *testing.T, o Options) *Embedder {
	t.Helper()
	o.Host = f.srv.URL
	o.Backoff = time.Millisecond
	o.Logger = quietLog()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOllamaContractBatchesDocumentsInOrder(t *testing.T) {
	f := newFakeOllama(t)
	e := f.embedder(t, Options{BatchSize: 32})
	texts := make([]string, 70)
	for i := range texts {
		texts[i] = "tool " + strings.Repeat("x", i)
	}
	vs, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.reqs()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 batches (32+32+6)", len(reqs))
	}
	for i, want := range []int{32, 32, 6} {
		in := reqs[i]["input"].([]any)
		if len(in) != want {
			t.Fatalf("batch %d has %d inputs, want %d", i, len(in), want)
		}
		if reqs[i]["model"] != "nomic-embed-text" || reqs[i]["truncate"] != true || reqs[i]["keep_alive"] == nil {
			t.Fatalf("request %d: %v", i, reqs[i])
		}
		if !strings.HasPrefix(in[0].(string), "search_document: tool") {
			t.Fatalf("document prefix missing: %q", in[0])
		}
	}
	if len(vs) != 70 {
		t.Fatalf("%d vectors, want 70", len(vs))
	}
	for i, v := range vs {
		want := fakeVector("search_document: "+texts[i], 8)
		for j := range v {
			if math.Abs(float64(v[j]-want[j])) > 1e-6 {
				t.Fatalf("vector %d out of order or altered", i)
			}
		}
	}
	if e.Dim() != 8 || e.ID() != "ollama/nomic-embed-text" {
		t.Fatalf("Dim %d ID %s", e.Dim(), e.ID())
	}

	q, err := e.EmbedQuery(context.Background(), "weather in Oslo")
	if err != nil {
		t.Fatal(err)
	}
	last := f.reqs()[3]["input"].([]any)[0].(string)
	if last != "search_query: weather in Oslo" || len(q) != 8 {
		t.Fatalf("query sent as %q", last)
	}
}

func TestOllamaContractErrorsSayWhatToDo(t *testing.T) {
	f := newFakeOllama(t)
	ctx := context.Background()

	// A model that is not pulled: no retry, and the fix in the message.
	e := f.embedder(t, Options{Model: "mxbai-embed-large"})
	_, err := e.EmbedQuery(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "ollama pull mxbai-embed-large") {
		t.Fatalf("missing model: %v", err)
	}
	if n := len(f.reqs()); n != 1 {
		t.Fatalf("missing model retried: %d requests", n)
	}

	// Transient server errors are retried with backoff.
	f.mu.Lock()
	f.failures, f.requests = 2, nil
	f.mu.Unlock()
	e = f.embedder(t, Options{})
	if _, err := e.EmbedQuery(ctx, "x"); err != nil {
		t.Fatalf("two 500s then success: %v", err)
	}
	if n := len(f.reqs()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	f.mu.Lock()
	f.failures, f.requests = 10, nil
	f.mu.Unlock()
	_, err = f.embedder(t, Options{Retries: 2}).EmbedQuery(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "status 500") || len(f.reqs()) != 3 {
		t.Fatalf("persistent 500: %v after %d requests", err, len(f.reqs()))
	}
	f.mu.Lock()
	f.failures = 0
	f.mu.Unlock()

	// Malformed answers are errors, not bad vectors.
	for name, mangle := range map[string]func(*[][]float32){
		"too few":     func(v *[][]float32) { *v = (*v)[:0] },
		"zero vector": func(v *[][]float32) { (*v)[0] = make([]float32, 8) },
		"ragged":      func(v *[][]float32) { (*v)[1] = (*v)[1][:4] },
	} {
		f.mu.Lock()
		f.mangle = mangle
		f.mu.Unlock()
		if _, err := f.embedder(t, Options{}).EmbedDocuments(ctx, []string{"a", "b"}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	f.mu.Lock()
	f.mangle = nil
	f.mu.Unlock()

	// No server: say so and how to start one.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	e, _ = New(Options{Host: url, Retries: 1, Backoff: time.Millisecond, Logger: quietLog()})
	_, err = e.EmbedQuery(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "no ollama server at") || !strings.Contains(err.Error(), "ollama serve") {
		t.Fatalf("no server: %v", err)
	}
}

func TestOllamaContractTimeout(t *testing.T) {
	f := newFakeOllama(t)
	// Generous against the load of a busy machine: each request must reach
	// the fake server before its timeout for the attempts to be counted.
	f.hang = 30 * time.Second

	// The HTTP timeout bounds each request (the default client would wait forever).
	e := f.embedder(t, Options{Timeout: 500 * time.Millisecond, Retries: -1})
	start := time.Now()
	_, err := e.EmbedQuery(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "did not answer within 500ms") {
		t.Fatalf("timeout: %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the request outlived the server's hang: no timeout applied")
	}

	// Timeouts are retried once, not Retries times (each try costs the timeout).
	n0 := len(f.reqs())
	e = f.embedder(t, Options{Timeout: 500 * time.Millisecond, Retries: 5})
	if _, err := e.EmbedQuery(context.Background(), "x"); err == nil {
		t.Fatal("no error from a hanging server")
	}
	if got := len(f.reqs()) - n0; got != 2 {
		t.Fatalf("%d attempts on a hanging server, want 2", got)
	}

	// A caller's deadline wins over a longer HTTP timeout, and is not retried.
	e = f.embedder(t, Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	n := len(f.reqs())
	_, err = e.EmbedQuery(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("ctx deadline: %v", err)
	}
	if got := len(f.reqs()) - n; got != 1 {
		t.Fatalf("%d requests after the caller's deadline, want 1", got)
	}
}

func TestOllamaURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "http://127.0.0.1:11434"},
		{"localhost", "http://localhost:11434"},
		{"127.0.0.1:9999", "http://127.0.0.1:9999"},
		{"0.0.0.0", "http://0.0.0.0:11434"},
		{"http://localhost", "http://localhost:80"},
		{"https://example.org", "https://example.org:443"},
		{"http://h:11434/prefix", "http://h:11434/prefix"},
		{"[::1]:5000", "http://[::1]:5000"},
		{"ollama.com", "https://ollama.com:443"},
	}
	for _, c := range cases {
		u, err := OllamaURL(c.in)
		if err != nil || u.String() != c.want {
			t.Errorf("OllamaURL(%q) = %v, %v; want %s", c.in, u, err, c.want)
		}
	}
	for _, bad := range []string{"unix:///run/ollama.sock", "h:99999", "ftp://h"} {
		if _, err := OllamaURL(bad); err == nil {
			t.Errorf("OllamaURL(%q) accepted", bad)
		}
	}
	e, err := New(Options{Getenv: func(k string) string {
		if k == "OLLAMA_HOST" {
			return "gpu-box:7000"
		}
		return ""
	}})
	if err != nil || e.URL() != "http://gpu-box:7000" {
		t.Fatalf("OLLAMA_HOST not honoured: %v %v", e, err)
	}
}
