package ollama

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"
)

// DefaultModel is the Ollama embedding model used when none is named.
const DefaultModel = "nomic-embed-text"

// Options configure an Ollama embedder. The zero value uses
// $OLLAMA_HOST, nomic-embed-text, a 60 s HTTP timeout, batches of 32 and
// 3 retries.
type Options struct {
	// Host is the server address in OLLAMA_HOST syntax; "" reads
	// $OLLAMA_HOST through Getenv (os.Getenv when nil).
	Host   string
	Getenv func(string) string
	// Model is the embedding model ("nomic-embed-text").
	Model string
	// Timeout bounds each HTTP request (60 s; loading a model takes time).
	Timeout time.Duration
	// BatchSize is the number of texts per /api/embed request (32).
	BatchSize int
	// Retries is how often a failed request is retried on errors that may
	// pass (no server yet, timeouts, 5xx); Backoff is the first wait,
	// doubled each time (250 ms). Negative Retries disables retrying.
	Retries int
	Backoff time.Duration
	// QueryPrefix and DocumentPrefix are prepended to queries and tool
	// documents. nil picks the model's documented prefixes (nomic-embed-text:
	// "search_query: " / "search_document: "; mxbai-embed-large: its query
	// instruction); a pointer to "" means none.
	QueryPrefix, DocumentPrefix *string
	// Dimensions asks the server to cut vectors to this size (MRL models).
	Dimensions int
	// KeepAlive is how long the server keeps the model loaded (30 min).
	KeepAlive time.Duration
	Logger    *slog.Logger
}

// Embedder embeds through an Ollama server's /api/embed endpoint.
type Embedder struct {
	c                *api.Client
	base             *url.URL
	opts             Options
	qPrefix, dPrefix string
	dim              atomic.Int64
	log              *slog.Logger
}

// knownPrefixes are the instruction prefixes documented by each model
// family: (query, document).
var knownPrefixes = map[string][2]string{
	"nomic-embed-text":  {"search_query: ", "search_document: "},
	"mxbai-embed-large": {"Represent this sentence for searching relevant passages: ", ""},
}

