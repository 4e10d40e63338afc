package index

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/internal/jsonscan"
	"github.com/toolsrv/toolsrv/registry"
)

// Field weights of the lexical index: the short fields describe a tool more
// precisely than the long prompt, so a word there counts several times.
//
// The arguments' names and descriptions do not count in the lexical score
// (weight 0): they say how a tool is called, not what it is for, and a
// word found only there ("Header names to keep, in order." for "order a
// pizza") made a confident wrong answer. The learned last step was fitted
// on catalogs whose tools have no arguments, so its lexical features mean
// "the share of the request found in the tool's purpose"; argument words
// in them are evidence it was never calibrated for. The arguments still
// count in the embedded text and in the last step's own per-field feature
// (the share of the request found in the arguments). Measured on the
// evaluation corpora (a fifth of each catalog removed), the change moves
// macro Recall@1 by less than 0.001 and the offered-set hit by 0.001.
const (
	weightName        = 3
	weightKeywords    = 3
	weightDescription = 2
	weightArgs        = 0
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
	name string
	// fields are, in this order (see fieldName and the others): the name's
	// words, the description, the keywords, the argument names and
	// descriptions, the prompt. A document recalled from the document
	// memo (docmemo.go) has none until they are needed (need).
	fields []field
	// hash identifies the embedded text (text), and so the vector.
	hash string
	// lexKey identifies the fields' texts, and so the document's lexical
	// entry (lexcache.go). hash does not: the embedded text holds only the
	// start of the prompt, and does not say where one field ends.
	lexKey lexKey
	// tool is what the document is made of; toolHash is its Hash (what
	// the document memo is keyed by, with the name).
	tool     *registry.Tool
	toolHash string
}

// newDocument builds the document of a tool.
func newDocument(t *registry.Tool) document {
	var scratch []byte
	return newDocumentScratch(t, &scratch)
}

// newDocumentScratch is newDocument assembling the embedded text in
// *scratch (reused by the caller for its next document) to hash it: the
// text is not kept, it is made again when the tool must be embedded (at
// 100k tools the texts would hold 100 MB through an update).
func newDocumentScratch(t *registry.Tool, scratch *[]byte) document {
	d := document{name: t.Name, fields: fieldsOf(t), tool: t, toolHash: t.Hash}
	*scratch = d.appendText((*scratch)[:0])
	sum := sha256.Sum256(*scratch)
	d.hash = hex.EncodeToString(sum[:16])
	*scratch = d.appendFields((*scratch)[:0])
	sum = sha256.Sum256(*scratch)
	d.lexKey = lexKey(sum[:len(lexKey{})])
	return d
}

// fieldsOf are the weighted fields of a tool's document.
func fieldsOf(t *registry.Tool) []field {
	return []field{
		{strings.Join(tokensRaw(t.Name), " "), weightName},
		{t.Description, weightDescription},
		{strings.Join(t.Keywords, ", "), weightKeywords},
		{argText(t.Args), weightArgs},
		{t.Prompt, weightPrompt},
	}
}

// need makes the fields of a document recalled without them. The caller
// must be the only one using d.
func (d *document) need() {
	if d.fields == nil && d.tool != nil {
		d.fields = fieldsOf(d.tool)
	}
}

// text is what the index embeds for the document (see EmbedText).
func (d document) text() string {
	d.need() // on the copy
	return string(d.appendText(nil))
}

// appendFields appends the fields' texts to b, each after its length, so
// that no two documents append the same bytes (lexKey's input).
func (d document) appendFields(b []byte) []byte {
	for _, f := range d.fields {
		b = binary.AppendUvarint(b, uint64(len(f.text)))
		b = append(b, f.text...)
	}
	return b
}

// appendText appends the document's embedded text to b.
func (d document) appendText(b []byte) []byte {
	part := func(i int) string {
		if i < len(d.fields) {
			return d.fields[i].text
		}
		return ""
	}
	return appendEmbedText(b, part(fieldName), part(fieldDescription), part(fieldKeywords), part(fieldArgs), part(fieldPrompt))
}

