package text

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusTexts are the texts the analysers are checked on: every .meta file
// of examples/tools and every line of learn/data (repo), and every .meta
// file and query of ../shared/eval when it is there (shared). A .meta file
// counts whole and line by line (a text with one non-ASCII character took
// the index's general path as a whole, its ASCII lines the fast path).
func corpusTexts(t testing.TB) (repo, shared []string) {
	t.Helper()
	meta := func(glob string) []string {
		files, _ := filepath.Glob(glob)
		var texts []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(b))
			texts = append(texts, strings.Split(string(b), "\n")...)
		}
		return texts
	}
	lines := func(glob string, gz bool) []string {
		files, _ := filepath.Glob(glob)
		var texts []string
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			var r io.Reader = fh
			if gz {
				if r, err = gzip.NewReader(fh); err != nil {
					t.Fatal(err)
				}
			}
			sc := bufio.NewScanner(r)
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				texts = append(texts, sc.Text())
			}
			if err := sc.Err(); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			fh.Close()
		}
		return texts
	}
	repo = append(meta("../examples/tools/*.meta"), lines("../learn/data/*/*.jsonl.gz", true)...)
	shared = append(meta("../../shared/eval/*/tools/*.meta"), lines("../../shared/eval/*/queries.jsonl", false)...)
	t.Logf("%d texts from the repository, %d from ../shared/eval", len(repo), len(shared))
	return repo, shared
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

// TestSameAsBefore: the analysers give exactly what the code they replace
// gave, on every text of the corpora and the edge cases.
func TestSameAsBefore(t *testing.T) {
	repo, shared := corpusTexts(t)
	texts := append(append(repo, shared...), frozenTexts(t)...) // frozenTexts has edgeTexts

	index, table, ref := Index(), Table(), Reference()
	indexWords := index
	indexWords.Stop = nil
	oldCache, newCache := map[string]string{}, Cache{}
	var n [4]int
	for _, s := range texts {
		if got, want := indexWords.Terms(s), oldIndexTokens(s); !slices.Equal(got, want) {
			t.Fatalf("index tokens of %q:\n got %q\nwant %q", s, got, want)
		}
		if got, want := index.Terms(s), oldIndexTerms(s); !slices.Equal(got, want) {
			t.Fatalf("index terms of %q:\n got %q\nwant %q", s, got, want)
		} else {
			n[0] += len(got)
		}
		want := oldTableAppendTokens(nil, s, nil)
		if got := table.Terms(s); !slices.Equal(got, want) {
			t.Fatalf("table terms of %q:\n got %q\nwant %q", s, got, want)
		}
		n[1] += len(want)
		// With caches shared over all the texts (the embedder's way).
		if got, want := table.Append(nil, s, newCache), oldTableAppendTokens(nil, s, oldCache); !slices.Equal(got, want) {
			t.Fatalf("table terms of %q with a cache:\n got %q\nwant %q", s, got, want)
		}
		if got, want := ref.Terms(s), oldReference(s); !slices.Equal(got, want) {
			t.Fatalf("reference terms of %q:\n got %q\nwant %q", s, got, want)
		} else {
			n[2] += len(got)
		}
		n[3]++
	}
	if len(oldCache) != len(newCache) {
		t.Fatalf("cache sizes %d and %d", len(oldCache), len(newCache))
	}
	for w, term := range oldCache {
		if got, ok := newCache[w]; !ok || got != term {
			t.Fatalf("cache[%q] = %q, %v; was %q", w, got, ok, term)
		}
	}
	t.Logf("%d texts: %d index terms, %d table terms, %d reference terms, %d cached words", n[3], n[0], n[1], n[2], len(newCache))
}

// TestStopwordsAsBefore: the stop lists are the ones they replace.
func TestStopwordsAsBefore(t *testing.T) {
	var was []string
	for w := range oldIndexStopwords {
		was = append(was, w)
	}
	slices.Sort(was)
	if got := IndexStopwords().Words(); !slices.Equal(got, was) {
		t.Errorf("IndexStopwords = %q, was %q", got, was)
	}
	was = was[:0]
	for w := range oldTableStopwords {
		was = append(was, w)
	}
	slices.Sort(was)
	if got := TableStopwords().Words(); !slices.Equal(got, was) {
		t.Errorf("TableStopwords = %q, was %q", got, was)
	}
}

// TestStemmersAsBefore: Plural and Porter give what the index's and the
// embedder's stemmers gave, on every lowercased word of the corpora.
func TestStemmersAsBefore(t *testing.T) {
	words := map[string]bool{}
	repo, shared := corpusTexts(t)
	for _, s := range append(append(repo, shared...), edgeTexts()...) {
		for _, w := range oldReference(s) {
			words[w] = true
		}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !isAlnum(r) }) {
			words[strings.ToLower(w)] = true
		}
	}
	for w := range words {
		if got, want := Plural(w), oldIndexStem(w); got != want {
			t.Fatalf("Plural(%q) = %q, was %q", w, got, want)
		}
		if got, want := Porter(w), oldPorter(w); got != want {
			t.Fatalf("Porter(%q) = %q, was %q", w, got, want)
		}
	}
	t.Logf("%d words", len(words))
}
