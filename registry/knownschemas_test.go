package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	k.added[k.key(json.RawMessage(`{"type":"object","minimum":"five"}`))] = struct{}{}
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

// The file's keys are written in order and searched where they were read:
// every key written is found after a restart, none other is, and a file
// whose keys are out of order is rewritten rather than searched.
func TestKnownSchemasSearchedInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schemas.known")
	k, err := loadKnownSchemas(path)
	if err != nil {
		t.Fatal(err)
	}
	var in, out [][knownKeySize]byte
	for i := range 1000 {
		key := k.key(json.RawMessage(fmt.Sprintf(`{"type":"object","title":"%d"}`, i)))
		if i%2 == 0 {
			in = append(in, key)
			k.added[key] = struct{}{}
		} else {
			out = append(out, key)
		}
	}
	k.change = true
	if err := writeKnownSchemas(path, k.snapshot()); err != nil {
		t.Fatal(err)
	}
	back, err := loadKnownSchemas(path)
	if err != nil || len(back.sorted) != len(in)*knownKeySize || len(back.added) != 0 {
		t.Fatalf("reloaded %d bytes of keys, %d added (want %d, 0): %v", len(back.sorted), len(back.added), len(in)*knownKeySize, err)
	}
	for _, key := range in {
		if !back.hasKey(key) {
			t.Fatalf("key %x written but not found", key)
		}
	}
	for _, key := range out {
		if back.hasKey(key) {
			t.Fatalf("key %x found but never written", key)
		}
	}
	// Out of order: the first two keys swapped.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := data[len(data)-len(back.sorted):]
	first := slices.Clone(body[:knownKeySize])
	copy(body[:knownKeySize], body[knownKeySize:2*knownKeySize])
	copy(body[knownKeySize:2*knownKeySize], first)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := loadKnownSchemas(path); err == nil || len(k.sorted) != 0 {
		t.Errorf("a file with its keys out of order was taken (%d bytes of keys): %v", len(k.sorted), err)
	}
}
