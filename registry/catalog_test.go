package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// malformed are ways to break a .meta file; each must become one problem.
var malformed = []struct {
	meta  string
	field string // expected Problem.Field ("" when a line is expected)
}{
	{`{"description": "x",`, ""},
	{`not json at all`, ""},
	{`[]`, ""},
	{`{"description": 42, "cmd": "/bin/sh"}`, "description"},
	{`{"cmd": "/bin/sh"}`, "description"},
	{`{"description": "d", "cmd": "/bin/sh", "tier": "boiling"}`, "tier"},
	{`{"description": "d", "cmd": "/bin/sh", "keywords": "one"}`, "keywords"},
	{`{"description": "d", "cmd": "/bin/sh", "args": {"type": "strin"}}`, "args"},
	{`{"description": "d", "cmd": "/bin/sh", "args": {"properties": {"p": {"pattern": "(["}}}}`, "args"},
	{`{"description": "d", "cmd": "/bin/sh", "readOnly": "true"}`, "readOnly"},
	{`{"description": "d", "cmd": "/bin/sh", "variants": [{"match": {"cpu": "x"}}]}`, "variants[0].match.cpu"},
	{`{"description": "d", "cmd": "/nonexistent/path/to/tool"}`, "cmd"},
	{`{"description": "d", "cmd": "/bin/sh", "concurrency": 3}`, "concurrency"},
	{"{\"description\": \"d\"}\ntrailing", ""},
}

func TestHundredGoodHundredBad(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 100; i++ {
		writeTool(t, dir, fmt.Sprintf("good_%03d", i), fmt.Sprintf(`{"description":"good tool %d","cmd":"/bin/sh","keywords":["k%d"],
			"args":{"type":"object","properties":{"n":{"type":"integer"}}}}`, i, i), false)
		m := malformed[i%len(malformed)]
		writeTool(t, dir, fmt.Sprintf("bad_%03d", i), m.meta, false)
	}
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := r.Catalog()
	if len(cat.Tools) != 100 {
		t.Errorf("served %d tools, want the 100 good ones", len(cat.Tools))
	}
	for _, tool := range cat.Tools {
		if !strings.HasPrefix(tool.Name, "good_") {
			t.Errorf("served a bad tool: %s", tool.Name)
		}
	}
	if len(cat.Problems) != 100 {
		t.Fatalf("listed %d problems, want 100", len(cat.Problems))
	}
	for _, p := range cat.Problems {
		var i int
		fmt.Sscanf(p.Name, "bad_%d", &i)
		m := malformed[i%len(malformed)]
		if p.File != filepath.Join(dir, p.Name+".meta") {
			t.Errorf("%s: file = %s", p.Name, p.File)
		}
		if p.Field != m.field {
			t.Errorf("%s: field = %q, want %q (%s)", p.Name, p.Field, m.field, p.Msg)
		}
		if m.field == "" && p.Line == 0 && !strings.Contains(p.Msg, "object") {
			t.Errorf("%s: syntax error without a line: %s", p.Name, p.Msg)
		}
		if len(p.Msg) < 10 {
			t.Errorf("%s: message too terse: %q", p.Name, p.Msg)
		}
	}
}

func TestMissingDirectoryIsEmpty(t *testing.T) {
	r := New(Options{Dirs: []string{filepath.Join(t.TempDir(), "nope")}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Catalog().Tools); n != 0 {
		t.Errorf("tools = %d", n)
	}
}

func TestReloadWithNothingChangedKeepsRevision(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "a", `{"description":"a","cmd":"/bin/sh"}`, false)
	r := New(Options{Dirs: []string{dir}})
	ctx := context.Background()
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	rev := r.Catalog().Revision
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Catalog().Revision; got != rev {
		t.Errorf("revision %d → %d with nothing changed", rev, got)
	}
	writeTool(t, dir, "a", `{"description":"a2","cmd":"/bin/sh"}`, false)
	// Same size and maybe same mtime: the content hash still sees the edit
	// when the mtime differs; force a different mtime to be safe on coarse clocks.
	os.Chtimes(filepath.Join(dir, "a.meta"), timeAfter(t, dir), timeAfter(t, dir))
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Catalog().Revision; got != rev+1 {
		t.Errorf("revision %d → %d after an edit, want +1", rev, got)
	}
}
