package index

import (
	"strings"
	"unicode"

	"github.com/toolsrv/toolsrv/text"
)

// The index analyses a message with text.Index and a document's fields with
// text.IndexDocument: camel-case words, lowercased, plural endings folded,
// a short stop list dropped after folding, numbers and symbols as class
// terms beside their digits, and phrases of stop words ("where is") as
// terms of their own. In a document only a whole part of a field between
// punctuation is a phrase, and the stop words a keyword starts with (the
// keywords are joined by commas; text.IndexKeywords): "where is" and
// "where is the" of "where is the file", not the runs inside a keyword
// ("is the", "of the" of "size of the file"); in a message every
// run of 2–4 stop words is one, so that "so where is it" meets the
// keyword. Such optional terms (text.Optional: classes, numbers, phrases)
// only break ties between tools that match a real word of the message
// (bm25Plan).

// terms are the index terms of a message: its tokens without stopwords,
// with the phrases of its runs of stop words.
func terms(s string) []string {
	return text.Index().Terms(s)
}

// hasWord reports whether s has a word: a letter or a digit (what makes
// tokens(s) not empty, without analysing s).
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// tokens are the index's words of a document's text (not its keywords)
// before the stop list.
func tokens(s string) []string {
	return appendTokens(nil, s, fieldPrompt)
}

// fieldAnalyzer is the analysis of a document's field fi (fieldName, …).
func fieldAnalyzer(fi int) text.Analyzer {
	if fi == fieldKeywords {
		return text.IndexKeywords()
	}
	return text.IndexDocument()
}

// appendTokens appends the tokens of s (a document's field fi, before the
// stop list) to out. The lexicon drops stopwords itself: they are in its
// term dictionary with id -1, so one lookup both interns a word and
// filters it. A token may be a substring of s: a caller that keeps it
// must copy it.
func appendTokens(out []string, s string, fi int) []string {
	a := fieldAnalyzer(fi)
	a.Stop = nil
	return a.Append(out, s, nil)
}

// docTerms are the index terms of a document's field fi: its tokens
// without stopwords.
func docTerms(s string, fi int) []string {
	return fieldAnalyzer(fi).Terms(s)
}

// stopwords are the words the lexicon maps to -1.
func stopwords() *text.Stopwords { return text.IndexStopwords() }

// known returns the terms of a lexical query that count: an optional term
// (text.Optional: a class, a number, a phrase of stop words) counts only
// where some document of v holds it; a word no document holds counts (it
// is information the catalog cannot match). It returns q itself when
// every term counts. Caller holds Index.mu for reading.
func (v *view) known(q map[string]float64) map[string]float64 {
	drop := 0
	for t := range q {
		if text.Optional(t) && v.lex.df(t) == 0 {
			drop++
		}
	}
	if drop == 0 {
		return q
	}
	out := make(map[string]float64, len(q)-drop)
	for t, w := range q {
		if !text.Optional(t) || v.lex.df(t) > 0 {
			out[t] = w
		}
	}
	return out
}
