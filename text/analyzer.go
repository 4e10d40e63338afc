package text

import (
	"strings"
	"unicode/utf8"
)

// An Analyzer turns text into terms. The zero value splits at camel case
// (Camel), lowercases and keeps every word unstemmed. An Analyzer is a
// value: copy it and change a field to get another mode.
type Analyzer struct {
	// Split says how the text is cut into words.
	Split Split
	// MinRunes drops the words of fewer runes, counted after lowercasing
	// (0 and 1 keep every word).
	MinRunes int
	// DropNumbers drops the words made of ASCII digits only ("42", "2024";
	// not "mp3", not other scripts' digits).
	DropNumbers bool
	// Stop drops the words it holds (nil: none).
	Stop *Stopwords
	// StopStemmed looks the stemmed word up in Stop (so "theirs", stemmed to
	// "their", is dropped too); otherwise the lowercased word is looked up
	// before stemming.
	StopStemmed bool
	// Stem maps a lowercased word to its stem (nil: no stemming).
	Stem func(string) string
	// Classes turns numbers, arithmetic operators, percentages, sizes,
	// durations, times, dates, hex strings and the like into class terms
	// ("17" → ClassNumber, "15%" → ClassPercent; classes.go). A number
	// inside an identifier ("x86_64", "v1.2") stays a word.
	Classes bool
	// Literals, with Classes, gives a plain number as its digit groups
	// ("19.99" → "19", "99") and a number word as itself ("seven"), not as
	// ClassNumber, and keeps after every other class term the digits or
	// the hex string it was made of ("15%" → "<pct>", "15"). For the
	// lexical index: a number is in too many documents for a weight of its
	// own to tell tools apart (measured: learn/MODEL.md), an operator or a
	// percentage is not.
	Literals bool
	// Phrases, if set, adds a phrase term (the words joined by a space:
	// "where is") for runs of 2–4 consecutive words it holds (stop words),
	// so that a phrase made only of stop words can match as a phrase.
	// Runs do not cross punctuation.
	Phrases *Stopwords
	// WholePhrases: only a run that is a whole part of the text between
	// punctuation gives a phrase term (a document's keyword "where is");
	// otherwise every run of 2–4 consecutive words within a longer run of
	// them does (a message's "so where is it" gives "where is" among
	// others).
	WholePhrases bool
	// LeadPhrases, with WholePhrases, also gives a part that starts with a
	// run of 2 or more stop words the first 2–4 words of that run (a
	// keyword "where is the file": "where is", "where is the"), as a
	// request that begins so says them.
	LeadPhrases bool
}

// Index is the analysis of a message for the lexical index: Camel words,
// lowercased, plural endings folded (Plural), IndexStopwords dropped after
// folding; symbols and numbers with a unit or form (operators,
// percentages, sizes, dates, …) as class terms, the digits kept beside
// them, plain numbers as their digits (Literals); every run of 2–4 stop
// words also as a phrase. One-letter words are kept.
func Index() Analyzer {
	return Analyzer{Split: Camel, Stop: IndexStopwords(), StopStemmed: true, Stem: Plural,
		Classes: true, Literals: true, Phrases: IndexStopwords()}
}

// IndexDocument is the analysis of a tool's document for the lexical
// index: Index, but with only a whole part of the text between
// punctuation made of 2–4 stop words as a phrase (a keyword "where is").
func IndexDocument() Analyzer {
	a := Index()
	a.WholePhrases = true
	return a
}

// IndexKeywords is the analysis of a tool's keywords for the lexical
// index: IndexDocument, and a keyword that starts with stop words gives
// the phrases that start it (LeadPhrases: "where is the file": "where
// is", "where is the").
func IndexKeywords() Analyzer {
	a := IndexDocument()
	a.LeadPhrases = true
	return a
}

// Table is the analysis the built-in embedder's table is keyed by:
// CamelDigit words, lowercased; numbers and symbols as class terms
// (Classes, without their digits); one-rune words, other numbers and
// TableStopwords dropped; the rest Porter-stemmed. The shipped table
// depends on every detail of it.
func Table() Analyzer {
	return Analyzer{Split: CamelDigit, MinRunes: 2, DropNumbers: true, Stop: TableStopwords(), Stem: Porter, Classes: true}
}

