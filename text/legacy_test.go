package text

// The analysers as they were before this package (index/tokenize.go,
// embed/builtin/tokenize.go and stem.go, embed/train/eval.go's lexTokens),
// kept verbatim but renamed as the oracle of TestSameAsBefore.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ---- index/tokenize.go ----

var oldIndexStopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by can could do does for from
		had has have how i if in into is it its me my of on or our please should so some
		than that the their them then there these they this to was we were what when where
		which who why will with would you your`) {
		m[w] = true
	}
	return m
}()

// terms are the index terms of a text: its tokens without oldIndexStopwords.
func oldIndexTerms(text string) []string {
	toks := oldIndexTokens(text)
	out := toks[:0]
	for _, t := range toks {
		if !oldIndexStopwords[t] {
			out = append(out, t)
		}
	}
	return out
}

// tokens splits text into lowercase words: runs of letters and digits,
// further split at camelCase boundaries ("getWeather" → "get", "weather";
// "HTTPServer" → "http", "server"). Plural and a few inflection endings are
// folded by stem, so "files" matches "file".
func oldIndexTokens(text string) []string {
	return oldIndexAppendTokens(nil, text)
}

// oldIndexAppendTokens appends the tokens of text to out. ASCII text (nearly every
// tool document) takes a fast path that allocates only for words it must
// change (capitals, "-ies"); the tokens are then substrings of text, so a
// caller that keeps them must copy them.
func oldIndexAppendTokens(out []string, text string) []string {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return oldIndexAppendTokensUnicode(out, text)
		}
	}
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && oldAsciiAlnum(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = oldIndexAppendCamelASCII(out, text[start:i])
			start = -1
		}
	}
	return out
}

func oldAsciiAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func oldAsciiUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func oldAsciiLower(c byte) bool { return c >= 'a' && c <= 'z' }

// oldIndexAppendCamelASCII is oldIndexAppendCamel for an ASCII run of letters and digits.
func oldIndexAppendCamelASCII(out []string, w string) []string {
	start := 0
	for i := 1; i < len(w); i++ {
		prev, r := w[i-1], w[i]
		lowerToUpper := oldAsciiLower(prev) && oldAsciiUpper(r)
		acronymEnd := oldAsciiUpper(prev) && oldAsciiUpper(r) && i+1 < len(w) && oldAsciiLower(w[i+1])
		if lowerToUpper || acronymEnd {
			out = append(out, oldIndexStem(oldIndexLowerASCII(w[start:i])))
			start = i
		}
	}
	return append(out, oldIndexStem(oldIndexLowerASCII(w[start:])))
}

// oldIndexLowerASCII lowercases an ASCII word, allocating only if it has capitals.
func oldIndexLowerASCII(w string) string {
	for i := 0; i < len(w); i++ {
		if oldAsciiUpper(w[i]) {
			b := []byte(w)
			for j := i; j < len(b); j++ {
				if oldAsciiUpper(b[j]) {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return w
}

// oldIndexAppendTokensUnicode is the general path of oldIndexAppendTokens.
func oldIndexAppendTokensUnicode(out []string, text string) []string {
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		out = oldIndexAppendCamel(out, text[start:end])
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

// oldIndexAppendCamel splits one alphanumeric run at case changes and appends the
// lowercased, stemmed parts.
func oldIndexAppendCamel(out []string, w string) []string {
	start := 0
	var prev rune
	for i, r := range w {
		if i > 0 {
			_, size := utf8.DecodeRuneInString(w[i:])
			next, _ := utf8.DecodeRuneInString(w[i+size:])
			lowerToUpper := unicode.IsLower(prev) && unicode.IsUpper(r)
			acronymEnd := unicode.IsUpper(prev) && unicode.IsUpper(r) && unicode.IsLower(next)
			if lowerToUpper || acronymEnd {
				out = append(out, oldIndexStem(strings.ToLower(w[start:i])))
				start = i
			}
		}
		prev = r
	}
	return append(out, oldIndexStem(strings.ToLower(w[start:])))
}

// stem folds common English plural endings; it is deliberately light (it
// never changes words of four letters or fewer, and leaves "-ss" alone).
func oldIndexStem(w string) string {
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

// ---- embed/builtin/tokenize.go ----

func oldTableAppendTokens(dst []string, text string, cache map[string]string) []string {
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			dst = oldTableAppendRun(dst, text[start:i], cache)
			start = -1
		}
	}
	if start >= 0 {
		dst = oldTableAppendRun(dst, text[start:], cache)
	}
	return dst
}

// oldTableAppendRun splits one alphanumeric run at case boundaries and appends its
// terms: lower/digit→Upper ("getUser", "v2Data") and UPPER→Upper+lower
// ("HTTPServer" → "HTTP", "Server").
func oldTableAppendRun(dst []string, run string, cache map[string]string) []string {
	ascii := true
	for i := 0; i < len(run); i++ {
		if run[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		return oldTableAppendRunRunes(dst, []rune(run), cache)
	}
	start := 0
	for i := 1; i < len(run); i++ {
		c, p := run[i], run[i-1]
		if !oldIsUpperASCII(c) {
			continue
		}
		if oldIsLowerASCII(p) || oldIsDigitASCII(p) ||
			(oldIsUpperASCII(p) && i+1 < len(run) && oldIsLowerASCII(run[i+1])) {
			dst = oldTableAppendTerm(dst, run[start:i], cache)
			start = i
		}
	}
	return oldTableAppendTerm(dst, run[start:], cache)
}

func oldTableAppendRunRunes(dst []string, rs []rune, cache map[string]string) []string {
	start := 0
	for i := 1; i < len(rs); i++ {
		c, p := rs[i], rs[i-1]
		if !unicode.IsUpper(c) {
			continue
		}
		if unicode.IsLower(p) || unicode.IsDigit(p) ||
			(unicode.IsUpper(p) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			dst = oldTableAppendTerm(dst, string(rs[start:i]), cache)
			start = i
		}
	}
	return oldTableAppendTerm(dst, string(rs[start:]), cache)
}

func oldIsUpperASCII(c byte) bool { return 'A' <= c && c <= 'Z' }
func oldIsLowerASCII(c byte) bool { return 'a' <= c && c <= 'z' }
func oldIsDigitASCII(c byte) bool { return '0' <= c && c <= '9' }

func oldTableAppendTerm(dst []string, t string, cache map[string]string) []string {
	if t == "" {
		return dst
	}
	t = oldTableLowerASCII(t)
	if cache != nil {
		if term, ok := cache[t]; ok {
			if term == "" {
				return dst
			}
			return append(dst, term)
		}
	}
	term := ""
	if utf8.RuneCountInString(t) >= 2 && !oldIsNumber(t) {
		if _, stop := oldTableStopwords[t]; !stop {
			term = oldPorter(t)
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

func oldTableLowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

func oldIsNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// oldTableStopwords are English function words and request boilerplate that carry no
// meaning about which tool is wanted.
var oldTableStopwords = func() map[string]struct{} {
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

// ---- embed/builtin/stem.go ----

// oldPorter is the Porter (1980) stemming algorithm for lowercase ASCII words.
// Words with non-ASCII letters or of length ≤ 2 are returned unchanged.
func oldPorter(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	s := &oldStemmer{b: []byte(w)}
	s.step1ab()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return string(s.b)
}

type oldStemmer struct {
	b []byte
	j int // end of the stem under consideration (exclusive)
}

func (s *oldStemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !s.cons(i - 1)
	}
	return true
}

// m counts VC sequences in b[0:j].
func (s *oldStemmer) m() int {
	n, i := 0, 0
	for {
		if i >= s.j {
			return n
		}
		if !s.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i >= s.j {
				return n
			}
			if s.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i >= s.j {
				return n
			}
			if !s.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

func (s *oldStemmer) vowelInStem() bool {
	for i := 0; i < s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

func (s *oldStemmer) doublec(i int) bool {
	if i < 1 || s.b[i] != s.b[i-1] {
		return false
	}
	return s.cons(i)
}

// cvc: b[i-2],b[i-1],b[i] is consonant-vowel-consonant and the last is not w, x or y.
func (s *oldStemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *oldStemmer) ends(suf string) bool {
	n := len(s.b)
	if len(suf) > n || string(s.b[n-len(suf):]) != suf {
		return false
	}
	s.j = n - len(suf)
	return true
}

func (s *oldStemmer) setto(r string) {
	s.b = append(s.b[:s.j], r...)
}

func (s *oldStemmer) r(rep string) {
	if s.m() > 0 {
		s.setto(rep)
	}
}

func (s *oldStemmer) step1ab() {
	if s.b[len(s.b)-1] == 's' {
		switch {
		case s.ends("sses"):
			s.b = s.b[:len(s.b)-2]
		case s.ends("ies"):
			s.setto("i")
		case len(s.b) >= 2 && s.b[len(s.b)-2] != 's':
			s.b = s.b[:len(s.b)-1]
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.b = s.b[:s.j]
		k := len(s.b) - 1
		switch {
		case s.ends("at"):
			s.setto("ate")
		case s.ends("bl"):
			s.setto("ble")
		case s.ends("iz"):
			s.setto("ize")
		case s.doublec(k):
			switch s.b[k] {
			case 'l', 's', 'z':
			default:
				s.b = s.b[:k]
			}
		default:
			s.j = len(s.b)
			if s.m() == 1 && s.cvc(k) {
				s.b = append(s.b, 'e')
			}
		}
	}
}

func (s *oldStemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[len(s.b)-1] = 'i'
	}
}

var oldStep2Rules = [...][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"logi", "log"},
}

func (s *oldStemmer) step2() {
	if len(s.b) < 3 {
		return
	}
	for _, r := range oldStep2Rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

var oldStep3Rules = [...][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func (s *oldStemmer) step3() {
	for _, r := range oldStep3Rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

var oldStep4Suffixes = [...]string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func (s *oldStemmer) step4() {
	for _, suf := range oldStep4Suffixes {
		if s.ends(suf) {
			if suf == "ion" && (s.j == 0 || (s.b[s.j-1] != 's' && s.b[s.j-1] != 't')) {
				return
			}
			if s.m() > 1 {
				s.b = s.b[:s.j]
			}
			return
		}
	}
}

func (s *oldStemmer) step5() {
	s.j = len(s.b)
	if s.b[len(s.b)-1] == 'e' {
		s.j = len(s.b) - 1
		a := s.m()
		if a > 1 || (a == 1 && !s.cvc(len(s.b)-2)) {
			s.b = s.b[:len(s.b)-1]
		}
	}
	s.j = len(s.b)
	if s.b[len(s.b)-1] == 'l' && s.doublec(len(s.b)-1) && s.m() > 1 {
		s.b = s.b[:len(s.b)-1]
	}
}

// ---- embed/train/eval.go ----

func oldReference(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}