// EmbedText is the text the index embeds for a tool: its name's words, the
// description, the keywords, the argument names and descriptions, and the
// start of the prompt (maxPromptChars bytes). The offline training harness
// (train/embedding) measures embedders on exactly this text.
func EmbedText(t *registry.Tool) string {
	return string(appendEmbedText(nil, strings.Join(tokensRaw(t.Name), " "), t.Description, strings.Join(t.Keywords, ", "), argText(t.Args), t.Prompt))
}

// appendEmbedText appends the embedded text assembled from a tool's parts,
// as prepared by newDocument (which also weighs them for the lexical index).
func appendEmbedText(b []byte, nameWords, description, keywords, args, prompt string) []byte {
	b = append(b, nameWords...)
	b = append(b, ": "...)
	b = append(b, description...)
	if keywords != "" {
		b = append(b, "\nKeywords: "...)
		b = append(b, keywords...)
	}
	if args != "" {
		b = append(b, "\nArguments: "...)
		b = append(b, args...)
	}
	if p := strings.TrimSpace(prompt); p != "" {
		if len(p) > maxPromptChars {
			p = p[:maxPromptChars]
		}
		b = append(b, '\n')
		b = append(b, p...)
	}
	return b
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
	props, ok := plainProperties(schema)
	if !ok {
		var s struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if json.Unmarshal(schema, &s) != nil {
			return ""
		}
		props = make(map[string]string, len(s.Properties))
		for n, p := range s.Properties {
			props[n] = p.Description
		}
	}
	if len(props) == 0 {
		return ""
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p := strings.Join(tokensRaw(n), " ")
		if d := strings.TrimSpace(props[n]); d != "" {
			p += " (" + d + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// plainProperties reads a schema's top-level properties' descriptions
// (name → description) where encoding/json, decoding argText's struct,
// would read the same: keys as plain ASCII strings, "properties" and
// "description" given once and in no other spelling (encoding/json matches
// them case-insensitively and merges repeats), each property an object,
// each description a plain string. ok is false otherwise. It walks the
// schema in place (jsonscan.EachMember): no map per object.
func plainProperties(schema []byte) (map[string]string, bool) {
	if !jsonscan.Valid(schema) {
		return nil, false
	}
	props, ok := plainMember(schema, "properties")
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	if props == nil || string(props) == "null" {
		return out, true
	}
	ok = jsonscan.EachMember(props, func(rawName, prop []byte) bool {
		name, plain := jsonscan.String(rawName)
		if _, seen := out[name]; !plain || seen {
			return false
		}
		desc, ok := plainMember(prop, "description")
		if !ok {
			return false
		}
		d := ""
		if desc != nil && string(desc) != "null" {
			if d, ok = jsonscan.String(desc); !ok {
				return false
			}
		}
		out[name] = d
		return true
	})
	return out, ok
}

// plainMember returns the value of the member name of the object obj (nil
// when there is none), where encoding/json would find the same: ok is false
// when obj is not an object, when name is given twice or in another
// spelling, or when a key is not plain ASCII.
func plainMember(obj []byte, name string) (value []byte, ok bool) {
	ok = jsonscan.EachMember(obj, func(rawKey, v []byte) bool {
		switch isKey(rawKey, name) {
		case keyOther:
			return true
		case keyExact:
			if value != nil {
				return false // repeated
			}
			value = v
			return true
		}
		return false // another spelling, or not plain
	})
	return value, ok
}

// keyKind is how an object key written as rawKey compares with a name.
type keyKind int

const (
	keyOther   keyKind = iota // another key
	keyExact                  // the name itself
	keyUnclear                // the name in another case, or a key not plain ASCII
)

func isKey(rawKey []byte, name string) keyKind {
	if len(rawKey) < 2 {
		return keyUnclear
	}
	k := rawKey[1 : len(rawKey)-1]
	for _, c := range k {
		if c == '\\' || c >= 0x80 {
			return keyUnclear // escapes or non-ASCII: let encoding/json judge
		}
	}
	switch {
	case string(k) == name:
		return keyExact
	case strings.EqualFold(string(k), name):
		return keyUnclear
	}
	return keyOther
}
