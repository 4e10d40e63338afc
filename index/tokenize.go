package index

import "github.com/toolsrv/toolsrv/text"

// The index analyses text with text.Index: camel-case words, lowercased,
// plural endings folded, a short stop list dropped after folding.

// terms are the index terms of a text: its tokens without stopwords.
func terms(s string) []string {
	return text.Index().Terms(s)
}

// tokens are the index's words of a text before the stop list.
func tokens(s string) []string {
	return appendTokens(nil, s)
}

// appendTokens appends the tokens of s (before the stop list) to out. The
// lexicon drops stopwords itself: they are in its term dictionary with id
// -1, so one lookup both interns a word and filters it. A token may be a
// substring of s: a caller that keeps it must copy it.
func appendTokens(out []string, s string) []string {
	a := text.Index()
	a.Stop = nil
	return a.Append(out, s, nil)
}

// stopwords are the words the lexicon maps to -1.
func stopwords() *text.Stopwords { return text.IndexStopwords() }
