package index

import (
	"slices"

	"github.com/toolsrv/toolsrv/registry"
)

// FieldMatch is the words of a message that one field of a tool's document
// holds.
type FieldMatch struct {
	// Field is name, description, keywords, arguments or prompt.
	Field string `json:"field"`
	// Words are the message's index terms the field holds (lower case,
	// plural endings folded: as the lexical index matches them), in the
	// message's order.
	Words []string `json:"words"`
	// Weight is how much a word of the field counts in the lexical score
	// (0: it counts only in the embedding and the learned last step's
	// per-field features).
	Weight float64 `json:"weight"`
}

// fieldLabel names field i of a document (fieldsOf's order).
func fieldLabel(i int) string {
	return [...]string{"name", "description", "keywords", "arguments", "prompt"}[i]
}

// Matches says which words of text (a message) each field of t's document
// holds, analysed as the lexical index analyses them; fields that hold
// none are left out. It explains a ranking's lexical part and the learned
// last step's per-field features.
func Matches(t *registry.Tool, text string) []FieldMatch {
	q := terms(text)
	if t == nil || len(q) == 0 {
		return nil
	}
	var out []FieldMatch
	for i, f := range fieldsOf(t) {
		has := map[string]bool{}
		for _, w := range docTerms(f.text, i) {
			has[w] = true
		}
		var words []string
		for _, w := range q {
			if has[w] && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
		if len(words) > 0 {
			out = append(out, FieldMatch{Field: fieldLabel(i), Words: words, Weight: float64(f.weight)})
		}
	}
	return out
}
