package index

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// EmbedText is the one definition of the embedded text: what newDocument
// embeds, in the documented layout.
func TestEmbedText(t *testing.T) {
	tool := &registry.Tool{
		Name:        "get_weather.now",
		Description: "Current weather for a city",
		Keywords:    []string{"forecast", "temperature"},
		Args:        json.RawMessage(`{"type":"object","properties":{"unit":{},"city_name":{"description":" the city "}}}`),
		Prompt:      "  " + strings.Repeat("x", maxPromptChars+10) + "  ",
	}
	want := "get weather now: Current weather for a city\nKeywords: forecast, temperature\nArguments: city name (the city); unit\n" + strings.Repeat("x", maxPromptChars)
	if got := EmbedText(tool); got != want {
		t.Fatalf("EmbedText = %q, want %q", got, want)
	}
	if d := newDocument(tool); d.text() != want {
		t.Fatalf("newDocument embeds %q, want %q", d.text(), want)
	}
	bare := &registry.Tool{Name: "ls", Description: "List files"}
	if got := EmbedText(bare); got != "ls: List files" || newDocument(bare).text() != got {
		t.Fatalf("bare tool: EmbedText = %q, newDocument %q", got, newDocument(bare).text())
	}
}

// argTextDecoded is argText as encoding/json alone computes it (before
// plainProperties): the reference the fast path must agree with.
func argTextDecoded(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := strings.Join(tokensRaw(n), " ")
		if d := strings.TrimSpace(s.Properties[n].Description); d != "" {
			p += " (" + d + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

var argTextInputs = []string{
	``, `{}`, `true`, `null`, `{"type":"object"}`, `{"properties":null}`, `{"properties":{}}`,
	`{"type":"object","required":["path"],"properties":{"path":{"type":"string","description":" file to read "},"mode":{}}}`,
	`{"properties":{"a":null}}`, `{"properties":{"a":true}}`, `{"properties":{"a":{"description":null}}}`,
	`{"properties":{"a":{"description":1}}}`, `{"properties":{"a":{"Description":"x"}}}`,
	`{"Properties":{"a":{"description":"x"}}}`, `{"properties":{"a":{}},"PROPERTIES":{"b":{}}}`,
	`{"properties":{"a":{"description":"x","description":"y"}}}`, `{"properties":{"a":{}},"properties":{"b":{}}}`,
	`{"properties":{"a_b.c":{"description":"é \u00e9 \n"}}}`, "{\"properties\":{\"\xff\":{\"description\":\"\xfe\"}}}",
	`{"properties":[1]}`, `{"properties":{"a":{"description":"x"}}} trailing`, `{"properties":{"k":{"deſcription":"x"}}}`,
	`{"propertieſ":{"a":{}}}`, `{"properties":{"a":{"description":"x"},"a":{"type":"string"}}}`,
}

// TestArgTextAgreesWithDecoding: the fast path gives what decoding gives.
func TestArgTextAgreesWithDecoding(t *testing.T) {
	for _, in := range argTextInputs {
		if got, want := argText(json.RawMessage(in)), argTextDecoded(json.RawMessage(in)); got != want {
			t.Errorf("argText(%s) = %q, decoding gives %q", in, got, want)
		}
	}
}

func FuzzArgText(f *testing.F) {
	for _, in := range argTextInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := argText(in), argTextDecoded(in); got != want {
			t.Fatalf("argText(%q) = %q, decoding gives %q", in, got, want)
		}
	})
}
