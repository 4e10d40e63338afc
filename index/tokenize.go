package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopwords are left out of the lexical index: function words carry no
// information about which tool fits, but they do match short documents.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by can could do does for from
		had has have how i if in into is it its me my of on or our please should so some
		than that the their them then there these they this to was we were what when where
		which who why will with would you your like`) {
		m[w] = true
	}
	return m
}()

// terms are the index terms of a text: its tokens without stopwords.
func terms(text string) []string {
	toks := tokens(text)
	out := toks[:0]
	for _, t := range toks {
		if !stopwords[t] {
			out = append(out, t)
		}
	}
	return out
}

// tokens splits text into lowercase words: runs of letters and digits,
// further split at camelCase boundaries ("getWeather" → "get", "weather";
// "HTTPServer" → "http", "server"). Plural and a few inflection endings are
// folded by stem, so "files" matches "file".
func tokens(text string) []string {
	return appendTokens(nil, text)
}

// appendTokens appends the tokens of text to out. ASCII text (nearly every
// tool document) takes a fast path that allocates only for words it must
// change (capitals, "-ies"); the tokens are then substrings of text, so a
// caller that keeps them must copy them.
func appendTokens(out []string, text string) []string {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return appendTokensUnicode(out, text)
		}
	}
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && asciiAlnum(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = appendCamelASCII(out, text[start:i])
			start = -1
		}
	}
	return out
}

func asciiAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func asciiUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func asciiLower(c byte) bool { return c >= 'a' && c <= 'z' }

// appendCamelASCII is appendCamel for an ASCII run of letters and digits.
func appendCamelASCII(out []string, w string) []string {
	start := 0
	for i := 1; i < len(w); i++ {
		prev, r := w[i-1], w[i]
		lowerToUpper := asciiLower(prev) && asciiUpper(r)
		acronymEnd := asciiUpper(prev) && asciiUpper(r) && i+1 < len(w) && asciiLower(w[i+1])
		if lowerToUpper || acronymEnd {
			out = append(out, stem(lowerASCII(w[start:i])))
			start = i
		}
	}
	return append(out, stem(lowerASCII(w[start:])))
}

// lowerASCII lowercases an ASCII word, allocating only if it has capitals.
func lowerASCII(w string) string {
	for i := 0; i < len(w); i++ {
		if asciiUpper(w[i]) {
			b := []byte(w)
			for j := i; j < len(b); j++ {
				if asciiUpper(b[j]) {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return w
}

// appendTokensUnicode is the general path of appendTokens.
func appendTokensUnicode(out []string, text string) []string {
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		out = appendCamel(out, text[start:end])
		start = -1
	}
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
	return out
}

// appendCamel splits one alphanumeric run at case changes and appends the
// lowercased, stemmed parts.
func appendCamel(out []string, w string) []string {
	start := 0
	var prev rune
	for i, r := range w {
		if i > 0 {
			_, size := utf8.DecodeRuneInString(w[i:])
			next, _ := utf8.DecodeRuneInString(w[i+size:])
			lowerToUpper := unicode.IsLower(prev) && unicode.IsUpper(r)
			acronymEnd := unicode.IsUpper(prev) && unicode.IsUpper(r) && unicode.IsLower(next)
			if lowerToUpper || acronymEnd {
				out = append(out, stem(strings.ToLower(w[start:i])))
				start = i
			}
		}
		prev = r
	}
	return append(out, stem(strings.ToLower(w[start:])))
}

// stem folds common English plural endings; it is deliberately light (it
// never changes words of four letters or fewer, and leaves "-ss" alone).
func stem(w string) string {
	n := len(w)
	switch {
	case n <= 4:
		return w
	case strings.HasSuffix(w, "ies") && n > 5:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:n-1]
	}
	return w
}
