package text

import "strings"

// Plural folds the common English plural endings of a lowercase word, for
// the lexical index: "-ies" → "-y" ("libraries" → "library", when more than
// five bytes), "-sses" → "-ss", and a final "-s" is dropped unless the word
// ends in "-ss", "-us" or "-is". It is deliberately light: words of four
// bytes or fewer are never changed. Lengths are in bytes, so it applies to
// any script (in practice only words ending in s change).
func Plural(w string) string {
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

// Porter is the Porter (1980) stemming algorithm as in Martin Porter's own
// ANSI C version, with its three departures from the paper: words of one or
// two letters are left alone, step 2 maps "-bli" → "-ble" (in place of
// "-abli" → "-able") and "-logi" → "-log". It gives his sample vocabulary's
// output for every one of its 23,531 words (testdata/porter). Words with
// anything but a–z (capitals, digits, other scripts) are returned unchanged.
func Porter(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	s := &stemmer{b: []byte(w)}
	s.step1ab()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return string(s.b)
}

type stemmer struct {
	b []byte
	j int // end of the stem under consideration (exclusive)
}

func (s *stemmer) cons(i int) bool {
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
func (s *stemmer) m() int {
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

func (s *stemmer) vowelInStem() bool {
	for i := 0; i < s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

func (s *stemmer) doublec(i int) bool {
	if i < 1 || s.b[i] != s.b[i-1] {
		return false
	}
	return s.cons(i)
}

// cvc: b[i-2],b[i-1],b[i] is consonant-vowel-consonant and the last is not w, x or y.
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func (s *stemmer) ends(suf string) bool {
	n := len(s.b)
	if len(suf) > n || string(s.b[n-len(suf):]) != suf {
		return false
	}
	s.j = n - len(suf)
	return true
}

func (s *stemmer) setto(r string) {
	s.b = append(s.b[:s.j], r...)
}

func (s *stemmer) r(rep string) {
	if s.m() > 0 {
		s.setto(rep)
	}
}

func (s *stemmer) step1ab() {
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

func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[len(s.b)-1] = 'i'
	}
}

var step2Rules = [...][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"logi", "log"},
}

func (s *stemmer) step2() {
	if len(s.b) < 3 {
		return
	}
	for _, r := range step2Rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

var step3Rules = [...][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func (s *stemmer) step3() {
	for _, r := range step3Rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

var step4Suffixes = [...]string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func (s *stemmer) step4() {
	for _, suf := range step4Suffixes {
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

func (s *stemmer) step5() {
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
