package index

import (
	"strings"
)

// namedTools finds the tools a message names. A name counts when it is
// written as a word of its own (runs of letters, digits, '_', '.', '-';
// trailing '.'/'-' trimmed) and either is written exactly as the tool's
// name (same case and separators) and looks like an identifier (it has
// '_', '.', '-', a digit or a capital after a lower-case letter:
// git_status, pdf2text, getWeather), or is set off as one, in any case:
// quoted or in backticks ("search", `search`) or next to the word "tool"
// ("the search tool"). A plain word that happens to be a tool's name
// ("search for papers") does not count: measured on the eval corpora, it
// picked the wrong tool more often than not; nor does an ordinary word in
// capitals ("every TODO comment" does not name the tool todo). Names
// shorter than three characters never count.
func namedTools(text string, byName map[string]int) map[string]bool {
	out := map[string]bool{}
	isName := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
	}
	type word struct {
		w          string
		start, end int
	}
	var words []word
	start := -1
	for i, r := range text + " " {
		switch {
		case isName(r) && start < 0:
			start = i
		case !isName(r) && start >= 0:
			words = append(words, word{text[start:i], start, i})
			start = -1
		}
	}
	for i, w := range words {
		name := strings.TrimRight(w.w, ".-")
		if len(name) < 3 {
			continue
		}
		if _, ok := byName[name]; ok && identifierLike(name) {
			out[name] = true
			continue
		}
		if _, ok := byName[name]; !ok {
			name = strings.ToLower(name)
			if _, ok := byName[name]; !ok {
				continue
			}
		}
		before, after := byte(' '), byte(' ')
		if w.start > 0 {
			before = text[w.start-1]
		}
		if w.end < len(text) {
			after = text[w.end]
		}
		quoted := (before == '`' || before == '"' || before == '\'') && before == after
		nextToTool := i > 0 && strings.EqualFold(words[i-1].w, "tool") ||
			i+1 < len(words) && strings.EqualFold(strings.TrimRight(words[i+1].w, ".-"), "tool")
		if quoted || nextToTool {
			out[name] = true
		}
	}
	return out
}

// identifierLike says whether a word looks like an identifier rather than
// an ordinary word.
func identifierLike(w string) bool {
	lower := false
	for i, r := range w {
		switch {
		case r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9':
			return true
		case i > 0 && r >= 'A' && r <= 'Z' && lower:
			return true
		case r >= 'a' && r <= 'z':
			lower = true
		}
	}
	return false
}
