package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// memProvider is a provider whose tools are a Go slice: what an MCP
// server or a remote toolsrv looks like to the engine.
type memProvider struct {
	name    string
	first   registry.Provision
	updates chan registry.Provision
	hang    bool // never publish

	mu    sync.Mutex
	calls []string
}

func (p *memProvider) Name() string { return p.name }

func (p *memProvider) Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error {
	if p.hang {
		<-ctx.Done()
		return nil
	}
	if err := publish(ctx, p.first); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case pv := <-p.updates:
			if err := publish(ctx, pv); err != nil {
				return err
			}
		}
	}
}

func (p *memProvider) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	p.mu.Lock()
	p.calls = append(p.calls, name+" "+string(args))
	p.mu.Unlock()
	return &exec.Result{Stdout: []byte("called " + name)}, nil
}

func offeredNames(a Answer) []string {
	var out []string
	for _, o := range a.Tools {
		out = append(out, o.Name)
	}
	return out
}

func TestProviders(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "weather.meta"),
		[]byte(`{"description":"Current weather and forecast for a city","cmd":"true"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &memProvider{name: "fs", updates: make(chan registry.Provision), first: registry.Provision{
		Source: "test provider fs",
		Tools: []registry.Provided{
			{Name: "read_file", Description: "Read the contents of a file from disk",
				Args: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "list_directory", Description: "List the files and folders in a directory"},
		}}}
	stuck := &memProvider{name: "stuck", hang: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := New(ctx, Options{Dirs: []string{dir}, NoCache: true, NoThresholds: true,
		Providers: []Provider{fs, stuck}, ProviderWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go eng.Run(runCtx)

	// The stuck provider is reported, and did not keep the other out.
	if w := strings.Join(eng.Warnings(), "\n"); !strings.Contains(w, "stuck") {
		t.Errorf("no warning names the stuck provider: %q", w)
	}
	ans, err := eng.Rank(ctx, Request{Query: "read the contents of the file notes.txt", Limit: 3, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := offeredNames(ans); len(got) == 0 || got[0] != "fs:read_file" {
		t.Errorf("ranking for reading a file: %v, want fs:read_file first", got)
	}

	// Calls: checked against the provider's schema, then sent to it by
	// its own name.
	if _, err := eng.Call(ctx, CallRequest{Tool: "fs:read_file", Arguments: json.RawMessage(`{}`)}); !errors.Is(err, exec.ErrInvalidArgs) {
		t.Errorf("a call missing a required argument: %v, want invalid arguments", err)
	}
	res, err := eng.Call(ctx, CallRequest{Tool: "fs:read_file", Arguments: json.RawMessage(`{"path":"/etc/hostname"}`)})
	if err != nil || string(res.Stdout) != "called read_file" {
		t.Errorf("call: %v %v", res, err)
	}
	fs.mu.Lock()
	calls := strings.Join(fs.calls, "|")
	fs.mu.Unlock()
	if calls != `read_file {"path":"/etc/hostname"}` {
		t.Errorf("the provider saw %q", calls)
	}
	if _, err := eng.Call(ctx, CallRequest{Tool: "weather", Arguments: nil}); !errors.Is(err, ErrNoRunner) {
		t.Errorf("a .meta tool without a runner: %v", err)
	}

	// The provider goes down: its tools leave the ranking and say why.
	fs.updates <- registry.Provision{Source: "test provider fs", Unavailable: "the server exited; restarting"}
	waitFor(t, ctx, func() bool {
		a, err := eng.Rank(ctx, Request{Query: "read the contents of the file notes.txt", Limit: 3, All: true})
		return err == nil && !strings.HasPrefix(strings.Join(offeredNames(a), ","), "fs:")
	})
	if _, err := eng.Call(ctx, CallRequest{Tool: "fs:read_file", Arguments: json.RawMessage(`{"path":"x"}`)}); err == nil || !strings.Contains(err.Error(), "restarting") {
		t.Errorf("a call to an unavailable provider's tool: %v", err)
	}
	// And comes back with a new tool, which is ranked.
	fs.updates <- registry.Provision{Source: "test provider fs", Tools: append(fs.first.Tools,
		registry.Provided{Name: "search_files", Description: "Search files for a text pattern, like grep"})}
	waitFor(t, ctx, func() bool {
		a, err := eng.Rank(ctx, Request{Query: "grep the files for a pattern", Limit: 3, All: true})
		return err == nil && len(a.Tools) > 0 && a.Tools[0].Name == "fs:search_files"
	})
}

func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestProviderNames(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"a", "a"}, "two providers"},
		{[]string{"a:b"}, "without"},
		{[]string{""}, "must be a valid"},
	} {
		var ps []Provider
		for _, n := range tc.names {
			ps = append(ps, &memProvider{name: n})
		}
		_, err := New(ctx, Options{Dirs: []string{t.TempDir()}, NoIndex: true, Providers: ps})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("providers %q: %v, want an error with %q", tc.names, err, tc.want)
		}
	}
}
