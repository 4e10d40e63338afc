package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkInputs are texts for Check beyond fastPathInputs: numbers,
// literals, escapes, nesting and keys that repeat at depth.
var checkInputs = []string{
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-05`, `1e`, `1e+`, `-01`, `2.0e3x`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, ` [ ] `, `[1,]`, `[,]`, `[1 2]`, `{"a" 1}`,
	`{"a":1 "b":2}`, `{1:2}`, `"\u12"`, `"\u12g4"`, `"\u1234"`, `"\uD83D\uDE00"`, `"a\`, `"\`,
	"\"tab\there\"", "\"\x7f\"", "\xef\xbb\xbf{}", `[{"a":1},{"a":1}]`, `{"a":{"b":1,"b":2}}`,
	`{"a":{"b":1},"c":{"b":2}}`, `{"a":[{"x":1,"y":2,"x":3}]}`, `{"a\n":1,"a\n":2}`,
	`{"a\u0041":1}`, `{"":1,"":2}`, "{\"a\":1}\n", "\t\r\n", `[[[[]]]]`, `[}`, `{]`, `{"a":[}`,
}

func TestCheckAgrees(t *testing.T) {
	for _, in := range append(append([]string{}, fastPathInputs...), checkInputs...) {
		checkCheck(t, []byte(in))
	}
	// Many keys (Check indexes them in a map past linearKeys), with and
	// without a repeat.
	var b strings.Builder
	b.WriteString(`{"nested":{"k":1},`)
	for i := range 3 * linearKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"key` + strings.Repeat("x", i) + `":{"k":1,"l":[1]}`)
	}
	many := b.String()
	checkCheck(t, []byte(many+"}"))
	checkCheck(t, []byte(many+`,"keyxxxx":2}`))
	checkCheck(t, []byte(many+`,"nested":2}`))
}

// TestCheckDepth: encoding/json's nesting limit, exactly.
func TestCheckDepth(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		checkCheck(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkCheck(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

func FuzzCheck(f *testing.F) {
	for _, in := range append(append([]string{}, fastPathInputs...), checkInputs...) {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkCheck(t, data) })
}

// checkCheck compares Check with json.Valid and with a reading of every
// object's keys by encoding/json's decoder.
func checkCheck(t *testing.T, data []byte) {
	t.Helper()
	valid, distinct := Check(data)
	if want := json.Valid(data); valid != want {
		t.Fatalf("Check(%q): valid = %v, json.Valid says %v", data, valid, want)
	}
	if !valid {
		return
	}
	repeats, unclear := keysAtAnyDepth(t, data)
	if want := !repeats && !unclear; distinct != want {
		t.Fatalf("Check(%q): distinctKeys = %v; keys repeat: %v, escaped or invalid UTF-8 keys: %v", data, distinct, repeats, unclear)
	}
}

// keysAtAnyDepth reads valid JSON with encoding/json's decoder and says
// whether an object repeats a key, and whether a key is written with an
// escape or invalid UTF-8.
func keysAtAnyDepth(t *testing.T, data []byte) (repeats, unclear bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		obj    bool
		seen   map[string]bool
		keyDue bool
	}
	var stack []*level
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return repeats, unclear
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.keyDue {
			raw := data[off:dec.InputOffset()]
			if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
				unclear = true
			}
			if top.seen[s] {
				repeats = true
			}
			top.seen[s] = true
			top.keyDue = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{obj: true, seen: map[string]bool{}, keyDue: true})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				top = stack[len(stack)-1]
			} else {
				top = nil
			}
		}
		if top != nil && top.obj {
			top.keyDue = true // a value ended: the next string is a key
		}
	}
}

// exampleMetas are the repository's example .meta files.
func exampleMetas(b *testing.B) [][]byte {
	b.Helper()
	paths, err := filepath.Glob("../../examples/tools/*.meta")
	if err != nil || len(paths) == 0 {
		b.Fatalf("no example tools: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// BenchmarkCheck compares Check with json.Valid over the example tools
// (go test -bench Check ./internal/jsonscan: the ratio of the two).
func BenchmarkCheck(b *testing.B) {
	metas := exampleMetas(b)
	for _, c := range []struct {
		name string
		f    func([]byte) bool
	}{
		{"Check", func(d []byte) bool { v, _ := Check(d); return v }},
		{"Valid", Valid},
		{"json.Valid", json.Valid},
	} {
		b.Run(c.name, func(b *testing.B) {
			n := 0
			for _, m := range metas {
				n += len(m)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, m := range metas {
					if !c.f(m) {
						b.Fatal("invalid example")
					}
				}
			}
		})
	}
}
