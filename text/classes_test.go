package text

import (
	"slices"
	"testing"
)

// Numbers and symbols become class terms: the index keeps their digits
// beside them and a plain number as its digits alone (Literals), the table
// the class alone.
func TestClasses(t *testing.T) {
	for _, tc := range []struct {
		in           string
		index, table S
	}{
		// arithmetic in digits and in words
		{"add 17 and 25", S{"<op>", "add", "17", "25"}, S{"<op>", "add", "<num>", "<num>"}},
		{"what is 1234 * 5678", S{"1234", "what is", "<op>", "5678"}, S{"<num>", "<op>", "<num>"}},
		{"(12 + 8) * 3", S{"12", "<op>", "8", "<op>", "3"}, S{"<num>", "<op>", "<num>", "<op>", "<num>"}},
		{"2^32 3**5 6 x 7 144/12 5-6=", S{"2", "<op>", "32", "3", "<op>", "5", "6", "<op>", "7", "144", "<op>", "12", "5", "<op>", "6"},
			S{"<num>", "<op>", "<num>", "<num>", "<op>", "<num>", "<num>", "<op>", "<num>", "<num>", "<op>", "<num>", "<num>", "<op>", "<num>"}},
		{"work out six times seven", S{"work", "out", "six", "<op>", "seven"}, S{"work", "<num>", "<op>", "<num>"}},
		{"100 divided by 8, nine squared", S{"100", "<op>", "8", "nine", "<op>"}, S{"<num>", "<op>", "<num>", "<num>", "<op>"}},
		// "one" is a number before a scale word
		{"divide one hundred by eight, one of them", S{"<op>", "divide", "one", "hundred", "eight", "one", "of them"}, S{"<op>", "divid", "<num>", "<num>", "<num>", "on"}},
		{"add one million and 5", S{"<op>", "add", "one", "million", "5"}, S{"<op>", "add", "<num>", "<num>", "<num>"}},
		// "times" is an operator only between numbers
		{"train times, I ran it 3 times", S{"train", "time", "ran", "3", "time"}, S{"train", "time", "ran", "<num>", "time"}},
		{"one of the files", S{"one", "file", "of the"}, S{"on", "file"}},
		{"19.99 1,234,567 1.2.3 9th", S{"19", "99", "1", "234", "567", "1", "2", "3", "9"}, S{"<num>", "<num>", "<num>", "<num>"}},
		// percentages, money, sizes, durations, units
		{"15% of 80, 8 % tax, 3 percent", S{"<pct>", "15", "80", "<pct>", "8", "tax", "<pct>", "3", "percent"}, S{"<pct>", "<num>", "<pct>", "tax", "<pct>", "percent"}},
		{"$499 20 € 64 dollars", S{"<money>", "499", "<money>", "20", "<money>", "64", "dollar"}, S{"<money>", "<money>", "<money>", "dollar"}},
		{"10MB 2.5 GiB 512 bytes", S{"<size>", "10", "mb", "<size>", "2", "5", "gib", "<size>", "512", "byte"}, S{"<size>", "mb", "<size>", "gib", "<size>", "byte"}},
		{"30s 5m 2 weeks", S{"<dur>", "30", "<dur>", "5", "<dur>", "2", "week"}, S{"<dur>", "<dur>", "<dur>", "week"}},
		{"5 km 30kg 72 °F", S{"<unit>", "5", "km", "<unit>", "30", "kg", "<unit>", "72"}, S{"<unit>", "km", "<unit>", "kg", "<unit>"}},
		// times, dates, timestamps
		{"7:30 14:30:05 7am 3 p.m.", S{"<time>", "7", "30", "<time>", "14", "30", "05", "<time>", "7", "<time>", "3"}, S{"<time>", "<time>", "<time>", "<time>"}},
		{"2024-06-01 29/02/2024 01.12.24", S{"<date>", "2024", "06", "01", "<date>", "29", "02", "2024", "<date>", "01", "12", "24"}, S{"<date>", "<date>", "<date>"}},
		{"2024-06-01T12:00:00Z", S{"<date>", "<time>", "2024", "06", "01", "12", "00", "00"}, S{"<date>", "<time>"}},
		// words that name a class give it too
		{"Percentage of a total, hex digits, sha256 checksums", S{"percentage", "<pct>", "total", "of a", "hex", "<hex>", "digit", "sha256", "<hex>", "checksum", "<hex>"},
			S{"percentag", "<pct>", "total", "hex", "<hex>", "digit", "sha256", "<hex>", "checksum", "<hex>"}},
		{"percent-encode, hashes", S{"percent", "encode", "hashe"}, S{"percent", "encod", "hash"}},
		// file names and globs of them; a list of extensions, a domain
		// or an abbreviation is none
		{"sha256 of release.tar.gz, *.py, src/main.go", S{"sha256", "<hex>", "release", "tar", "gz", "<file>", "py", "<file>", "src", "main", "go", "<file>"},
			S{"sha256", "<hex>", "releas", "tar", "gz", "<file>", "py", "<file>", "src", "main", "go", "<file>"}},
		{"(.zip, .tar.gz) example.com e.g. v1.2", S{"zip", "tar", "gz", "example", "com", "e", "g", "v1", "2"}, S{"zip", "tar", "gz", "exampl", "com", "v1"}},
		// hashes, hex, addresses
		{"commit 3f9a2c1 a1b2c3d4e5 0xFF", S{"commit", "<hex>", "3f9a2c1", "<hex>", "a1b2c3d4e5", "<hex>", "0xff"}, S{"commit", "<hex>", "<hex>", "<hex>"}},
		// a percent-encoded byte or a format is no number
		{"550e8400-e29b-41d4-a716-446655440000 %20 %5d", S{"<hex>", "20", "5d"}, S{"<hex>", "5d"}},
		// arithmetic verbs before a plain number are operators, before a
		// number with a unit they are words
		{"add 17 and 25, sum of 45, add up eight and 7", S{"<op>", "add", "17", "25", "<op>", "sum", "45", "<op>", "add", "up", "eight", "7"}, S{"<op>", "add", "<num>", "<num>", "<op>", "sum", "<num>", "<op>", "add", "<num>", "<num>"}},
		{"add 10 minutes to my timer, add five hours, add 20% more", S{"add", "<dur>", "10", "minute", "timer", "to my", "add", "five", "hour", "add", "<pct>", "20", "more"},
			S{"add", "<dur>", "minut", "timer", "add", "<num>", "hour", "add", "<pct>"}},
		{"ping 192.168.0.1", S{"ping", "<ip>", "192", "168", "0", "1"}, S{"ping", "<ip>"}},
		// digits inside identifiers stay words; so do words that start
		// with digits
		{"x86_64 v1.2 docker-1.3 file-2", S{"x86", "64", "v1", "2", "docker", "1", "3", "file", "2"}, S{"x86", "v1", "docker", "file"}},
		{"7zip 3d 2fa 1e10 1920x1080 deadbeef", S{"7zip", "3d", "2fa", "1e10", "1920x1080", "deadbeef"}, S{"7zip", "3d", "2fa", "1e10", "1920x1080", "deadbeef"}},
		// the ending of a contraction or a possessive is no word
		{"what's 15% of 80, the file's size, you're, we'll", S{"<pct>", "15", "80", "file", "size"}, S{"<pct>", "<num>", "file", "size"}},
		{"rock 'n' roll, 's", S{"rock", "n", "roll", "s"}, S{"rock", "roll"}},
		// a hyphen between words is no operator, a sign is no number part
		{"a-b -5 + x", S{"b", "5", "x"}, S{"<num>"}},
	} {
		if got := Index().Terms(tc.in); !slices.Equal(got, tc.index) {
			t.Errorf("Index().Terms(%q) = %q, want %q", tc.in, got, tc.index)
		}
		if got := Table().Terms(tc.in); !slices.Equal(got, tc.table) {
			t.Errorf("Table().Terms(%q) = %q, want %q", tc.in, got, tc.table)
		}
	}
}