// Reference is the tokeniser of the reference BM25 (the plain baseline the
// evaluation corpora were published with): the text lowercased, runs of a–z and 0–9, nothing dropped or stemmed.
func Reference() Analyzer {
	return Analyzer{Split: ASCIIRuns}
}

// A Cache maps a lowercased word to the term an Analyzer makes of it ("" for
// a dropped word), so that a word seen before costs one lookup instead of
// its stop-list lookups and stemming. A cache belongs to one Analyzer mode;
// it is not safe for concurrent use. Its keys are copies (it never keeps a
// text alive); bound its size by dropping it when it grows too large.
type Cache map[string]string

// Terms returns the terms of text, repeats kept, in order.
func (a Analyzer) Terms(text string) []string {
	return a.Append(nil, text, nil)
}

// Append appends the terms of text to dst (repeats kept, in order) and
// returns the extended slice. c, if not nil, caches the analysis of words.
// A term may be a substring of text: a caller that keeps terms beyond the
// life of text should copy them.
func (a Analyzer) Append(dst []string, text string, c Cache) []string {
	if a.Classes || a.Phrases != nil {
		return a.appendClassed(dst, text, c)
	}
	if a.Split == ASCIIRuns {
		for _, w := range asciiRuns(text) {
			dst = a.appendWord(dst, w, c, nil)
		}
		return dst
	}
	start := -1
	for i := 0; i < len(text); {
		b, size, alnum := text[i], 1, false
		if b < utf8.RuneSelf {
			alnum = isAlnumASCII(b)
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			alnum = isAlnum(r)
		}
		if alnum {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			dst = a.appendRun(dst, text[start:i], c, nil)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		dst = a.appendRun(dst, text[start:], c, nil)
	}
	return dst
}

// appendWord appends the term of one word (not yet lowercased), if any;
// ph (nil: no phrases) follows the runs of stop words.
func (a Analyzer) appendWord(dst []string, w string, c Cache, ph *phrases) []string {
	w = lower(w)
	if a.Classes && numberWords.has(w) {
		if a.Literals {
			dst = append(dst, w)
		} else {
			dst = append(dst, ClassNumber)
		}
		return ph.word(dst, "")
	}
	if ph != nil {
		n := len(dst)
		dst = a.appendWordCached(dst, w, c)
		t := ""
		if len(dst) > n {
			t = dst[n]
		}
		return ph.word(dst, a.phraseWord(w, t))
	}
	return a.appendWordCached(dst, w, c)
}

// appendWordCached appends the term of a lowercased word, if any.
func (a Analyzer) appendWordCached(dst []string, w string, c Cache) []string {
	if c != nil {
		if t, ok := c[w]; ok {
			if t != "" {
				dst = append(dst, t)
			}
			return dst
		}
	}
	if c != nil {
		w = strings.Clone(w) // the key, and any term that is a part of it
	}
	t := a.term(w)
	if c != nil {
		c[w] = t
	}
	if t != "" {
		dst = append(dst, t)
	}
	return dst
}

// term is the term of a lowercased word, "" if the word is dropped.
func (a Analyzer) term(w string) string {
	if a.MinRunes > 1 && utf8.RuneCountInString(w) < a.MinRunes {
		return ""
	}
	if a.DropNumbers && isNumber(w) {
		return ""
	}
	if a.Stop != nil && !a.StopStemmed && a.Stop.Has(w) {
		return ""
	}
	if a.Stem != nil {
		w = a.Stem(w)
	}
	if a.Stop != nil && a.StopStemmed && a.Stop.Has(w) {
		return ""
	}
	return w
}

// lower lowercases a word, allocating only if it changes.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		b := w[i]
		if b >= utf8.RuneSelf {
			return strings.ToLower(w)
		}
		if isUpperASCII(b) {
			return lowerFrom(w, i)
		}
	}
	return w
}

// lowerFrom lowercases w, whose first capital is at i; the rest of w may
// hold other scripts.
func lowerFrom(w string, i int) string {
	for j := i; j < len(w); j++ {
		if w[j] >= utf8.RuneSelf {
			return strings.ToLower(w)
		}
	}
	b := []byte(w)
	for j := i; j < len(b); j++ {
		if isUpperASCII(b[j]) {
			b[j] += 'a' - 'A'
		}
	}
	return string(b)
}

// isNumber reports whether w is made of ASCII digits only.
func isNumber(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}
