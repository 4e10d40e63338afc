package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func nestedNot(n int) string {
	return strings.Repeat(`{"not":`, n) + `{}` + strings.Repeat(`}`, n)
}

// TestPathologicalSchemasAreRefused: schemas the JSON Schema library takes
// seconds to minutes to compile are refused before compiling, with the limit
// in the message; the other tools are served.
func TestPathologicalSchemasAreRefused(t *testing.T) {
	var props strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&props, `"p%d":{"type":"string","description":"padding padding padding"},`, i)
	}
	wide := `{"type":"object","properties":{` + props.String() + `"q":{}}}`
	tests := []struct {
		name, args, field, want string
	}{
		{"5,000 nested not (40 KB)", nestedNot(5000), "args", "nests 5001 levels deep; the limit for a schema is 64"},
		{"2,000 nested not", nestedNot(2000), "args", "nests 2001 levels deep; the limit for a schema is 64"},
		{"65 levels", nestedNot(64), "args", "the limit for a schema is 64"},
		{"over 256 KiB", wide, "args", "the limit for a schema is 262144 (256 KiB)"},
		{"deep in a variant", `{"type":"object"},
"variants":[{"args":` + nestedNot(100) + `}]`, "variants[0].args", "nests 101 levels deep"},
	}
	dir := t.TempDir()
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh","args":{"type":"object","properties":{"n":{"type":"integer"}}}}`, false)
	writeTool(t, dir, "deep63", `{"description":"63 levels is allowed","cmd":"/bin/sh","args":`+nestedNot(62)+`}`, false)
	for i, tc := range tests {
		writeTool(t, dir, fmt.Sprintf("bad%d", i), `{"description":"d","cmd":"/bin/sh",
"args":`+tc.args+`}`, false)
	}
	r := New(Options{Dirs: []string{dir}})
	within(t, "Load", func() {
		if err := r.Load(context.Background()); err != nil {
			t.Error(err)
		}
	})
	cat := r.Catalog()
	if got := strings.Join(names(cat), ","); got != "deep63,ok" {
		t.Errorf("tools = %s, want deep63,ok", got)
	}
	for i, tc := range tests {
		ps := problemsOfFile(cat, filepath.Join(dir, fmt.Sprintf("bad%d.meta", i)))
		if len(ps) != 1 || ps[0].Field != tc.field || !strings.Contains(ps[0].Msg, tc.want) {
			t.Errorf("%s: problems %v, want one for %s saying %q", tc.name, ps, tc.field, tc.want)
			continue
		}
		if want := map[string]int{"args": 2, "variants[0].args": 3}[tc.field]; ps[0].Line != want {
			t.Errorf("%s: line %d, want %d", tc.name, ps[0].Line, want)
		}
	}
}

// blockingCompiler compiles normally except schemas containing marker,
// whose compile announces itself on entered and then waits for release.
type blockingCompiler struct {
	marker  string
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func newBlockingCompiler(t *testing.T, marker string) *blockingCompiler {
	b := &blockingCompiler{marker: marker, entered: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
	})
	return b
}

func (b *blockingCompiler) compile(raw []byte) (*jsonschema.Schema, error) {
	if strings.Contains(string(raw), b.marker) {
		b.calls.Add(1)
		b.entered <- struct{}{}
		<-b.release
	}
	return compileSchema(raw)
}

// TestSlowSchemaDoesNotHoldUpOtherTools: while one tool's schema is still
// compiling (held by the test), the catalog is readable, another tool is
// added by a reload and its arguments validate; then the slow one arrives.
// On main the compile ran under the registry's lock, so the reload waited for
// it (11 s for a 2,000-deep schema).
func TestSlowSchemaDoesNotHoldUpOtherTools(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "slow", `{"description":"slow","cmd":"/bin/sh","args":{"type":"object","description":"SLOW"}}`, false)
	b := newBlockingCompiler(t, "SLOW")
	r := New(Options{Dirs: []string{dir}})
	r.compile = b.compile
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- r.Load(ctx) }()
	<-b.entered // the slow compile has started and is held

	writeTool(t, dir, "other", `{"description":"other","cmd":"/bin/sh","args":{"type":"object","properties":{"n":{"type":"integer","maximum":5}}}}`, false)
	within(t, "a reload while another tool's schema compiles", func() {
		if err := r.Load(ctx); err != nil {
			t.Error(err)
		}
	})
	cat := r.Catalog()
	other, ok := cat.Get("other")
	if !ok {
		t.Fatalf("other is not served while slow compiles: %v %v", names(cat), cat.Problems)
	}
	if err := other.ValidateArgs([]byte(`{"n":3}`)); err != nil {
		t.Errorf("other's arguments: %v", err)
	}
	if err := other.ValidateArgs([]byte(`{"n":9}`)); err == nil {
		t.Error("other's schema is not applied")
	}
	if _, ok := cat.Get("slow"); ok || len(cat.Problems) != 0 {
		t.Errorf("slow is served or reported before its compile ended: %v %v", names(cat), cat.Problems)
	}
	select {
	case err := <-first:
		t.Fatalf("the first Load returned (%v) before the compile it started ended", err)
	default:
	}

	close(b.release)
	within(t, "the first Load", func() {
		if err := <-first; err != nil {
			t.Error(err)
		}
	})
	cat = r.Catalog()
	if got := strings.Join(names(cat), ","); got != "other,slow" {
		t.Errorf("after the compile: tools %s, want other,slow", got)
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("the slow schema was compiled %d times, want once", n)
	}
}

