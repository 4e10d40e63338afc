package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// A Provider brings tools defined elsewhere into the engine's catalog: the
// tools of an MCP server, of a remote toolsrv. Its tools are named
// PROVIDER:TOOL there (registry.ProviderSep), are indexed, ranked, offered
// and listed with the directories' tools, and calls to them come back to
// the provider. A new kind of tool source is one Provider.
type Provider interface {
	// Name is the provider's prefix in the catalog: a valid tool name
	// without ':'.
	Name() string
	// Run publishes the provider's tools, and publishes again whenever
	// they change, until ctx ends. A source it cannot reach is not a
	// reason to return: Run publishes a Provision with Unavailable or
	// Problems set, and keeps trying. An error from publish is the
	// registry refusing the provision (a bug in the provider).
	Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error
	// Call runs one of its tools (name is the provider's own, without the
	// prefix) with arguments already checked against the tool's schema.
	// A tool that ran and failed is a Result with a non-zero ExitCode and
	// exec.ErrExit, as from exec.Runner.
	Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error)
}

// DefaultProviderWait is how long New waits for the providers' first
// tools (Options.ProviderWait).
const DefaultProviderWait = 10 * time.Second

// startProviders runs every provider until the engine is closed, and
// waits until each has published once, or ProviderWait has passed: a
// provider that hangs is reported, and its tools join the catalog when
// they come.
func (e *Engine) startProviders(ctx, life context.Context) error {
	if len(e.opts.Providers) == 0 {
		return nil
	}
	e.providers = map[string]Provider{}
	for _, p := range e.opts.Providers {
		n := p.Name()
		if err := registry.ValidName(n); err != nil || strings.Contains(n, registry.ProviderSep) {
			return fmt.Errorf("provider name %q: must be a valid tool name without %q", n, registry.ProviderSep)
		}
		if _, dup := e.providers[n]; dup {
			return fmt.Errorf("two providers are named %q: give each its own name", n)
		}
		e.providers[n] = p
	}
	wait := e.opts.ProviderWait
	if wait <= 0 {
		wait = DefaultProviderWait
	}
	var first sync.WaitGroup
	for _, p := range e.opts.Providers {
		first.Add(1)
		var once sync.Once
		publish := func(ctx context.Context, pv registry.Provision) error {
			err := e.reg.Provide(ctx, p.Name(), pv)
			once.Do(first.Done)
			return err
		}
		e.provWG.Add(1)
		go func() {
			defer e.provWG.Done()
			defer once.Do(first.Done)
			if err := p.Run(life, publish); err != nil && life.Err() == nil {
				e.log.Error("tool provider stopped", "provider", p.Name(), "err", err)
				_ = e.reg.Provide(context.WithoutCancel(life), p.Name(), registry.Provision{
					Unavailable: fmt.Sprintf("the provider stopped: %v", err)})
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		first.Wait()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		var late []string
		cat := e.reg.Catalog()
		for _, p := range e.opts.Providers {
			if !providerSeen(cat, p.Name()) {
				late = append(late, p.Name())
			}
		}
		e.warnings = append(e.warnings, fmt.Sprintf("tool providers %s gave no tools within %s; their tools join when they do",
			strings.Join(late, ", "), wait))
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// providerSeen reports whether the catalog shows anything of provider.
func providerSeen(cat *registry.Catalog, provider string) bool {
	pre := provider + registry.ProviderSep
	for _, t := range cat.Tools {
		if strings.HasPrefix(t.Name, pre) {
			return true
		}
	}
	for _, h := range cat.Hidden {
		if strings.HasPrefix(h.Name, pre) {
			return true
		}
	}
	for _, p := range cat.Problems {
		if strings.HasPrefix(p.Name, pre) {
			return true
		}
	}
	return false
}

// errUnknownProvider is a provided tool whose provider this engine lacks.
var errUnknownProvider = errors.New("no such provider")
