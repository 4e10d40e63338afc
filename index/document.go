package index

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

// Field weights of the lexical index: the short fields describe a tool more
// precisely than the long prompt, so a word there counts several times.
const (
	weightName        = 3
	weightKeywords    = 3
	weightDescription = 2
	weightArgs        = 1
	weightPrompt      = 1
)

// maxPromptChars bounds how much of the prompt enters the embedded text: the
// prompt is long and often repeats the description, and embedding models
// truncate or dilute long inputs.
const maxPromptChars = 2000

// field is one weighted part of a document.
type field struct {
	text   string
	weight float32
}

// document is what the index knows about one tool.
type document struct {
	name   string
	fields []field
	// text is what is embedded; hash identifies it (and so the vector).
	text string
	hash string
}

// newDocument builds the document of a tool.
func newDocument(t *registry.Tool) document {
	nameWords := strings.Join(tokensRaw(t.Name), " ")
	args := argText(t.Args)
	kw := strings.Join(t.Keywords, ", ")
	d := document{name: t.Name, fields: []field{
		{nameWords, weightName},
		{t.Description, weightDescription},
		{kw, weightKeywords},
		{args, weightArgs},
		{t.Prompt, weightPrompt},
	}}
	d.text = embedText(nameWords, t.Description, kw, args, t.Prompt)
	sum := sha256.Sum256([]byte(d.text))
	d.hash = hex.EncodeToString(sum[:16])
	return d
}

// EmbedText is the text the index embeds for a tool: its name's words, the
// description, the keywords, the argument names and descriptions, and the
// start of the prompt (maxPromptChars bytes). The offline training harness
// (embed/train) measures embedders on exactly this text.
func EmbedText(t *registry.Tool) string {
	return embedText(strings.Join(tokensRaw(t.Name), " "), t.Description, strings.Join(t.Keywords, ", "), argText(t.Args), t.Prompt)
}

// embedText assembles the embedded text from a tool's parts, as prepared by
// newDocument (which also weighs them for the lexical index).
func embedText(nameWords, description, keywords, args, prompt string) string {
	var b strings.Builder
	b.WriteString(nameWords)
	b.WriteString(": ")
	b.WriteString(description)
	if keywords != "" {
		b.WriteString("\nKeywords: ")
		b.WriteString(keywords)
	}
	if args != "" {
		b.WriteString("\nArguments: ")
		b.WriteString(args)
	}
	if p := strings.TrimSpace(prompt); p != "" {
		if len(p) > maxPromptChars {
			p = p[:maxPromptChars]
		}
		b.WriteString("\n")
		b.WriteString(p)
	}
	return b.String()
}

// tokensRaw splits a name into words without stemming ("get_weather" →
// "get weather"), for the embedded text.
func tokensRaw(name string) []string {
	return strings.FieldsFunc(name, func(r rune) bool {
		return r == '_' || r == '-' || r == '.' || r == ' '
	})
}

// argText lists the argument names and descriptions of a JSON Schema's
// top-level properties ("path (file to read); mode"), in name order.
func argText(schema json.RawMessage) string {
	if len(schema) == 0 {
		return ""
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
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
