package mcp

import (
	"context"
	"sync"
	"testing"

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
