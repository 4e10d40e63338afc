package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestScanKeys(t *testing.T) {
	doc := "{\n \"a\": 1,\n \"b\": {\"c\": [1, {\"d\": 2, \"d\": 3}],\n  \"e\\u0073\": true, \"es\": null},\n \"a\": \"x\"\n}"
	var seen []string
	dups, err := scanKeys([]byte(doc), &keyVisitor{visit: func(p jsonPath, line int) {
		seen = append(seen, fmt.Sprintf("%s@%d", p.pointer(), line))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/a@2", "/b@3", "/b/c@3", "/b/c/0@3", "/b/c/1@3", "/b/c/1/d@3", "/b/c/1/d@3", "/b/es@4", "/b/es@4", "/a@5"}
	if !slices.Equal(seen, want) {
		t.Errorf("visited %v\nwant    %v", seen, want)
	}
	var got []string
	for _, d := range dups {
		got = append(got, fmt.Sprintf("%s %s %d<-%d", d.Path.pointer(), d.Path.field(), d.Line, d.FirstLine))
	}
	wantDups := []string{"/b/c/1/d b.c[1].d 3<-3", "/b/es b.es 4<-4", "/a a 5<-2"}
	if !slices.Equal(got, wantDups) {
		t.Errorf("duplicates %v, want %v", got, wantDups)
	}
	if _, err := scanKeys([]byte(strings.Repeat("[", maxJSONDepth+1)+strings.Repeat("]", maxJSONDepth+1)), nil); err == nil {
		t.Error("no error past the depth limit")
	}
}

// referenceDuplicates finds repeated keys with json.Decoder.Token, the
// slow and obviously right way.
func referenceDuplicates(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj     bool
		wantKey bool
		seen    map[string]bool
	}
	var stack []*frame
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				f := stack[n-1]
				if f.seen[k] {
					out = append(out, k)
				}
				f.seen[k] = true
				f.wantKey = false
				continue
			}
		}
		done := func() {
			if n := len(stack); n > 0 && stack[n-1].obj {
				stack[n-1].wantKey = true
			}
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{', '[':
				stack = append(stack, &frame{obj: d == '{', wantKey: d == '{', seen: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		default:
			done()
		}
	}
}

// FuzzScanKeys checks the byte tokenizer against json.Decoder on valid JSON.
func FuzzScanKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]},"d":"}\"{"}`, `[{"x":"\u0078","x\u0078":1,"xx":2}]`,
		`{"":1,"":2}`, `"s"`, `1`, `{"a":[1,2,{"a":3}],"b":{},"c":[]}`, " {\n\"k\" : true ,\n \"k\":false}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		want, err := referenceDuplicates(data)
		if err != nil {
			return
		}
		dups, err := scanKeys(data, &keyVisitor{visit: func(jsonPath, int) {}})
		if err != nil {
			return // deeper than maxJSONDepth: refused, nothing to compare
		}
		var got []string
		for _, d := range dups {
			got = append(got, d.Path[len(d.Path)-1].Key)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("scanKeys(%q) found %q, json.Decoder %q", data, got, want)
		}
	})
}
