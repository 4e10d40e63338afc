package text

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

type S = []string

// The three modes side by side: what each keeps, splits, drops and stems.
var modeTests = []struct {
	in                string
	index, table, ref S
}{
	{"", nil, nil, nil},
	{"getWeatherForecast", S{"get", "weather", "forecast"}, S{"get", "weather", "forecast"}, S{"getweatherforecast"}},
	{"GetWeatherForecast get_weather_forecast kebab-case", S{"get", "weather", "forecast", "get", "weather", "forecast", "kebab", "case"},
		S{"get", "weather", "forecast", "get", "weather", "forecast", "kebab", "case"}, S{"getweatherforecast", "get", "weather", "forecast", "kebab", "case"}},
	{"HTTPServer parseJSONBody", S{"http", "server", "parse", "json", "body"}, S{"http", "server", "pars", "json", "bodi"}, S{"httpserver", "parsejsonbody"}},
	// A digit before a capital splits only for the table; numbers only the table drops.
	{"v2Data PDF2Text x86_64 GPU4", S{"v2data", "pdf2text", "x86", "64", "gpu4"}, S{"v2", "data", "pdf2", "text", "x86", "gpu4"}, S{"v2data", "pdf2text", "x86", "64", "gpu4"}},
	// The index keeps a run of stop words as phrases (after the word that
	// ends it); a number is a class term for the table, its digits for the
	// index.
	{"What is the weather in Paris?", S{"weather", "what is", "what is the", "is the", "paris"}, S{"weather", "pari"}, S{"what", "is", "the", "weather", "in", "paris"}},
	{"I want to convert 42 MP3 files", S{"want", "convert", "42", "mp3", "file"}, S{"convert", "<num>", "mp3", "file"}, S{"i", "want", "to", "convert", "42", "mp3", "files"}},
	{"running runs ran relational generalization", S{"running", "runs", "ran", "relational", "generalization"}, S{"run", "run", "ran", "relat", "gener"}, S{"running", "runs", "ran", "relational", "generalization"}},
	// One-letter words: only the table drops them ("a" and "i" are index stopwords).
	{"a b c x1", S{"b", "c", "x1"}, S{"x1"}, S{"a", "b", "c", "x1"}},
	// The index looks stopwords up after folding plurals, the table before stemming.
	{"theirs theses whats", S{"their these", "their these what", "these what"}, S{"these", "what"}, S{"theirs", "theses", "whats"}},
	{"Categories & classes, read_file list-entries", S{"category", "class", "read", "file", "list", "entry"}, S{"categori", "class", "read", "file", "list", "entri"}, S{"categories", "classes", "read", "file", "list", "entries"}},
	{"C++ & C# / .NET", S{"c", "c", "net"}, S{"net"}, S{"c", "c", "net"}},
	// Other scripts: letters for the index and the table (not stemmed by
	// Porter, folded by Plural), separators for the reference.
	{"Ünïcode Straße naïve", S{"ünïcode", "straße", "naïve"}, S{"ünïcode", "straße", "naïve"}, S{"n", "code", "stra", "e", "na", "ve"}},
	{"Größe ändern: fileSize", S{"größe", "ändern", "file", "size"}, S{"größe", "ändern", "file", "size"}, S{"gr", "e", "ndern", "filesize"}},
	{"données météo", S{"donnée", "météo"}, S{"données", "météo"}, S{"donn", "es", "m", "t", "o"}},
	{"МоскваСити HTTPСервер", S{"москва", "сити", "http", "сервер"}, S{"москва", "сити", "http", "сервер"}, S{"http"}},
	{"ÉCOLE ÉcoleNormale", S{"école", "école", "normale"}, S{"école", "école", "normal"}, S{"cole", "colenormale"}},
	{"東京タワー", S{"東京タワー"}, S{"東京タワー"}, nil},
	// Digits of other scripts are digits, but not numbers to drop.
	{"١٢٣ x١", S{"١٢٣", "x١"}, S{"١٢٣", "x١"}, S{"x"}},
	// Case folding: the Kelvin sign lowercases to an ASCII k, İ to i.
	{"\u212Aelvin İ", S{"kelvin"}, S{"kelvin"}, S{"kelvin", "i"}},
	// Invalid UTF-8 separates words.
	{"bad\xffbyte caf\xc3", S{"bad", "byte", "caf"}, S{"bad", "byte", "caf"}, S{"bad", "byte", "caf"}},
}

func TestModes(t *testing.T) {
	for _, tc := range modeTests {
		if got := Index().Terms(tc.in); !slices.Equal(got, tc.index) {
			t.Errorf("Index().Terms(%q) = %q, want %q", tc.in, got, tc.index)
		}
		if got := Table().Terms(tc.in); !slices.Equal(got, tc.table) {
			t.Errorf("Table().Terms(%q) = %q, want %q", tc.in, got, tc.table)
		}
		if got := Reference().Terms(tc.in); !slices.Equal(got, tc.ref) {
			t.Errorf("Reference().Terms(%q) = %q, want %q", tc.in, got, tc.ref)
		}
	}
}

