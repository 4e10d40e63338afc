package registry

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"file_read", true},
		{"a", true},
		{"A9.x-y_z", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"..", false},
		{"a..b", false},
		{"a/b", false},
		{"/abs", false},
		{"nul\x00byte", false},
		{"_leading", false},
		{".hidden", false},
		{"-dash", false},
		{"sp ace", false},
		{"ünicode", false},
		{"9lives", true},
		{"srv:tool", false},
		{"trailing\n", false},
		{"tab\there", false},
	}
	for _, tc := range tests {
		err := ValidName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestParseMetaErrors(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		field     string
		line      int
		msgSubstr string
	}{
		{"not json", "{\n  \"description\": \"x\",\n  oops\n}", "", 3, "not valid JSON"},
		{"truncated", "{\"description\": \"x\"", "", 1, "ends before"},
		{"trailing", "{\"description\": \"x\"}\n{}", "", 2, "after the object"},
		{"array", "[1,2]", "", 0, "JSON object"},
		{"null", "null", "", 0, "JSON object"},
		{"no description", `{"prompt":"p"}`, "description", 0, "required"},
		{"description number", `{"description": 3}`, "description", 1, "must be a string, not a number"},
		{"keywords string", `{"description":"d","keywords":"a"}`, "keywords", 1, "array of strings"},
		{"keywords mixed", `{"description":"d","keywords":["a",1]}`, "keywords", 1, "array of strings"},
		{"tier bad", `{"description":"d","tier":"lukewarm"}`, "tier", 1, `"hot", "warm" or "cold"`},
		{"readOnly string", `{"description":"d","readOnly":"yes"}`, "readOnly", 1, "true or false"},
		{"concurrency bad", `{"description":"d","concurrency":"many"}`, "concurrency", 1, "parallel"},
		{"args string", `{"description":"d","args":"object"}`, "args", 1, "JSON Schema object"},
		{"cmd empty", `{"description":"d","cmd":"  "}`, "cmd", 1, "empty"},
		{"timeout bad", `{"description":"d","timeout":"soon"}`, "timeout", 1, "duration"},
		{"timeout negative", `{"description":"d","timeout":-1}`, "timeout", 1, "positive"},
		{"variants object", `{"description":"d","variants":{}}`, "variants", 1, "array of objects"},
		{"variant not object", `{"description":"d","variants":[3]}`, "variants", 1, "array of objects"},
		{"match bad key", `{"description":"d","variants":[{"match":{"distro":"x"}}]}`, "variants[0].match.distro", 1, "not a match key"},
		{"match bad value", `{"description":"d","variants":[{"match":{"os":3}}]}`, "variants[0].match.os", 1, "string or an array"},
		{"match empty array", `{"description":"d","variants":[{"match":{"os":[]}}]}`, "variants[0].match.os", 1, "never hold"},
		{"variant field type", `{"description":"d","variants":[{"tier":5}]}`, "variants[0].tier", 1, "must be a string"},
		{"variant lacks description", `{"variants":[{"description":"a"},{"cmd":"x"}]}`, "variants[1].description", 0, "required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMeta([]byte(tc.data))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseMeta error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || fe.Line != tc.line || !strings.Contains(fe.Msg, tc.msgSubstr) {
				t.Errorf("got field=%q line=%d msg=%q; want field=%q line=%d msg containing %q",
					fe.Field, fe.Line, fe.Msg, tc.field, tc.line, tc.msgSubstr)
			}
		})
	}
}

func TestParseMetaFields(t *testing.T) {
	m, err := ParseMeta([]byte(`{
		"description": "Find files.", "prompt": "## f", "keywords": ["glob","find"],
		"args": {"type":"object"}, "tier": "cold", "cmd": "find .", "readOnly": true,
		"bypass": false, "network": true, "concurrency": "serial", "timeout": "90s",
		"scope": "fs", "outputFormat": "text", "resetsCounter": true, "colour": "blue"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := fields{
		"description": "Find files.", "prompt": "## f", "keywords": []string{"glob", "find"},
		"args": json.RawMessage(`{"type":"object"}`), "tier": Cold, "cmd": "find .", "readOnly": true,
		"bypass": false, "network": true, "concurrency": Serial, "timeout": 90 * time.Second,
		"scope": "fs", "outputFormat": "text", "resetsCounter": true,
	}
	if !reflect.DeepEqual(m.fields, want) {
		t.Errorf("fields not parsed:\n got %#v\nwant %#v", m.fields, want)
	}
	if string(m.Extra["colour"]) != `"blue"` {
		t.Errorf("unknown field not kept: %v", m.Extra)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], `"colour"`) {
		t.Errorf("warnings = %v, want one about colour", m.Warnings)
	}
	m, err = ParseMeta([]byte(`{"description":"d","timeout":2.5}`))
	if err != nil || m.fields["timeout"] != 2500*time.Millisecond {
		t.Errorf("numeric timeout: %v %v", m, err)
	}
}

func TestCompileSchemas(t *testing.T) {
	tests := []struct {
		name, data, field string
	}{
		{"bad type", `{"description":"d","args":{"type":"strin"}}`, "args"},
		{"bad regex", `{"description":"d","args":{"type":"string","pattern":"("}}`, "args"},
		{"external file ref", `{"description":"d","args":{"$ref":"file:///etc/passwd"}}`, "args"},
		{"external http ref", `{"description":"d","args":{"$ref":"http://example.com/s.json"}}`, "args"},
		{"bad variant schema", `{"description":"d","variants":[{"args":{"type":"object","properties":{"a":{"type":7}}}}]}`, "variants[0].args"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMeta([]byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			_, err = compileSchemas(m)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("compileSchemas error = %v, want field %q", err, tc.field)
			}
		})
	}
}
