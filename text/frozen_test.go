package text

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// frozenTexts are the texts of testdata/frozen/texts.jsonl.gz (every .meta
// file of examples/tools and every tenth line of train/data, as they were
// when the analysers were merged; see testdata/frozen/SOURCE.md), each
// whole and line by line, and the edge cases.
func frozenTexts(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/frozen/texts.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, s)
		if strings.Contains(s, "\n") {
			texts = append(texts, strings.Split(s, "\n")...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return append(texts, edgeTexts()...)
}

// digest is the SHA-256 of the terms a gives for each text (terms ended by
// 0, texts by 1).
func digest(a Analyzer, texts []string, c Cache) string {
	h := sha256.New()
	var terms []string
	for _, s := range texts {
		terms = a.Append(terms[:0], s, c)
		for _, t := range terms {
			h.Write([]byte(t))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFrozen pins each mode's terms. When the first digests were taken,
// TestSameAsBefore (commits f2fc26d and 02000af, with the old code verbatim
// in text/legacy_test.go) compared the old analysers with these on these
// texts, on every text of the evaluation corpora and on all of train/data.
// Table's terms key the shipped table (embed/builtin/model.bin): a change
// there is a change of model, to be retrained and re-tuned in the same
// commit (embed/MODEL.md); a change of Index or IndexDocument changes
// every lexical score and needs a new lexAnalysis (index/lexcache.go).
func TestFrozen(t *testing.T) {
	texts := frozenTexts(t)
	for _, m := range []struct {
		name string
		a    Analyzer
		want string
	}{
		// Issue 44: class terms for numbers and symbols, phrases of stop
		// words (Index), contractions' endings dropped; then "one" before a
		// scale word, words that name a class ("percentage", "hex",
		// "sha256"), file names (<file>); the table's class rows
		// (builtin/v1-00f7b62f) and lexical analysis "index-5"; then an
		// arithmetic verb kept beside <op> ("add 5 users": "<op>", "add"),
		// a keyword's phrases only those it starts with (IndexKeywords),
		// lexical analysis "index-6".
		{"Index", Index(), "d12ee6b7d51e5cd1b93a6db442ced00083ad3d9e833d4785036e683471a29198"},
		{"IndexDocument", IndexDocument(), "d8d69c8242317e641f6b45f1797b897f4c32b2451bffe328de6e1be8ea163b31"},
		{"IndexKeywords", IndexKeywords(), "f3752f20b5ef01645021d208083f34e40de297614c8dff43b3c8eca7a616cd71"},
		{"Table", Table(), "4111e30b428af3b62768b54a78599651ec4a84f7e6a6c15d4d56a9a7189eef12"},
		{"Reference", Reference(), "f0d601088ad8349953b1ea1ecbe611f624fe47173c3ae51c8268d82795828d0e"},
	} {
		got := digest(m.a, texts, nil)
		if got != m.want {
			t.Errorf("%s() terms of the %d texts: digest %s, want %s", m.name, len(texts), got, m.want)
		}
		if cached := digest(m.a, texts, Cache{}); cached != got {
			t.Errorf("%s() with a cache: digest %s, without %s", m.name, cached, got)
		}
	}
}

// edgeTexts are hand-picked and random texts: case boundaries, digits,
// punctuation, other scripts, runes whose lowercase changes length or
// becomes ASCII, invalid UTF-8.
func edgeTexts() []string {
	texts := []string{
		"", " ", "a", "A", "I", "x1", "42", "007", "v2Data", "V2DATA", "v2data", "mp3ToWav", "PDF2Text",
		"getWeatherForecast", "GetWeatherForecast", "get_weather_forecast", "get-weather-forecast",
		"HTTPServer parseJSONBody XMLHttpRequest iPhone eBay MyHTTP2Server ABCdef aB Ab AB",
		"ALLCAPS WORDS", "x86_64 GPU4 UTF8String utf-8", "files processes classes glasses status analysis",
		"libraries queries ponies cities lies dies ties series species", "theirs whats thats theses thes",
		"What is the weather in Paris?", "I want to convert 42 MP3 files", "please tell me, thanks!",
		"running runs ran relational generalization", "C++ & C# / .NET", "a.b.c --flag=value_name; x:y",
		"Größe ändern: fileSize", "données météo", "Ünïcode Straße naïve", "ÉCOLE École éCole",
		"İstanbul İ ı I", "\u212Aelvin \u212A", "ẞ STRASSE", "ǅungla ǄUNGLA ǆ", "ΣΊΣΥΦΟΣ σίσυφος ΟΔΟΣ",
		"Москва МоскваСити HTTPСервер", "東京タワー 日本語テキスト", "١٢٣ ٣٤ abc١٢", "Ａｂｃ ＡＢＣ ｆｕｌｌＷｉｄｔｈ",
		"e\u0301te\u0301 cafe\u0301", "ﬁle ﬂow", "Ⅻ ⅻ ①②", "emoji 😀 fileName😀Size",
		"bad\xffutf8\xfe here", "\xc3(", "caf\xc3", "tab\there\nnewline\r\nCRLF",
		"theCAT TheCat THECat THEcat", "aBC ABc AbC", "ABCDEfgh", "AbcDEF123Ghi",
	}
	// Random texts from a generator of our own (xorshift64), so that they
	// never change with the Go version.
	x := uint64(88172645463325252)
	next := func(n int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	alphabets := []string{
		"aAbBeEiIsSzZ09 _-.,;:/'\"\n\tXYies",
		"aAsSéÉßẞİıΣσςЖжk\u212A0١ _-.Ǆǅǆ",
	}
	for _, alpha := range alphabets {
		rs := []rune(alpha)
		for range 5000 {
			var b strings.Builder
			for range next(40) {
				if next(50) == 0 {
					b.WriteByte(0xff) // an invalid byte
					continue
				}
				b.WriteRune(rs[next(len(rs))])
			}
			texts = append(texts, b.String())
		}
	}
	return texts
}