// TestSchemaCompileDeadline: a compile that does not end within
// Options.CompileTimeout makes that tool invalid with the reason; Load
// returns, the other tools are served, and a reload does not compile the
// abandoned schema again.
func TestSchemaCompileDeadline(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "stuck", `{"description":"stuck","cmd":"/bin/sh",
"args":{"type":"object","description":"STUCK"}}`, false)
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh"}`, false)
	b := newBlockingCompiler(t, "STUCK") // released only at the end of the test
	// Long enough for the other tool's schema to compile on a loaded
	// machine: the stuck one never ends.
	r := New(Options{Dirs: []string{dir}, CompileTimeout: 500 * time.Millisecond})
	r.compile = b.compile
	for i := range 2 {
		within(t, "Load", func() {
			if err := r.Load(context.Background()); err != nil {
				t.Error(err)
			}
		})
		cat := r.Catalog()
		if got := strings.Join(names(cat), ","); got != "ok" {
			t.Errorf("load %d: tools %s, want ok", i, got)
		}
		ps := problemsOfFile(cat, filepath.Join(dir, "stuck.meta"))
		if len(ps) != 1 || ps[0].Field != "args" || ps[0].Line != 2 || !strings.Contains(ps[0].Msg, "took longer than 500ms to compile") {
			t.Errorf("load %d: problems %v, want args (line 2) taking longer than 500ms", i, ps)
		}
	}
	if n := b.calls.Load(); n != 1 {
		t.Errorf("the stuck schema was compiled %d times, want once", n)
	}
}

// TestSchemaEditedDuringCompile: a file edited while its previous schema is
// still compiling ends up as its latest contents, and Load waits for them.
func TestSchemaEditedDuringCompile(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "t", `{"description":"v1","cmd":"/bin/sh","args":{"type":"object","description":"HOLD"}}`, false)
	b := newBlockingCompiler(t, "HOLD")
	r := New(Options{Dirs: []string{dir}})
	r.compile = b.compile
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- r.Load(ctx) }()
	<-b.entered
	writeTool(t, dir, "t", `{"description":"v2 is longer","cmd":"/bin/sh","args":{"type":"object","properties":{"x":{"type":"string"}}}}`, false)
	os.Chtimes(filepath.Join(dir, "t.meta"), timeAfter(t, dir), timeAfter(t, dir))
	within(t, "reload", func() {
		if err := r.Load(ctx); err != nil {
			t.Error(err)
		}
	})
	if got := desc(r.Catalog(), "t"); got != "v2 is longer" {
		t.Errorf("after the reload: description %q, want v2", got)
	}
	close(b.release)
	within(t, "first Load", func() { <-first })
	if got := desc(r.Catalog(), "t"); got != "v2 is longer" {
		t.Errorf("after the first compile ended: description %q, want v2 (the old compile must not bring v1 back)", got)
	}
}

// TestWatchGoesOnWhileASchemaCompiles: a .meta whose schema is still
// compiling (held by the test) does not stop the watcher from applying
// other edits, nor a pipe appearing from being reported.
func TestWatchGoesOnWhileASchemaCompiles(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "seed", `{"description":"seed","cmd":"/bin/sh"}`, false)
	b := newBlockingCompiler(t, "SLOW")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := New(Options{Dirs: []string{dir}, Debounce: 20 * time.Millisecond, Rescan: -1})
	r.compile = b.compile
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, r, "initial load", func(c *Catalog) bool { return desc(c, "seed") == "seed" })

	writeTool(t, dir, "slow", `{"description":"slow","cmd":"/bin/sh","args":{"type":"object","description":"SLOW"}}`, false)
	<-b.entered // the watcher has started the slow compile, which is held
	writeTool(t, dir, "other", `{"description":"other","cmd":"/bin/sh"}`, false)
	waitFor(t, r, "other served while slow compiles", func(c *Catalog) bool { return desc(c, "other") == "other" })
	if _, ok := r.Catalog().Get("slow"); ok {
		t.Fatal("slow is served before its compile ended")
	}
	close(b.release)
	waitFor(t, r, "slow served once compiled", func(c *Catalog) bool { return desc(c, "slow") == "slow" })
}
