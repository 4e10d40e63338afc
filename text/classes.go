package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Class terms stand for what a number or a symbol in a text is, so that a
// learned vector and weight can hold what "17", "15%", "*", "10 MB",
// "7:30", "2024-06-01" or "3f9a2c1" mean: every number is the same term,
// whatever its digits. They are written in angle brackets, which no word
// can hold.
const (
	// ClassNumber: a number in digits ("17", "1,234", "19.99", "1.2.3",
	// "9th") or in words ("seven", "twelve", "hundred"; not "one", whose
	// other uses outnumber the numeric one).
	ClassNumber = "<num>"
	// ClassPercent: a number followed by "%", "percent" or "pct".
	ClassPercent = "<pct>"
	// ClassOperator: + - * / ^ = × ÷ x ** between two numbers ("2^32",
	// "12 * 4", "6 x 7", "(1 + 2) * 3").
	ClassOperator = "<op>"
	// ClassMoney: a number with a currency sign or name ("$499", "20 €",
	// "64 dollars", "5 USD").
	ClassMoney = "<money>"
	// ClassSize: a number with a unit of data size ("10MB", "2.5 GiB",
	// "512 bytes").
	ClassSize = "<size>"
	// ClassDuration: a number with a unit of time ("30s", "5 minutes",
	// "2 weeks").
	ClassDuration = "<dur>"
	// ClassTime: a time of day ("7:30", "14:30:05", "7am", "3 p.m.").
	ClassTime = "<time>"
	// ClassDate: a date in digits ("2024-06-01", "29/02/2024",
	// "01.12.24"); a timestamp ("2024-06-01T12:00:00Z") is a date and a
	// time.
	ClassDate = "<date>"
	// ClassHex: a hash-like hexadecimal string (at least 7 hex digits,
	// letters and digits both: "3f9a2c1", a SHA-256), a hex literal
	// ("0xff") or a UUID.
	ClassHex = "<hex>"
	// ClassUnit: a number with a unit of measure ("5 km", "30kg",
	// "72 °F", "60 mph").
	ClassUnit = "<unit>"
	// ClassIP: an IPv4 address ("192.168.0.1").
	ClassIP = "<ip>"
	// ClassFile: a file name with a known extension ("package.json",
	// "release.tar.gz", "main.py") or a glob of one ("*.py"); its words
	// stay words beside it.
	ClassFile = "<file>"
)

// IsClass reports whether a term is a class term.
func IsClass(t string) bool {
	return len(t) > 2 && t[0] == '<' && t[len(t)-1] == '>'
}

// Optional reports whether a query term counts only where the catalog has
// it: a class term, a number's digits or a number word kept beside its
// class (Analyzer.Literals), or a phrase of stop words (Analyzer.Phrases).
// A word of the message that no tool has is information the catalog
// cannot match; a number that no tool mentions is a value for the tool's
// arguments, and a phrase of stop words no tool has is no word at all.
// The abbreviations of units ("mb", "km", "ms") are optional too: after a
// number they say what its class says. The lexical index lets optional
// terms only break ties between tools that match a real word.
func Optional(t string) bool {
	if IsClass(t) || strings.IndexByte(t, ' ') >= 0 || numberWords.has(t) || hexLike(t) || unitAbbrevs.has(t) {
		return true
	}
	if len(t) > 2 && t[0] == '0' && t[1] == 'x' {
		t = t[2:] // a hex literal
		for i := 0; i < len(t); i++ {
			if !isHexASCII(t[i]) {
				return false
			}
		}
		return true
	}
	return t != "" && digitsAt(t, 0) == len(t)
}

// wordOperators are arithmetic operators in words: between two numbers
// ("six times seven", "100 divided by 8") they are ClassOperator, not
// words ("train times" stays a word).
var wordOperators = setOf(`plus minus times multiplied divided over mod modulo`)

// prefixOperators are arithmetic verbs: right before a plain number (no
// unit; "add 17 and 25", "add up 8 and 7", "sum of 45, 67 and 89") they
// give ClassOperator, and the word beside it ("add 5 users to the team"
// still says "add"). In the request → tool pairs of train/data,
// 20 of the 23 requests with such a verb before a plain number ask for
// arithmetic (CLINC150's calculator, HWU64's qa_maths, dc); before a
// number with a unit ("add 10 minutes to my timer", "add 10GB") it stays a
// word.
var prefixOperators = setOf(`add subtract multiply divide sum`)

