package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Split says how an Analyzer cuts text into words.
type Split uint8

const (
	// Camel words are the runs of Unicode letters and digits, cut again
	// where a lowercase letter is followed by a capital ("getWeather" →
	// "get", "Weather") and before the last capital of an acronym followed
	// by a lowercase letter ("HTTPServer" → "HTTP", "Server"). A digit
	// followed by a capital is no boundary ("v2Data" stays one word).
	// snake_case, kebab-case and camelCase identifiers all become words.
	Camel Split = iota
	// CamelDigit is Camel, with a digit followed by a capital as a boundary
	// too ("v2Data" → "v2", "Data").
	CamelDigit
	// ASCIIRuns lowercases the whole text (Unicode case folding) and takes
	// the runs of a–z and 0–9; every other character separates words
	// ("météo" → "m", "t", "o"). There are no case boundaries.
	ASCIIRuns
)

// appendRun cuts one run of letters and digits at its case boundaries and
// appends the parts' terms. An ASCII run takes a byte loop.
func (a Analyzer) appendRun(dst []string, run string, c Cache, ph *phrases) []string {
	for i := 0; i < len(run); i++ {
		if run[i] >= utf8.RuneSelf {
			return a.appendRunUnicode(dst, run, c, ph)
		}
	}
	digit := a.Split == CamelDigit
	start := 0
	for i := 1; i < len(run); i++ {
		b, p := run[i], run[i-1]
		if !isUpperASCII(b) {
			continue
		}
		if isLowerASCII(p) || digit && isDigitASCII(p) ||
			isUpperASCII(p) && i+1 < len(run) && isLowerASCII(run[i+1]) {
			dst = a.appendWord(dst, run[start:i], c, ph)
			start = i
		}
	}
	return a.appendWord(dst, run[start:], c, ph)
}

// appendRunUnicode is appendRun for a run that is not all ASCII.
func (a Analyzer) appendRunUnicode(dst []string, run string, c Cache, ph *phrases) []string {
	digit := a.Split == CamelDigit
	start := 0
	var prev rune
	for i, r := range run {
		if i > 0 && unicode.IsUpper(r) {
			cut := unicode.IsLower(prev) || digit && unicode.IsDigit(prev)
			if !cut && unicode.IsUpper(prev) {
				next, _ := utf8.DecodeRuneInString(run[i+utf8.RuneLen(r):])
				cut = unicode.IsLower(next)
			}
			if cut {
				dst = a.appendWord(dst, run[start:i], c, ph)
				start = i
			}
		}
		prev = r
	}
	return a.appendWord(dst, run[start:], c, ph)
}

// asciiRuns is the ASCIIRuns split.
func asciiRuns(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isAlnumASCII(b byte) bool { return isLowerASCII(b) || isUpperASCII(b) || isDigitASCII(b) }
func isUpperASCII(b byte) bool { return 'A' <= b && b <= 'Z' }
func isLowerASCII(b byte) bool { return 'a' <= b && b <= 'z' }
func isDigitASCII(b byte) bool { return '0' <= b && b <= '9' }
