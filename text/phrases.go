package text

import "strings"

// Phrase terms: a keyword made only of stop words ("where is", "how
// much") has no term once its stop words are dropped, so it could never
// match. With Analyzer.Phrases set, a run of such words also gives one
// term, its words joined by a space (which no word holds): a document
// gives the runs that make a whole part of its text between punctuation
// (WholePhrases: the keyword itself), a message every run of 2–4
// consecutive stop words within its runs, so that "so where is it" holds
// "where is".

// Phrase lengths, in words.
const (
	minPhrase = 2
	maxPhrase = 4
	// maxRun bounds the run of stop words a message's phrases are taken
	// from (a longer run starts again).
	maxRun = 8
)

// phrases follows the runs of phrase words of one text.
type phrases struct {
	whole   bool
	run     []string // the current run's words
	spoiled bool     // (whole) the current part has another word
}

func (a Analyzer) newPhrases() *phrases {
	if a.Phrases == nil {
		return nil
	}
	return &phrases{whole: a.WholePhrases}
}

// phraseWord is the form of a lowercased word in a phrase, "" if it is no
// phrase word; t is the term the word gave ("" if dropped).
func (a Analyzer) phraseWord(w, t string) string {
	if t != "" {
		if a.Phrases.Has(t) {
			return t
		}
		return ""
	}
	if a.Stem != nil {
		if s := a.Stem(w); a.Phrases.Has(s) {
			return s
		}
	}
	if a.Phrases.Has(w) {
		return w
	}
	return ""
}

// word notes the next word of the text (pw: its phrase form, "" for a word
// that is none) and returns dst with the phrase terms of a run it ends.
func (ph *phrases) word(dst []string, pw string) []string {
	if ph == nil {
		return dst
	}
	if pw == "" {
		if ph.whole {
			ph.spoiled = true
			ph.run = ph.run[:0]
			return dst
		}
		return ph.flush(dst)
	}
	if len(ph.run) == maxRun {
		if ph.whole {
			ph.spoiled = true
			return dst
		}
		dst = ph.flush(dst)
	}
	ph.run = append(ph.run, pw)
	return dst
}

// boundary ends the current part of the text (punctuation, the end).
func (ph *phrases) boundary(dst []string) []string {
	if ph == nil {
		return dst
	}
	if ph.whole {
		if !ph.spoiled && len(ph.run) >= minPhrase && len(ph.run) <= maxPhrase {
			dst = append(dst, strings.Join(ph.run, " "))
		}
		ph.run, ph.spoiled = ph.run[:0], false
		return dst
	}
	return ph.flush(dst)
}

// flush appends every run of minPhrase–maxPhrase consecutive words of the
// current run (a message's phrases) and starts a new run.
func (ph *phrases) flush(dst []string) []string {
	for a := range ph.run {
		for n := minPhrase; n <= maxPhrase && a+n <= len(ph.run); n++ {
			dst = append(dst, strings.Join(ph.run[a:a+n], " "))
		}
	}
	ph.run = ph.run[:0]
	return dst
}