// unitAbbrevs are the unit words (unitClass) that are abbreviations: they
// mean the unit alone (Optional).
var unitAbbrevs = setOf(`kb mb gb tb pb kib mib gib tib pib ms msec sec secs min mins hr hrs wk
	wks yr yrs km cm mm nm mi ft yd kg lb lbs oz ml mph kph kmh hz khz mhz ghz kw kwh usd eur gbp
	jpy chf cad aud pct am pm`)

// postfixOperators are ClassOperator after a number ("nine squared").
var postfixOperators = setOf(`squared cubed`)

// numberWords are the number words that are ClassNumber.
var numberWords = setOf(`zero two three four five six seven eight nine ten eleven twelve
	thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty
	sixty seventy eighty ninety hundred thousand million billion trillion dozen`)

// fileExtensions are the extensions that make a name a file name
// (ClassFile): common ones of configuration, source code, documents,
// data, archives, images, audio and video.
var fileExtensions = setOf(`json yaml yml toml ini cfg conf env xml html htm css scss js mjs cjs ts tsx jsx
	vue py ipynb go rs c h cc cpp hpp cs java kt swift rb php pl lua sh bash zsh fish ps1 bat r sql
	md rst txt csv tsv log db sqlite parquet tar gz tgz bz2 xz zst zip rar iso img deb rpm apk dmg exe
	dll so whl jar pdf doc docx xls xlsx ppt pptx odt png jpg jpeg gif svg webp bmp ico tif tiff mp3
	wav flac ogg mp4 mkv avi mov webm pem crt csr lock mod`)

// fileExtAt reports whether the run of letters and digits s[i:j] is the
// last extension of a file name: a known extension right after a dot
// that follows a name ("package.json", "release.tar.gz": "gz") or a glob
// star ("*.py"), with no other extension after it. A list of extensions
// (".zip, .tar.gz") names no file.
func fileExtAt(s string, i, j int) bool {
	if i < 2 || s[i-1] != '.' || at(s, j) == '.' && isAlnumASCII(at(s, j+1)) {
		return false
	}
	k := i - 1 // the start of the name: letters, digits, _ - . and *
	for k > 0 && (isAlnumASCII(s[k-1]) || strings.IndexByte("_-.*", s[k-1]) >= 0) {
		k--
	}
	if k == i-1 || s[k] == '.' {
		return false
	}
	return inSet(fileExtensions, s[i:j])
}

// scaleWords make "one" before them a number ("one hundred", "one
// million"); alone "one" stays a word.
var scaleWords = setOf(`hundred thousand million billion trillion dozen`)

// oneNumberAt reports whether the word run at i, ending at j, is "one"
// followed by a scale word ("one hundred"): then it is a number word.
func oneNumberAt(s string, i, j int) bool {
	if j-i != 3 || !strings.EqualFold(s[i:j], "one") {
		return false
	}
	k := skipSpace(s, j)
	e := wordEnd(s, k)
	return e > k && inSet(scaleWords, s[k:e])
}

// numberWordAt reports whether a number word starts at k (a word of
// numberWords, or "one" before a scale word) and returns its end.
func numberWordAt(s string, k int) (int, bool) {
	e := wordEnd(s, k)
	if e == k || !boundaryAt(s, e) {
		return 0, false
	}
	return e, inSet(numberWords, s[k:e]) || oneNumberAt(s, k, e)
}

// classNames are words that name a class: a text that says "percentage"
// or "hex" is about values of that class, so the word gives the class
// term too, beside itself (a tool that computes percentages matches "15%
// of 80"). Only words that name nothing but the class are here:
// "percent" is also percent-encoding's, "time" and "date" have other
// senses, "hash" is also a hash table's. The names of hash functions
// name hex strings: a digest is one ("sha256 of release.tar.gz", a tool
// that prints "sha256sum" checksums).
var classNames = map[string]string{
	"percentage": ClassPercent, "percentages": ClassPercent,
	"hex": ClassHex, "hexadecimal": ClassHex, "checksum": ClassHex, "checksums": ClassHex,
	"md5": ClassHex, "md5sum": ClassHex, "sha1": ClassHex, "sha1sum": ClassHex,
	"sha224": ClassHex, "sha224sum": ClassHex, "sha256": ClassHex, "sha256sum": ClassHex,
	"sha384": ClassHex, "sha384sum": ClassHex, "sha512": ClassHex, "sha512sum": ClassHex,
}

