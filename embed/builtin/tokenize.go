package builtin

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize splits text into the terms the table is keyed by: runs of letters
// and digits, further split at camelCase and ACRONYMWord boundaries (so
// snake_case, kebab-case and camelCase identifiers all become words),
// lowercased, with stopwords, one-letter tokens and pure numbers dropped, and
// Porter-stemmed. Repeated terms are kept, in order.
func Tokenize(text string) []string {
	return AppendTokens(nil, text)
}

// AppendTokens is Tokenize appending to dst (to reuse a buffer).
func AppendTokens(dst []string, text string) []string {
	return appendTokens(dst, text, nil)
}

// appendTokens is AppendTokens with an optional cache from lowercased word
// to term ("" for a dropped word), which saves the stemming of words seen
// before.
func appendTokens(dst []string, text string, cache map[string]string) []string {
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			dst = appendRun(dst, text[start:i], cache)
			start = -1
		}
	}
	if start >= 0 {
		dst = appendRun(dst, text[start:], cache)
	}
	return dst
}

// appendRun splits one alphanumeric run at case boundaries and appends its
// terms: lower/digit→Upper ("getUser", "v2Data") and UPPER→Upper+lower
// ("HTTPServer" → "HTTP", "Server").
func appendRun(dst []string, run string, cache map[string]string) []string {
	ascii := true
	for i := 0; i < len(run); i++ {
		if run[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return appendRunRunes(dst, []rune(run), cache)
	}
	start := 0
	for i := 1; i < len(run); i++ {
		c, p := run[i], run[i-1]
		if !isUpperASCII(c) {
			continue
		}
		if isLowerASCII(p) || isDigitASCII(p) ||
			(isUpperASCII(p) && i+1 < len(run) && isLowerASCII(run[i+1])) {
			dst = appendTerm(dst, run[start:i], cache)
			start = i
		}
	}
	return appendTerm(dst, run[start:], cache)
}

func appendRunRunes(dst []string, rs []rune, cache map[string]string) []string {
	start := 0
	for i := 1; i < len(rs); i++ {
		c, p := rs[i], rs[i-1]
		if !unicode.IsUpper(c) {
			continue
		}
		if unicode.IsLower(p) || unicode.IsDigit(p) ||
			(unicode.IsUpper(p) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			dst = appendTerm(dst, string(rs[start:i]), cache)
			start = i
		}
	}
	return appendTerm(dst, string(rs[start:]), cache)
}

func isUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLowerASCII(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigitASCII(c byte) bool { return '0' <= c && c <= '9' }

func appendTerm(dst []string, t string, cache map[string]string) []string {
	if t == "" {
		return dst
	}
	t = lowerASCII(t)
	if cache != nil {
		if term, ok := cache[t]; ok {
			if term == "" {
				return dst
			}
			return append(dst, term)
		}
	}
	term := ""
	if utf8.RuneCountInString(t) >= 2 && !isNumber(t) {
		if _, stop := stopwords[t]; !stop {
			term = stem(t)
		}
	}
	if cache != nil {
		cache[t] = term
	}
	if term == "" {
		return dst
	}
	return append(dst, term)
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// stopwords are English function words and request boilerplate that carry no
// meaning about which tool is wanted.
var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves also may might must shall us
let lets please want wants like need needs tell know via etc eg ie yes okay ok hi hello
thanks thank`) {
		m[w] = struct{}{}
	}
	return m
}()