// Each option on its own.
func TestOptions(t *testing.T) {
	const in = "The 2 HTTPServers of v2Data: a theses"
	tests := []struct {
		a    Analyzer
		want S
	}{
		{Analyzer{}, S{"the", "2", "http", "servers", "of", "v2data", "a", "theses"}},
		{Analyzer{Split: CamelDigit}, S{"the", "2", "http", "servers", "of", "v2", "data", "a", "theses"}},
		{Analyzer{Split: ASCIIRuns}, S{"the", "2", "httpservers", "of", "v2data", "a", "theses"}},
		{Analyzer{MinRunes: 2}, S{"the", "http", "servers", "of", "v2data", "theses"}},
		{Analyzer{MinRunes: 4}, S{"http", "servers", "v2data", "theses"}},
		{Analyzer{DropNumbers: true}, S{"the", "http", "servers", "of", "v2data", "a", "theses"}},
		{Analyzer{Stop: IndexStopwords()}, S{"2", "http", "servers", "v2data", "theses"}},
		{Analyzer{Stop: IndexStopwords(), Stem: Plural}, S{"2", "http", "server", "v2data", "these"}},
		{Analyzer{Stop: IndexStopwords(), Stem: Plural, StopStemmed: true}, S{"2", "http", "server", "v2data"}},
		{Analyzer{Stem: Porter}, S{"the", "2", "http", "server", "of", "v2data", "a", "these"}},
	}
	for _, tc := range tests {
		if got := tc.a.Terms(in); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}

// Append appends; a cache changes nothing but speed, and its keys and
// terms never point into the text.
func TestAppendAndCache(t *testing.T) {
	dst := Table().Append(S{"x"}, "getWeather", nil)
	if !slices.Equal(dst, S{"x", "get", "weather"}) {
		t.Fatalf("Append = %q", dst)
	}
	c := Cache{}
	for _, a := range []Analyzer{Index(), Table(), Reference()} {
		clear(c)
		for _, s := range []string{"files of Files FILES", "the weather in Paris, Paris weather", "HTTPServer http server"} {
			buf := []byte(s)
			txt := unsafe.String(&buf[0], len(buf))
			want := a.Terms(s)
			for range 2 {
				if got := a.Append(nil, txt, c); !slices.Equal(got, want) {
					t.Fatalf("%q with a cache: %q, want %q", s, got, want)
				}
			}
			lo, hi := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0]))+uintptr(len(buf))
			inText := func(s string) bool {
				if s == "" {
					return false
				}
				p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
				return lo <= p && p < hi
			}
			for k, v := range c {
				if inText(k) || inText(v) {
					t.Fatalf("cache entry %q → %q points into the text", k, v)
				}
			}
		}
	}
	if c["files"] != "files" || c["the"] != "the" || len(c) == 0 {
		t.Errorf("Reference cache = %q", c)
	}
}

// The byte loop for ASCII runs cuts exactly where the rune loop does.
func TestASCIIRunsLikeUnicode(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const alphabet = "aAbBeEiIsSzZ09XY"
	runs := []string{"getWeather", "HTTPServer", "parseJSONFile", "PDF2Text", "v2API", "ABCdef", "aB", "Ab", "A", "iPhone", "MyHTTP2Server", "ALLCAPS"}
	for range 5000 {
		b := make([]byte, 1+r.IntN(20))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		runs = append(runs, string(b))
	}
	for _, a := range []Analyzer{Index(), Table(), {}} {
		for _, run := range runs {
			if got, want := a.appendRun(nil, run, nil, nil), a.appendRunUnicode(nil, run, nil, nil); !slices.Equal(got, want) {
				t.Fatalf("%q (split %d): ASCII %q, Unicode %q", run, a.Split, got, want)
			}
		}
	}
}

// BenchmarkIndexTerms: a message's analysis for the lexical index, with
// its class terms and phrases of stop words, against the analysis without
// them (the index's before issue 44), in one run: a 1,000-word text, and
// requests as a user writes them (message).
func BenchmarkIndexTerms(b *testing.B) {
	s := strings.Repeat("Read the contents of a file at the given path and return its lines; getFileContents HTTPServer v2Data. ", 9) +
		"What is 15% of 80, and 2^32? Where is the file of 2024-06-01 (10 MB, sha 3f9a2c1)?"
	messages := []string{"what's 15% of 80", "where is docker-compose.yml somewhere under this folder",
		"read the first 10 MB of log.txt", "how much is 19.99 times 3 plus tax of 8%", "show commit 3f9a2c1",
		"can you list the files in this folder modified since 2024-06-01"}
	plain := Index()
	plain.Classes, plain.Literals, plain.Phrases = false, false, nil
	for _, m := range []struct {
		name string
		a    Analyzer
	}{{"index", Index()}, {"document", IndexDocument()}, {"plain", plain}} {
		b.Run(m.name, func(b *testing.B) {
			var dst []string
			for b.Loop() {
				dst = m.a.Append(dst[:0], s, nil)
			}
		})
		if m.name == "document" {
			continue
		}
		b.Run("message/"+m.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				m.a.Terms(messages[i%len(messages)])
			}
		})
	}
}

func BenchmarkTableTermsCached(b *testing.B) {
	s := strings.Repeat("Read the contents of a file at the given path and return its lines; getFileContents HTTPServer v2Data. ", 10)
	a, c := Table(), Cache{}
	var dst []string
	for b.Loop() {
		dst = a.Append(dst[:0], s, c)
	}
}