// classNameSet holds the words of classNames, to rule most words out
// without a lookup (wordSet's length and first-letter bits).
var classNameSet = func() wordSet {
	var words []string
	for w := range classNames {
		words = append(words, w)
	}
	return setOf(strings.Join(words, " "))
}()

// classNamed is the class a word of the text names ("" for none).
func classNamed(run string) string {
	if !inSet(classNameSet, run) {
		return ""
	}
	return classNames[lower(run)]
}

// unitClass gives the class of a number followed by a unit word (the
// word lowercased). Units of one letter ("s", "h") count only when
// written against the number ("30s"), see attachedUnits.
var unitClass = func() map[string]string {
	m := map[string]string{}
	add := func(class, words string) {
		for _, w := range strings.Fields(words) {
			m[w] = class
		}
	}
	add(ClassSize, `kb mb gb tb pb kib mib gib tib pib byte bytes kilobyte kilobytes megabyte
		megabytes gigabyte gigabytes terabyte terabytes`)
	add(ClassDuration, `ms msec millisecond milliseconds sec secs second seconds min mins minute
		minutes hr hrs hour hours day days week weeks wk wks month months year years yr yrs`)
	add(ClassUnit, `km cm mm nm mi mile miles ft feet foot inch inches yd yard yards meter meters
		metre metres kilometer kilometers kilometre kilometres centimeter centimeters centimetre
		centimetres millimeter millimeters kg kilo kilos kilogram kilograms gram grams lb lbs
		pound pounds oz ounce ounces liter liters litre litres ml gallon gallons cup cups
		celsius fahrenheit kelvin degree degrees mph kph kmh hz khz mhz ghz kw kwh watt watts`)
	add(ClassMoney, `usd eur gbp jpy chf cad aud dollar dollars euro euros cent cents bucks`)
	add(ClassPercent, `percent pct`)
	add(ClassTime, `am pm`)
	return m
}()

// wordIsUnit says whether the unit word after a number of a class is kept
// as a word beside the class: always, but for a time of day ("7 pm").
// (Dropping the words of percentages and money as well, "15 percent" as
// "15%" alone, ranked the training catalogs' held-out requests worse:
// learned R@5 0.643 against 0.658; learn/MODEL.md.)
func wordIsUnit(class string) bool {
	return class != ClassTime
}

// attachedUnits are units of one letter: they count only written against
// the number ("30s", "5m", "1h": durations, as in "--since 5m").
var attachedUnits = map[string]string{"s": ClassDuration, "m": ClassDuration, "h": ClassDuration}

// currencySigns before or after a number make it ClassMoney.
const currencySigns = "$€£¥₹"

// A wordSet is a read-only set of short lowercase ASCII words, with the
// lengths and first letters of its words as bits, so that most words are
// known not to be in it without a map lookup.
type wordSet struct {
	m            map[string]bool
	lens, firsts uint32
}

func setOf(words string) wordSet {
	s := wordSet{m: map[string]bool{}}
	for _, w := range strings.Fields(words) {
		s.m[w] = true
		s.lens |= 1 << min(len(w), 31)
		s.firsts |= 1 << (w[0] - 'a')
	}
	return s
}

// has reports whether a lowercase word is in the set.
func (s wordSet) has(w string) bool {
	if len(w) == 0 || s.lens&(1<<min(len(w), 31)) == 0 || w[0] < 'a' || w[0] > 'z' || s.firsts&(1<<(w[0]-'a')) == 0 {
		return false
	}
	return s.m[w]
}

