package registry

import (
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
)

// FuzzParseMeta feeds arbitrary bytes to the .meta parser and schema
// compiler: they must never panic, an error must always be a *FieldError
// with a message, and a parsed Meta must come back from the catalog
// snapshot as it was and resolve without panicking.
func FuzzParseMeta(f *testing.F) {
	seeds := []string{
		`{"description":"d","cmd":"jq","args":{"type":"object","properties":{"p":{"type":"string"}}}}`,
		`{"description":"Read system logs.","variants":[{"match":{"binary":"journalctl"},"cmd":"system_logs_journald","args":{"type":"object","properties":{"unit":{"type":"string"}}}},{"match":{"file":"/var/log/syslog"},"cmd":"system_logs_syslog"}]}`,
		`{"description":"d","tier":"hot","readOnly":true,"network":false,"bypass":true,"concurrency":"serial","timeout":"5s","keywords":["a"],"scope":"s","outputFormat":"o","resetsCounter":true,"x":1}`,
		`{"variants":[{"description":"a","match":{"os":["linux","darwin"],"arch":"amd64","env":"A","nenv":"B"}}]}`,
		`{"description":"d","args":{"$ref":"#/definitions/x","definitions":{"x":{"type":"object"}}}}`,
		`{"description":"d","args":{"$ref":"http://example.com/schema"}}`,
		`{"description":`, `[]`, `null`, `"s"`, `{}`, "{\"description\":\"d\"}\n{}",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	h := testHost()
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMeta(data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Msg == "" {
				t.Fatalf("error %v (%T) is not a *FieldError with a message", err, err)
			}
			return
		}
		var w snapWriter
		w.meta(m)
		back, err := (&snapEntry{meta: string(w.b)}).decodeMeta("/tools/fuzz.meta")
		if w.err != nil || err != nil {
			t.Fatalf("snapshot: %v, %v", w.err, err)
		}
		lines := m.lines
		back.lines, m.lines = nil, nil
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("parsed %+v, the snapshot gave %+v", m, back)
		}
		m.lines = lines
		schemas, err := compileSchemas(m)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("schema error %v lacks a field", err)
			}
			return
		}
		tool, why, err := resolve("fuzz", "/tools/fuzz.meta", "/tools", sha256.Sum256(data), m, schemas, h)
		if err == nil && tool == nil && why == "" {
			t.Fatal("hidden without a reason")
		}
		if tool != nil {
			if d, _ := m.fields["description"].(string); tool.Description == "" && d != "" {
				t.Fatal("description lost")
			}
			_ = tool.ValidateArgs([]byte(`{"p":"x"}`))
		}
	})
}

// FuzzSnapshotDecode feeds arbitrary bytes to the snapshot's decoders as
// a body and as one definition: they must fail, never panic.
func FuzzSnapshotDecode(f *testing.F) {
	var w snapWriter
	m, err := ParseMeta([]byte(`{"description":"d","keywords":["k"],"limits":{"processes":4},"variants":[{"match":{"os":"linux"},"cmd":"c"}],"x":1}`))
	if err != nil {
		f.Fatal(err)
	}
	w.meta(m)
	f.Add(w.b)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = (&snapEntry{meta: string(data)}).decodeMeta("/tools/fuzz.meta")
		_, _ = parseSnapshot(data, len(data))
	})
}
