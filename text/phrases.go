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
	lead    bool            // (whole) a part's leading run gives its first words too
	src     string          // the text
	at      int             // where in src the run of letters being analysed starts
	run     [maxRun]runWord // the current run's words
	n       int             // len of run
	spoiled bool            // (whole) the current part has another word
}

// runWord is a word of a run: its phrase form and where in the text the
// run of letters it came from starts.
type runWord struct {
	w  string
	at int
}

// initPhrases readies ph for the text src and returns it, or nil when a
// makes no phrases.
func (a Analyzer) initPhrases(ph *phrases, src string) *phrases {
	if a.Phrases == nil {
		return nil
	}
	ph.whole, ph.lead, ph.src = a.WholePhrases, a.WholePhrases && a.LeadPhrases, src
	return ph
}

// phraseWord is the form of a lowercased word in a phrase, "" if it is no
// phrase word; t is the term the word gave ("" if dropped).
func (a Analyzer) phraseWord(w, t string) string {
	if a.Phrases == a.Stop && a.StopStemmed && a.MinRunes <= 1 && !a.DropNumbers {
		// The phrase words are the stop list (the index's analysis): a
		// kept word is none, a dropped one is, as its stem.
		switch {
		case t != "":
			return ""
		case a.Stem != nil:
			return a.Stem(w)
		}
		return w
	}
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
			if ph.lead && !ph.spoiled {
				dst = ph.leading(dst)
			}
			ph.spoiled = true
			ph.n = 0
			return dst
		}
		return ph.flush(dst)
	}
	if ph.n == maxRun {
		if ph.whole {
			ph.spoiled = true
			return dst
		}
		dst = ph.flush(dst)
	}
	ph.run[ph.n] = runWord{pw, ph.at}
	ph.n++
	return dst
}

// boundary ends the current part of the text (punctuation, the end).
func (ph *phrases) boundary(dst []string) []string {
	if ph == nil {
		return dst
	}
	if ph.whole {
		switch {
		case ph.spoiled:
		case ph.lead && ph.n > minPhrase:
			dst = ph.leading(dst)
		case ph.n >= minPhrase && ph.n <= maxPhrase:
			dst = append(dst, ph.join(ph.run[:ph.n]))
		}
		ph.n, ph.spoiled = 0, false
		return dst
	}
	return ph.flush(dst)
}

// leading appends the first 2–4 words of the current run, which starts
// the part (LeadPhrases).
func (ph *phrases) leading(dst []string) []string {
	for n := minPhrase; n <= maxPhrase && n <= ph.n; n++ {
		dst = append(dst, ph.join(ph.run[:n]))
	}
	return dst
}

// flush appends every run of minPhrase–maxPhrase consecutive words of the
// current run (a message's phrases) and starts a new run.
func (ph *phrases) flush(dst []string) []string {
	run := ph.run[:ph.n]
	for a := range run {
		for n := minPhrase; n <= maxPhrase && a+n <= len(run); n++ {
			dst = append(dst, ph.join(run[a:a+n]))
		}
	}
	ph.n = 0
	return dst
}

// join is the phrase of words: their forms joined by a space, a part of
// the text itself where the text says just that (most phrases: a message
// in lower case), else a new string.
func (ph *phrases) join(words []runWord) string {
	start := words[0].at
	end := start
	for k, w := range words {
		if k > 0 {
			if end >= len(ph.src) || ph.src[end] != ' ' {
				return ph.joinNew(words)
			}
			end++
		}
		if len(ph.src)-end < len(w.w) || ph.src[end:end+len(w.w)] != w.w {
			return ph.joinNew(words)
		}
		end += len(w.w)
	}
	return ph.src[start:end]
}

// joinNew is join's new string.
func (ph *phrases) joinNew(words []runWord) string {
	n := len(words) - 1
	for _, w := range words {
		n += len(w.w)
	}
	var b strings.Builder
	b.Grow(n)
	for k, w := range words {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.w)
	}
	return b.String()
}