// hexLike reports whether a word is a hash-like hex string: at least 7 hex
// digits of one case, with a digit and a letter among them.
func hexLike(w string) bool {
	if len(w) < 7 {
		return false
	}
	var digit, lower, upper bool
	for i := 0; i < len(w); i++ {
		switch b := w[i]; {
		case isDigitASCII(b):
			digit = true
		case b >= 'a' && b <= 'f':
			lower = true
		case b >= 'A' && b <= 'F':
			upper = true
		default:
			return false
		}
	}
	return digit && (lower != upper)
}

// A span is a part of the text that a class scan turned into terms: the
// class, then (with Literals) its digits, then the unit word, if any.
type span struct {
	class  string
	class2 string  // a second class (a timestamp's time)
	end    int     // the text up to end is consumed
	digits offsets // pairs of offsets of the literal parts (Literals)
	unit   [2]int  // offsets of a unit word to analyse as a word (0, 0: none)
}

// offsets are the pairs of offsets of a span's literal parts: the first
// ones inline (a span costs no allocation), the rest in more.
type offsets struct {
	n    int
	a    [16]int
	more []int
}

// add appends the pair i, j.
func (o *offsets) add(i, j int) {
	if o.n+2 <= len(o.a) {
		o.a[o.n], o.a[o.n+1] = i, j
		o.n += 2
		return
	}
	o.more = append(o.more, i, j)
}

// len is the number of offsets (twice the pairs).
func (o *offsets) len() int { return o.n + len(o.more) }

// at is the k-th offset.
func (o *offsets) at(k int) int {
	if k < o.n {
		return o.a[k]
	}
	return o.more[k-o.n]
}

// hexSpan is a hex string s[i:j].
func hexSpan(i, j int) span {
	sp := span{class: ClassHex, end: j}
	sp.digits.add(i, j)
	return sp
}

// freeAt reports whether a number may start at i: not inside an
// identifier ("x86_64", "file-2", "v1.2" keep their digits as words). The
// letters, digits and . _ - before i are the identifier's; it is one when
// they start with a letter or _.
func freeAt(s string, i int) bool {
	if i > 0 && s[i-1] == '%' {
		return false // "%20", "%5d": an escape or a format, not a number
	}
	j := i
	for j > 0 && (isAlnumASCII(s[j-1]) || s[j-1] == '.' || s[j-1] == '_' || s[j-1] == '-') {
		j--
	}
	if j > 0 && s[j-1] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeLastRuneInString(s[:j]); isAlnum(r) {
			return false
		}
	}
	return j == i || !isLetterASCII(s[j]) && s[j] != '_'
}

func isLetterASCII(b byte) bool { return isLowerASCII(b) || isUpperASCII(b) }

// digitsAt returns the end of the run of ASCII digits at i (i if none).
func digitsAt(s string, i int) int {
	for i < len(s) && isDigitASCII(s[i]) {
		i++
	}
	return i
}

// wordEnd returns the end of the run of ASCII letters at i.
func wordEnd(s string, i int) int {
	for i < len(s) && isLetterASCII(s[i]) {
		i++
	}
	return i
}

