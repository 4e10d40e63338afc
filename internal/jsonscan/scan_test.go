package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// fastPathInputs are JSON texts (valid and not) the fast paths must agree
// with encoding/json on.
var fastPathInputs = []string{
	`{}`, ` { } `, `{"a":1}`, "{\n \"a\" : \"x\" ,\t\"b\":[1,{\"c\":\"]}\"}],\"d\":null}\n",
	`{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `{"a\"b":"c\\d"}`, `{"k":"é"}`, `{"k":-1.5e3}`,
	`{"k":true,"l":false}`, `{"a":{"b":{"c":[[],{}]}}}`, `{"a":"x",}`, `{"a":1}{}`, `{"a":1} x`,
	`{"a"}`, `{"a":}`, `[1]`, `null`, `"s"`, ``, `{`, `{"a":"\x01"}`, "{\"a\":\"\xff\"}",
	`{"a":[]}`, `{"a":["x"]}`, `{"a":["x","y z"]}`, `{"a":[ "x" , "y" ]}`, `{"a":["x",1]}`,
	`{"a":"x\ny\t\"q\" \\ \/ \b\f\r"}`, `{"a":"\u00e9"}`, `{"a":"é\n"}`, `{"a":"\ud800"}`,
	"{\"a\":\"\xff\\n\"}", `{"a":"\q"}`, `{"a":["x\n"]}`, `{"a":["x\"y"]}`, `{"a":["é"]}`, `{"a":["x",]}`, `{"a":[,"x"]}`, `{"a":"line\nbreak"}`,
}

// TestFastPathsAgree: Object, String and Strings give what
// encoding/json gives whenever they answer.
func TestFastPathsAgree(t *testing.T) {
	for _, in := range fastPathInputs {
		checkFastPaths(t, []byte(in))
	}
}

func FuzzFastPaths(f *testing.F) {
	for _, in := range fastPathInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastPaths(t, data) })
}

func checkFastPaths(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	err := json.Unmarshal(data, &want)
	got, ok, _ := Object(data)
	switch {
	case ok && (err != nil || want == nil):
		t.Fatalf("Object(%q) answered %v; encoding/json: %v, %v", data, got, want, err)
	case !ok && err == nil && want != nil && !keysRepeat(data):
		t.Fatalf("Object(%q) did not answer; encoding/json gives %v", data, want)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("Object(%q) = %q, encoding/json %q", data, got, want)
	}
	for _, raw := range want {
		raw = bytes.TrimSpace(raw)
		if s, ok := String(raw); ok {
			var w string
			if err := json.Unmarshal(raw, &w); err != nil || w != s {
				t.Fatalf("String(%q) = %q; encoding/json: %q, %v", raw, s, w, err)
			}
		}
		if ss, ok := Strings(raw); ok {
			var w []string
			if err := json.Unmarshal(raw, &w); err != nil || !reflect.DeepEqual(w, ss) {
				t.Fatalf("Strings(%q) = %q; encoding/json: %q, %v", raw, ss, w, err)
			}
		}
	}
}

// keysRepeat says whether the top-level object data holds (valid JSON)
// gives a key twice, as encoding/json reads keys.
func keysRepeat(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
