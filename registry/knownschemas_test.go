package registry

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// countingCompiler counts the schemas compiled.
type countingCompiler struct{ n atomic.Int64 }

func (c *countingCompiler) compile(raw []byte) (*jsonschema.Schema, error) {
	c.n.Add(1)
	return compileSchema(raw)
}

// A restart with a known-schemas cache compiles no schema at load; the
// first call compiles its tool's schema and applies it; a changed schema
// is compiled at load again; a cache that cannot be read or that vouches
// for a schema that does not compile costs time, never a check.
func TestKnownSchemas(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "toolsrv", "schemas.known")
	const limited = `{"description":"limited","cmd":"/bin/sh","args":{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}}`
	writeTool(t, dir, "limited", limited, false)
	writeTool(t, dir, "plain", `{"description":"plain","cmd":"/bin/sh"}`, false)
	writeTool(t, dir, "broken", `{"description":"broken","cmd":"/bin/sh","args":{"type":"object","minimum":"five"}}`, false)
	ctx := context.Background()
	load := func() (*Registry, *countingCompiler) {
		t.Helper()
		r := New(Options{Dirs: []string{dir}, SchemaCache: cache})
		c := &countingCompiler{}
		r.compile = c.compile
		// New loaded the cache before the compiler was replaced; the
		// known set does not depend on the compiler.
		if err := r.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return r, c
	}

	r, c := load()
	if got := c.n.Load(); got != 3 {
		t.Fatalf("first load compiled %d schemas, want 3", got)
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	if len(r.Catalog().Problems) != 1 {
		t.Fatalf("problems %v, want the broken schema's", r.Catalog().Problems)
	}

	r, c = load()
	if got := c.n.Load(); got != 1 {
		t.Errorf("a restart compiled %d schemas at load, want 1 (only the broken one, which is never known)", got)
	}
	if len(r.Catalog().Problems) != 1 || len(r.Catalog().Tools) != 2 {
		t.Errorf("a restart changed the catalog: %d tools, problems %v", len(r.Catalog().Tools), r.Catalog().Problems)
	}
	tool, _ := r.Catalog().Get("limited")
	if err := tool.ValidateArgs([]byte(`{"n":9}`)); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("a known schema is not applied on the first call: %v", err)
	}
	if err := tool.ValidateArgs([]byte(`{"n":3}`)); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
	if got := c.n.Load(); got != 2 {
		t.Errorf("%d compiles after two calls, want 2 (the call compiled the known schema once)", got)
	}

	// A changed schema is compiled at load.
	writeTool(t, dir, "limited", strings.Replace(limited, `"maximum":5`, `"maximum":7`, 1), false)
	_, c = load()
	if got := c.n.Load(); got != 2 {
		t.Errorf("after an edit, %d compiles at load, want 2 (the edited and the broken schema)", got)
	}

	// An unreadable cache: everything is compiled, and it is rewritten.
	if err := os.WriteFile(cache, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c = load()
	if got := c.n.Load(); got != 3 {
		t.Errorf("with a corrupt cache %d compiles, want 3", got)
	}
	_, c = load()
	if got := c.n.Load(); got != 1 {
		t.Errorf("the corrupt cache was not rewritten: %d compiles, want 1", got)
	}

	// A cache that vouches for a schema that does not compile (written by
	// hand here) fails the call, closed.
	k, err := loadKnownSchemas(cache)
	if err != nil {
		t.Fatal(err)
	}
	k.set[k.key(json.RawMessage(`{"type":"object","minimum":"five"}`))] = struct{}{}
	k.change = true
	if err := writeKnownSchemas(cache, k.snapshot()); err != nil {
		t.Fatal(err)
	}
	r, _ = load()
	b, ok := r.Catalog().Get("broken")
	if !ok {
		t.Fatal("the vouched-for schema's tool is not listed")
	}
	if err := b.ValidateArgs([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), "toolsrv validate") {
		t.Errorf("a lying cache let a call through: %v", err)
	}
}