// boundaryAt reports whether no letter or digit continues the text at i.
func boundaryAt(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	if s[i] < utf8.RuneSelf {
		return !isAlnumASCII(s[i])
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isAlnum(r)
}

// skipSpace returns the index after spaces at i (at most one run of
// blanks).
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// numericAt scans a numeric expression starting at i (a digit at a free
// position, or a currency sign before a digit). ok is false when the run
// at i is not one (a word such as "7zip", "3d", "2fa", "1e10").
func numericAt(s string, i int) (sp span, ok bool) {
	money := false
	if r, n := utf8.DecodeRuneInString(s[i:]); strings.ContainsRune(currencySigns, r) {
		money = true
		i += n
	}
	if i >= len(s) || !isDigitASCII(s[i]) {
		return span{}, false
	}
	if !money {
		if sp, ok := hexAt(s, i); ok {
			return sp, true
		}
		if sp, ok := dateAt(s, i); ok {
			return sp, true
		}
		if sp, ok := timeAt(s, i); ok {
			return sp, true
		}
		if sp, ok := ipAt(s, i); ok {
			return sp, true
		}
	}
	// A number: digits, thousands groups, decimals or dotted parts.
	j := digitsAt(s, i)
	sp = span{class: ClassNumber}
	sp.digits.add(i, j)
	for j+1 < len(s) && (s[j] == ',' && j+4 <= len(s) && digitsAt(s, j+1) == j+4 ||
		s[j] == '.' && isDigitASCII(s[j+1])) {
		k := digitsAt(s, j+1)
		sp.digits.add(j+1, k)
		j = k
	}
	sp.end = j
	if money {
		sp.class = ClassMoney
	}
	// What follows: letters against the number, a percent sign, a
	// currency sign, or a unit word after a space.
	if e := wordEnd(s, j); e > j {
		w := strings.ToLower(s[j:e])
		if !boundaryAt(s, e) {
			return span{}, false
		}
		if w == "st" || w == "nd" || w == "rd" || w == "th" {
			sp.end = e
			return sp, true
		}
		class, unit := unitClass[w]
		if !unit {
			class, unit = attachedUnits[w]
		}
		if !unit {
			return span{}, false
		}
		if !money {
			sp.class = class
		}
		sp.end = e
		if wordIsUnit(class) && e-j > 1 {
			sp.unit = [2]int{j, e}
		}
		return sp, true
	}
	k := skipSpace(s, j)
	if k < len(s) && s[k] == '%' {
		sp.class, sp.end = ClassPercent, k+1
		return sp, true
	}
	if r, n := utf8.DecodeRuneInString(s[k:]); k < len(s) && strings.ContainsRune(currencySigns, r) {
		sp.class, sp.end = ClassMoney, k+n
		return sp, true
	}
	if strings.HasPrefix(s[k:], "°") {
		e := wordEnd(s, k+len("°"))
		if e-k-len("°") <= 1 && boundaryAt(s, e) { // "72 °F", "20°C", "90°"
			sp.class, sp.end = ClassUnit, e
			return sp, true
		}
	}
	if k > j && k < len(s) && isLetterASCII(s[k]) {
		e := wordEnd(s, k)
		w := strings.ToLower(s[k:e])
		if class, unit := unitClass[w]; unit && boundaryAt(s, e) {
			if !money {
				sp.class = class
			}
			sp.end = e
			if wordIsUnit(class) {
				sp.unit = [2]int{k, e} // one word: "GiB" is not cut at its case
			}
			return sp, true
		}
		if (w == "a" || w == "p") && strings.HasPrefix(strings.ToLower(s[e:]), ".m.") {
			sp.class, sp.end = ClassTime, e+3 // "3 p.m."
			return sp, true
		}
	}
	return sp, true
}

func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// hexAt scans a hex literal ("0xff"), a UUID or a hash-like run at i.
func hexAt(s string, i int) (span, bool) {
	if s[i] == '0' && (at(s, i+1) == 'x' || at(s, i+1) == 'X') {
		j := i + 2
		for j < len(s) && isHexASCII(s[j]) {
			j++
		}
		if j > i+2 && boundaryAt(s, j) {
			return hexSpan(i, j), true
		}
	}
	if j, ok := uuidAt(s, i); ok {
		return span{class: ClassHex, end: j}, true
	}
	j := i
	for j < len(s) && isAlnumASCII(s[j]) {
		j++
	}
	if boundaryAt(s, j) && hexLike(s[i:j]) {
		return hexSpan(i, j), true
	}
	return span{}, false
}

func isHexASCII(b byte) bool {
	return isDigitASCII(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// uuidAt matches 8-4-4-4-12 hex digits at i.
func uuidAt(s string, i int) (int, bool) {
	for n, g := range []int{8, 4, 4, 4, 12} {
		if n > 0 {
			if at(s, i) != '-' {
				return 0, false
			}
			i++
		}
		for k := 0; k < g; k++ {
			if !isHexASCII(at(s, i)) {
				return 0, false
			}
			i++
		}
	}
	return i, boundaryAt(s, i)
}

// dateAt matches a date in digits at i: year-month-day ("2024-06-01",
// "2024/6/1") or day and month then year ("29/02/2024", "01.12.24"), one
// separator throughout, and a time after it ("T12:00:00Z", " 14:30").
func dateAt(s string, i int) (span, bool) {
	var parts [3][2]int
	j := i
	var sep byte
	for n := range 3 {
		if n > 0 {
			c := at(s, j)
			if c != '-' && c != '/' && c != '.' || sep != 0 && c != sep {
				return span{}, false
			}
			sep = c
			j++
		}
		k := digitsAt(s, j)
		if k == j {
			return span{}, false
		}
		parts[n] = [2]int{j, k}
		j = k
	}
	l := func(n int) int { return parts[n][1] - parts[n][0] }
	ymd := l(0) == 4 && l(1) <= 2 && l(2) <= 2
	dmy := l(0) <= 2 && l(1) <= 2 && (l(2) == 4 || l(2) == 2)
	if !ymd && !dmy || !boundaryAt(s, j) && at(s, j) != 'T' || at(s, j) == '.' && isDigitASCII(at(s, j+1)) {
		return span{}, false
	}
	sp := span{class: ClassDate, end: j}
	for _, p := range parts {
		sp.digits.add(p[0], p[1])
	}
	if c := at(s, j); c == 'T' || c == ' ' {
		if t, ok := timeAt(s, j+1); ok && (c == 'T' || strings.IndexByte(s[j+1:t.end], ':') >= 0) {
			sp.class2, sp.end = ClassTime, t.end
			for k := 0; k < t.digits.len(); k += 2 {
				sp.digits.add(t.digits.at(k), t.digits.at(k+1))
			}
		}
	}
	return sp, true
}

// timeAt matches a time of day at i: H:MM, H:MM:SS(.fff), then a zone (Z,
// ±HH:MM) or am/pm; or H am/pm ("7am", "7 pm").
func timeAt(s string, i int) (span, bool) {
	h := digitsAt(s, i)
	if h-i > 2 {
		return span{}, false
	}
	sp := span{class: ClassTime}
	sp.digits.add(i, h)
	j := h
	if at(s, j) == ':' && digitsAt(s, j+1) == j+3 {
		sp.digits.add(j+1, j+3)
		j += 3
		if at(s, j) == ':' && digitsAt(s, j+1) == j+3 {
			sp.digits.add(j+1, j+3)
			j += 3
			if at(s, j) == '.' && isDigitASCII(at(s, j+1)) {
				j = digitsAt(s, j+1)
			}
		}
		switch c := at(s, j); {
		case c == 'Z' && boundaryAt(s, j+1):
			j++
		case (c == '+' || c == '-') && digitsAt(s, j+1) == j+3:
			j += 3
			if at(s, j) == ':' && digitsAt(s, j+1) == j+3 {
				j += 3
			}
		}
		if e, ok := meridiem(s, j); ok {
			j = e
		}
		if !boundaryAt(s, j) {
			return span{}, false
		}
		sp.end = j
		return sp, true
	}
	if e, ok := meridiem(s, j); ok {
		sp.end = e
		return sp, true
	}
	return span{}, false
}

// meridiem matches "am", "pm", "a.m." or "p.m." (after one optional space)
// at i and returns its end.
func meridiem(s string, i int) (int, bool) {
	j := i
	if at(s, j) == ' ' {
		j++
	}
	c := at(s, j) | 0x20
	if c != 'a' && c != 'p' {
		return 0, false
	}
	if at(s, j+1)|0x20 == 'm' && boundaryAt(s, j+2) {
		return j + 2, true
	}
	if at(s, j+1) == '.' && at(s, j+2)|0x20 == 'm' && at(s, j+3) == '.' {
		return j + 4, true
	}
	return 0, false
}

// ipAt matches an IPv4 address at i.
func ipAt(s string, i int) (span, bool) {
	j := i
	sp := span{class: ClassIP}
	for n := range 4 {
		if n > 0 {
			if at(s, j) != '.' {
				return span{}, false
			}
			j++
		}
		k := digitsAt(s, j)
		if k == j || k-j > 3 || k-j == 3 && s[j:k] > "255" {
			return span{}, false
		}
		sp.digits.add(j, k)
		j = k
	}
	if !boundaryAt(s, j) || at(s, j) == '.' && isDigitASCII(at(s, j+1)) {
		return span{}, false
	}
	sp.end = j
	return sp, true
}

// operatorAt reports whether the symbol at i (not a letter or digit) is an
// arithmetic operator between two numbers, and returns its end. prev is
// the last character before i that is not a blank (0: none).
func operatorAt(s string, i int, prev rune) (int, bool) {
	r, n := utf8.DecodeRuneInString(s[i:])
	switch r {
	case '+', '-', '*', '/', '^', '=', '×', '÷':
	default:
		return 0, false
	}
	if !(prev >= '0' && prev <= '9' || prev == ')' || prev == '%') {
		return 0, false
	}
	j := i + n
	if r == '*' && at(s, j) == '*' {
		j++
	}
	k := skipSpace(s, j)
	c := at(s, k)
	if isDigitASCII(c) || c == '(' || c == '.' && isDigitASCII(at(s, k+1)) ||
		c == '-' && isDigitASCII(at(s, k+1)) && r != '-' {
		return j, true
	}
	return 0, false
}

// appendClassed is Append with Classes or Phrases: the runs of letters and
// digits as Append cuts them, but a number at a free position (freeAt) is
// scanned as a whole (numericAt: "19.99", "10 MB", "2024-06-01T12:00Z"),
// a symbol between numbers is an operator, and the runs of stop words are
// followed for phrases.
func (a Analyzer) appendClassed(dst []string, s string, c Cache) []string {
	var phs phrases
	ph := a.initPhrases(&phs, s)
	var prev rune     // the last character before i that is not blank
	afterNum := false // the last word was a number
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if isAlnum(r) {
			j := alnumEnd(s, i)
			run := s[i:j]
			if ph != nil {
				ph.at = i
			}
			if contraction(s, i, run) {
				i = j // "what's", "don't", "we'll": the ending is no word
				continue
			}
			if a.Classes {
				switch {
				case isDigitASCII(s[i]) && freeAt(s, i):
					if sp, ok := numericAt(s, i); ok {
						dst = a.appendSpan(dst, s, sp, c, ph)
						prev, _ = utf8.DecodeLastRuneInString(s[:sp.end])
						i, afterNum = sp.end, sp.unit[1] == 0
						continue
					}
				case (run == "x" || run == "X") && prev >= '0' && prev <= '9' && isDigitASCII(at(s, skipSpace(s, j))):
					dst = ph.boundary(append(dst, ClassOperator)) // "6 x 7"
					prev, i, afterNum = 'x', j, false
					continue
				case inSet(prefixOperators, run) && plainNumberNext(s, j):
					// "add 17 and 25": the operator, then the verb as a
					// word (as a unit word is kept beside its class).
					dst = a.appendRun(ph.boundary(append(dst, ClassOperator)), run, c, ph)
					prev, i, afterNum = rune(s[j-1]), j, false
					continue
				case afterNum && (inSet(wordOperators, run) && numberNext(s, j) || inSet(postfixOperators, run)):
					dst = ph.boundary(append(dst, ClassOperator)) // "six times seven"
					prev, i = rune(s[j-1]), j
					afterNum = inSet(postfixOperators, run)
					continue
				case oneNumberAt(s, i, j):
					if a.Literals {
						dst = append(dst, "one")
					} else {
						dst = append(dst, ClassNumber)
					}
					dst = ph.word(dst, "")
					prev, i, afterNum = 'e', j, true
					continue
				case isLetterASCII(s[i]) && hexLike(run):
					dst = append(dst, ClassHex)
					if a.Literals {
						dst = append(dst, lower(run))
					}
					dst = ph.word(dst, "")
					prev, i, afterNum = rune(s[j-1]), j, false
					continue
				}
			}
			dst = a.appendRun(dst, run, c, ph)
			if a.Classes {
				if class := classNamed(run); class != "" {
					dst = append(dst, class)
				}
				if fileExtAt(s, i, j) {
					dst = append(dst, ClassFile)
				}
			}
			prev, _ = utf8.DecodeLastRuneInString(run)
			afterNum = a.Classes && inSet(numberWords, run)
			i = j
			continue
		}
		if a.Classes {
			if strings.ContainsRune(currencySigns, r) && isDigitASCII(at(s, i+size)) && freeAt(s, i) {
				if sp, ok := numericAt(s, i); ok {
					dst = a.appendSpan(dst, s, sp, c, ph)
					prev, _ = utf8.DecodeLastRuneInString(s[:sp.end])
					i, afterNum = sp.end, true
					continue
				}
			}
			if end, ok := operatorAt(s, i, prev); ok {
				dst = ph.boundary(append(dst, ClassOperator))
				prev, _ = utf8.DecodeLastRuneInString(s[:end])
				i, afterNum = end, false
				continue
			}
		}
		switch r {
		case ' ', '\t', '\'', '’':
		default:
			dst = ph.boundary(dst)
		}
		if r != ' ' && r != '\t' {
			prev = r
		}
		i += size
	}
	return ph.boundary(dst)
}

// inSet reports whether a short ASCII word, lowercased, is in set, without
// allocating.
func inSet(set wordSet, w string) bool {
	var buf [12]byte
	if len(w) == 0 || len(w) > len(buf) || set.lens&(1<<len(w)) == 0 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			return false
		}
		if isUpperASCII(c) {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return set.has(string(buf[:len(w)]))
}

// contractions are the endings of English contractions and possessives
// ("it's", "file's", "don't", "you're", "we'll", "I'd", "I'm", "I've").
var contractions = setOf(`s t re ll d m ve`)

// contraction reports whether run, at i, is the ending of a contraction:
// right after an apostrophe that follows a letter.
func contraction(s string, i int, run string) bool {
	if len(run) > 2 || !inSet(contractions, run) {
		return false
	}
	var apos rune
	var n int
	if i > 0 && s[i-1] == '\'' {
		apos, n = '\'', 1
	} else {
		apos, n = utf8.DecodeLastRuneInString(s[:i])
	}
	if apos != '\'' && apos != '’' {
		return false
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:i-n])
	return unicode.IsLetter(prev)
}

// numberNext reports whether a number (in digits or words) comes after
// blanks at i, or after "by" ("divided by 8").
func numberNext(s string, i int) bool {
	k := skipSpace(s, i)
	if e := wordEnd(s, k); e == k+2 && strings.EqualFold(s[k:e], "by") {
		k = skipSpace(s, e)
	}
	if isDigitASCII(at(s, k)) || at(s, k) == '(' {
		return true
	}
	_, ok := numberWordAt(s, k)
	return ok
}

// plainNumberNext reports whether a plain number (ClassNumber: no unit, no
// percent sign; in digits or words) comes after blanks at i, or after
// "up" or "of" ("add up 8 and 7", "sum of 45").
func plainNumberNext(s string, i int) bool {
	k := skipSpace(s, i)
	if e := wordEnd(s, k); e == k+2 && (strings.EqualFold(s[k:e], "up") || strings.EqualFold(s[k:e], "of")) {
		k = skipSpace(s, e)
	}
	if isDigitASCII(at(s, k)) {
		sp, ok := numericAt(s, k)
		return ok && sp.class == ClassNumber
	}
	e, ok := numberWordAt(s, k)
	if !ok {
		return false
	}
	if oneNumberAt(s, k, e) {
		e = wordEnd(s, skipSpace(s, e)) // "one hundred": the unit is after "hundred"
	}
	n := skipSpace(s, e)
	f := wordEnd(s, n)
	_, unit := unitClass[strings.ToLower(s[n:f])]
	return !unit
}

// alnumEnd returns the end of the run of letters and digits at i.
func alnumEnd(s string, i int) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if !isAlnumASCII(b) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isAlnum(r) {
			return i
		}
		i += n
	}
	return i
}

// appendSpan appends the terms of a scanned span: its class (and second
// class; with Literals not ClassNumber), with Literals its digits, then its
// unit word as a word.
func (a Analyzer) appendSpan(dst []string, s string, sp span, c Cache, ph *phrases) []string {
	if !a.Literals || sp.class != ClassNumber {
		dst = append(dst, sp.class)
	}
	if sp.class2 != "" {
		dst = append(dst, sp.class2)
	}
	if a.Literals {
		for k := 0; k+1 < sp.digits.len(); k += 2 {
			dst = append(dst, lower(s[sp.digits.at(k):sp.digits.at(k+1)]))
		}
	}
	dst = ph.word(dst, "")
	if sp.unit[1] > sp.unit[0] {
		dst = a.appendWord(dst, s[sp.unit[0]:sp.unit[1]], c, ph)
	}
	return dst
}
