package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// remoteProvider is a running provider of the http server sc (its
// tools published), stopped at the test's end. Its provisions are
// recorded.
type remoteProvider struct {
	*Provider
	mu    sync.Mutex
	provs []registry.Provision
}

func runRemote(t *testing.T, ctx context.Context, sc ServerConfig, o ProviderOptions) *remoteProvider {
	t.Helper()
	if sc.Transport == "" {
		sc.Transport = HTTP
	}
	if sc.Name == "" {
		sc.Name = "remote"
	}
	if o.Logger == nil {
		o.Logger = quiet()
	}
	rp := &remoteProvider{Provider: NewProvider(sc, o)}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rp.Run(rctx, func(_ context.Context, p registry.Provision) error {
			rp.mu.Lock()
			rp.provs = append(rp.provs, p)
			rp.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { stop(); <-done })
	return rp
}

// last is the last provision.
func (rp *remoteProvider) last() registry.Provision {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if len(rp.provs) == 0 {
		return registry.Provision{}
	}
	return rp.provs[len(rp.provs)-1]
}

// waitTools waits until the server's tools are published; a server
// reported unavailable first fails the test.
func (rp *remoteProvider) waitTools(t *testing.T, ctx context.Context) registry.Provision {
	t.Helper()
	waitFor(t, ctx, "the server's tools published", func() bool { p := rp.last(); return p.Tools != nil || p.Unavailable != "" })
	if p := rp.last(); p.Tools == nil {
		t.Fatalf("the server is unavailable: %s", p.Unavailable)
	}
	return rp.last()
}

// A remote server whose JSON answer goes on past maxAnswer (a hostile one
// sent 1.5 GB and toolsrv held 3.2 GB reading it) is read no further: the
// server is reported unavailable with why, and the answer's rest is never
// sent (the server's write fails once the client has closed).
func TestRemoteAnswerIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var wrote atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"x":"`)
		blk := []byte(strings.Repeat("A", 1<<20))
		for range 4 * (maxAnswer >> 20) {
			if _, err := w.Write(blk); err != nil {
				return
			}
			wrote.Add(int64(len(blk)))
		}
	}))
	defer srv.Close()
	rp := runRemote(t, ctx, ServerConfig{URL: srv.URL, StartTimeout: time.Minute}, ProviderOptions{MinBackoff: time.Hour})
	waitFor(t, ctx, "the server reported unavailable", func() bool { return rp.last().Unavailable != "" })
	if why := rp.last().Unavailable; !strings.Contains(why, "over 16 MiB") {
		t.Errorf("unavailable: %q; want it to say the answer is over 16 MiB", why)
	}
	if n := wrote.Load(); n >= 4*maxAnswer {
		t.Errorf("the server wrote its whole answer (%d bytes): it was read to its end", n)
	}
}