// A run of stop words gives phrases: in a message every run of 2–4 words,
// in a document only a whole part of the text between punctuation.
func TestPhrases(t *testing.T) {
	for _, tc := range []struct {
		in                   string
		query, doc, keywords S
	}{
		{"where is", S{"where is"}, S{"where is"}, S{"where is"}},
		{"where is docker-compose.yml", S{"docker", "where is", "compose", "yml", "<file>"}, S{"docker", "compose", "yml", "<file>"}, S{"docker", "where is", "compose", "yml", "<file>"}},
		{"so where is it", S{"so where", "so where is", "so where is it", "where is", "where is it", "is it"}, S{"so where is it"}, S{"so where", "so where is", "so where is it"}},
		{"find files, where is, how do i", S{"find", "file", "where is", "how do", "how do i", "do i"}, S{"find", "file", "where is", "how do i"}, S{"find", "file", "where is", "how do", "how do i"}},
		// runs do not cross punctuation; a lone stop word is no phrase
		{"where. is", nil, nil, nil},
		{"what is the weather", S{"weather", "what is", "what is the", "is the"}, S{"weather"}, S{"weather", "what is", "what is the"}},
		// a run inside a keyword is none of its phrases
		{"size of the file", S{"size", "file", "of the"}, S{"size", "file"}, S{"size", "file"}},
		// more than four words: no phrase in a document
		{"it is what it is", S{"it is", "it is what", "it is what it", "is what", "is what it", "is what it is", "what it", "what it is", "it is"}, nil, S{"it is", "it is what", "it is what it"}},
		// apostrophes and blanks do not end a run
		{"where's it", S{"where it"}, S{"where it"}, S{"where it"}},
	} {
		if got := Index().Terms(tc.in); !slices.Equal(got, tc.query) {
			t.Errorf("Index().Terms(%q) = %q, want %q", tc.in, got, tc.query)
		}
		if got := IndexKeywords().Terms(tc.in); !slices.Equal(got, tc.keywords) {
			t.Errorf("IndexKeywords().Terms(%q) = %q, want %q", tc.in, got, tc.keywords)
		}
		if got := IndexDocument().Terms(tc.in); !slices.Equal(got, tc.doc) {
			t.Errorf("IndexDocument().Terms(%q) = %q, want %q", tc.in, got, tc.doc)
		}
	}
	// The table has no phrases.
	if got := Table().Terms("where is it"); len(got) != 0 {
		t.Errorf("Table().Terms(%q) = %q", "where is it", got)
	}
}

func TestOptional(t *testing.T) {
	for _, tc := range []struct {
		t    string
		want bool
	}{
		{"<num>", true}, {"<op>", true}, {"where is", true}, {"17", true}, {"0xff", true}, {"3f9a2c1", true},
		{"a1b2c3d4e5", true}, {"seven", true}, {"mb", true}, {"km", true},
		{"file", false}, {"minute", false}, {"dollar", false}, {"mp3", false}, {"v2data", false}, {"3d", false}, {"<", false}, {"", false}, {"deadbeef", false},
	} {
		if got := Optional(tc.t); got != tc.want {
			t.Errorf("Optional(%q) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