// New makes an Ollama embedder. It does not contact the server.
func New(o Options) (*Embedder, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Host == "" {
		o.Host = o.Getenv("OLLAMA_HOST")
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 32
	}
	if o.Retries == 0 {
		o.Retries = 3
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = 250 * time.Millisecond
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = 30 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	u, err := OllamaURL(o.Host)
	if err != nil {
		return nil, err
	}
	e := &Embedder{c: api.NewClient(u, &http.Client{Timeout: o.Timeout}), base: u, opts: o, log: o.Logger}
	family, _, _ := strings.Cut(o.Model, ":")
	family = family[strings.LastIndex(family, "/")+1:]
	p := knownPrefixes[family]
	e.qPrefix, e.dPrefix = p[0], p[1]
	if o.QueryPrefix != nil {
		e.qPrefix = *o.QueryPrefix
	}
	if o.DocumentPrefix != nil {
		e.dPrefix = *o.DocumentPrefix
	}
	if o.Dimensions > 0 {
		e.dim.Store(int64(o.Dimensions))
	}
	return e, nil
}

// OllamaURL resolves an OLLAMA_HOST value the way the ollama CLI does:
// "" → http://127.0.0.1:11434; "host" or "host:port" → http, port 11434
// unless given; "http://host" → port 80 and "https://host" → 443 (as in
// ollama itself: write the port); a path is kept. Unix sockets are not
// supported by the client and are refused with an error.
func OllamaURL(host string) (*url.URL, error) {
	s := strings.TrimSpace(host)
	defaultPort := "11434"
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
		if s == "ollama.com" {
			scheme, hostport = "https", "ollama.com:443"
		}
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	default:
		return nil, fmt.Errorf("OLLAMA_HOST %q: scheme %q is not supported: use http://host:port", host, scheme)
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		h, port = "127.0.0.1", defaultPort
		if ip := net.ParseIP(strings.Trim(hostport, "[]")); ip != nil {
			h = ip.String()
		} else if hostport != "" {
			h = hostport
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("OLLAMA_HOST %q: bad port %q", host, port)
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(h, port)}
	if path != "" {
		u.Path = "/" + path
	}
	return u, nil
}

// ID is "ollama/<model>" (plus "@<dimensions>" when cut).
func (e *Embedder) ID() string {
	id := "ollama/" + e.opts.Model
	if e.opts.Dimensions > 0 {
		id += "@" + strconv.Itoa(e.opts.Dimensions)
	}
	return id
}

// Dim is the vector size, known after the first successful call (or from
// Options.Dimensions).
func (e *Embedder) Dim() int { return int(e.dim.Load()) }

// URL is the server address in use.
func (e *Embedder) URL() string { return e.base.String() }

// EmbedQuery embeds one message (with the model's query prefix).
func (e *Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embed(ctx, []string{e.qPrefix + text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// EmbedDocuments embeds tool documents (with the model's document prefix)
// in batches of Options.BatchSize.
func (e *Embedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += e.opts.BatchSize {
		batch := texts[i:min(i+e.opts.BatchSize, len(texts))]
		in := make([]string, len(batch))
		for j, t := range batch {
			in[j] = e.dPrefix + t
		}
		vs, err := e.embed(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// embed sends one /api/embed request, retrying transient failures.
func (e *Embedder) embed(ctx context.Context, input []string) ([][]float32, error) {
	truncate := true
	req := &api.EmbedRequest{Model: e.opts.Model, Input: input, Truncate: &truncate,
		Dimensions: e.opts.Dimensions, KeepAlive: &api.Duration{Duration: e.opts.KeepAlive}}
	wait := e.opts.Backoff
	timeouts := 0
	for attempt := 0; ; attempt++ {
		resp, err := e.c.Embed(ctx, req)
		if err == nil {
			return e.check(resp, len(input))
		}
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			timeouts++
		}
		err, retry := e.explain(ctx, err)
		// A request that timed out is retried once at most: each try costs
		// the whole timeout.
		if !retry || attempt >= e.opts.Retries || timeouts > 1 || ctx.Err() != nil {
			return nil, err
		}
		e.log.Debug("ollama: retrying", "attempt", attempt+1, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// check validates a response: one finite, non-zero vector per input, all
// of one dimension; vectors are L2-normalised (the server does it already).
func (e *Embedder) check(resp *api.EmbedResponse, n int) ([][]float32, error) {
	if len(resp.Embeddings) != n {
		return nil, fmt.Errorf("ollama at %s returned %d embeddings for %d inputs: is %q an embedding model?",
			e.base, len(resp.Embeddings), n, e.opts.Model)
	}
	dim := int(e.dim.Load())
	for i, v := range resp.Embeddings {
		if len(v) == 0 {
			return nil, fmt.Errorf("ollama returned an empty embedding: is %q an embedding model?", e.opts.Model)
		}
		if dim == 0 {
			dim = len(v)
			e.dim.CompareAndSwap(0, int64(dim))
		}
		if len(v) != dim {
			return nil, fmt.Errorf("ollama model %s returned %d dimensions, earlier %d: the model changed on the server; the index will rebuild", e.opts.Model, len(v), dim)
		}
		var sq float64
		for _, x := range v {
			sq += float64(x) * float64(x)
		}
		if sq == 0 || math.IsNaN(sq) || math.IsInf(sq, 0) {
			return nil, fmt.Errorf("ollama returned a zero or NaN embedding for input %d", i)
		}
		inv := float32(1 / math.Sqrt(sq))
		for j := range v {
			v[j] *= inv
		}
	}
	return resp.Embeddings, nil
}

// explain turns a client error into one that says what to do, and whether
// retrying may help.
func (e *Embedder) explain(ctx context.Context, err error) (error, bool) {
	var se api.StatusError
	var ae api.AuthorizationError
	var ue *url.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("ollama at %s: %w", e.base, ctx.Err()), false
	case errors.As(err, &se):
		msg := se.ErrorMessage
		switch {
		case se.StatusCode == http.StatusNotFound:
			return fmt.Errorf("ollama model %q is not pulled on %s: run `ollama pull %s` (server said: %s)",
				e.opts.Model, e.base, e.opts.Model, msg), false
		case se.StatusCode == http.StatusTooManyRequests || se.StatusCode >= 500:
			return fmt.Errorf("ollama at %s failed with status %d: %s", e.base, se.StatusCode, msg), true
		case strings.Contains(msg, "does not support embeddings"):
			return fmt.Errorf("ollama model %q cannot embed: choose an embedding model such as %s", e.opts.Model, DefaultModel), false
		}
		return fmt.Errorf("ollama at %s rejected the request (status %d): %s", e.base, se.StatusCode, msg), false
	case errors.As(err, &ae):
		return fmt.Errorf("ollama at %s requires authorisation (status %d): sign in at %s or use a local server", e.base, ae.StatusCode, ae.SigninURL), false
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no ollama server at %s (connection refused): start it with `ollama serve`, or set OLLAMA_HOST to where it runs", e.base), true
	case errors.As(err, &ue) && ue.Timeout():
		return fmt.Errorf("ollama at %s did not answer within %v: it may be loading %s or overloaded; retry, or raise the timeout", e.base, e.opts.Timeout, e.opts.Model), true
	case errors.As(err, &ue):
		return fmt.Errorf("cannot reach ollama at %s: %w (is OLLAMA_HOST right?)", e.base, err), true
	}
	return fmt.Errorf("ollama at %s: %w", e.base, err), false
}
