package index

import (
	"encoding/json"
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
