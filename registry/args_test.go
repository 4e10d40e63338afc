package registry

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateArgsRefusesDuplicateKeys: the schema library keeps the last of
// two equal keys, the tool may read the first: {"n":9,"n":1} passed a
// "maximum: 5" check and reached the tool as sent. A key given twice, at any
// depth, is refused with its name and JSON pointer.
func TestValidateArgsRefusesDuplicateKeys(t *testing.T) {
	meta := `{"description":"d","cmd":"jq","args":{"type":"object","properties":{"n":{"type":"integer","maximum":5}}}}`
	m, err := ParseMeta([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := compileSchemas(m)
	if err != nil {
		t.Fatal(err)
	}
	tool, _, err := resolve("x", "/t/x.meta", "/t", sha256.Sum256([]byte(meta)), m, sch, testHost())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		want       []string // substrings of the error; nil: accepted
	}{
		{"top level", `{"n":9,"n":1}`, []string{`key "n" is given twice at /n`}},
		{"escaped spelling", `{"n":1,"\u006e":9}`, []string{`key "n" is given twice at /n`}},
		{"nested object", `{"n":1,"opts":{"a":1,"b":2,"a":3}}`, []string{`key "a" is given twice at /opts/a`}},
		{"in an array", `{"n":1,"list":[{"x":1},{"x":1,"x":2}]}`, []string{`key "x" is given twice at /list/1/x`}},
		{"pointer escaping", `{"n":1,"a/b":{"~":1,"~":2}}`, []string{`at /a~1b/~0`}},
		{"three times", `{"n":1,"n":2,"n":3}`, []string{`key "n" is given 3 times at /n`}},
		{"two keys", `{"n":1,"n":2,"m":1,"m":2}`, []string{`"n" is given twice at /n`, `"m" is given twice at /m`}},
		{"same key in different objects", `{"n":1,"a":{"n":2},"b":{"n":3}}`, nil},
		{"same key in array elements", `{"n":1,"list":[{"x":1},{"x":2}]}`, nil},
		{"plain", `{"n":3}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tool.ValidateArgs([]byte(tc.args))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateArgs(%s) = %v, want accepted", tc.args, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateArgs(%s) accepted", tc.args)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestMetaDuplicateFields: a .meta field given twice is ambiguous: the file
// is invalid, and the problem names the field and both lines, at any depth.
func TestMetaDuplicateFields(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "twice", `{
  "description": "d",
  "readOnly": true,
  "cmd": "/bin/sh",
  "readOnly": false,
  "args": {"type": "object", "properties": {"n": {"type": "integer",
      "maximum": 5, "maximum": 500}}},
  "variants": [{"cmd": "/bin/sh",
                "cmd": "/bin/true"}]
}`, false)
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh"}`, false)
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := r.Catalog()
	if got := strings.Join(names(cat), ","); got != "ok" {
		t.Errorf("tools = %s, want ok", got)
	}
	want := []struct {
		field string
		line  int
		msg   string
	}{
		{"readOnly", 5, "is given twice (first on line 3)"},
		{"args.properties.n.maximum", 7, "is given twice (first on line 7)"},
		{"variants[0].cmd", 9, "is given twice (first on line 8)"},
	}
	ps := problemsOfFile(cat, filepath.Join(dir, "twice.meta"))
	if len(ps) != len(want) {
		t.Fatalf("problems %v, want %d", ps, len(want))
	}
	for i, w := range want {
		if ps[i].Field != w.field || ps[i].Line != w.line || !strings.Contains(ps[i].Msg, w.msg) || !strings.Contains(ps[i].Msg, "keep one") {
			t.Errorf("problem %d = %+v, want field %s line %d %q", i, ps[i], w.field, w.line, w.msg)
		}
	}
}
