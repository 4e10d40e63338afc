package text

import (
	"bufio"
	"compress/gzip"
	"os"
	"testing"
)

// readLines reads a gzip-compressed file of lines.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPorterVocabulary: Porter stems every word of Martin Porter's sample
// vocabulary (voc.txt, 23,531 words) to his output (output.txt); see
// testdata/porter/SOURCE.md.
func TestPorterVocabulary(t *testing.T) {
	voc := readLines(t, "testdata/porter/voc.txt.gz")
	out := readLines(t, "testdata/porter/output.txt.gz")
	if len(voc) != 23531 || len(out) != len(voc) {
		t.Fatalf("%d words and %d stems, want 23531 each", len(voc), len(out))
	}
	bad := 0
	for i, w := range voc {
		if got := Porter(w); got != out[i] {
			if bad++; bad <= 20 {
				t.Errorf("Porter(%q) = %q, want %q", w, got, out[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words differ", bad, len(voc))
	}
}

func TestPorter(t *testing.T) {
	tests := map[string]string{
		// The paper's examples.
		"caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed",
		"agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
		"conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"falling": "fall", "filing": "file", "happy": "happi", "relational": "relat",
		"conditional": "condit", "valenci": "valenc", "digitizer": "digit",
		"operator": "oper", "feudalism": "feudal", "hopefulness": "hope",
		"formaliti": "formal", "triplicate": "triplic", "electrical": "electr",
		"revival": "reviv", "adjustment": "adjust", "adoption": "adopt",
		"probate": "probat", "controll": "control", "generalization": "gener",
		// The C version's departures: short words, -bli, -logi.
		"as": "as", "is": "is", "s": "s", "humbly": "humbl", "apology": "apolog",
		// Not a–z only: unchanged.
		"": "", "mp3": "mp3", "Running": "Running", "naïve": "naïve", "straße": "straße",
		"download": "download", "weather": "weather", "ab": "ab",
	}
	for in, want := range tests {
		if got := Porter(in); got != want {
			t.Errorf("Porter(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlural(t *testing.T) {
	tests := map[string]string{
		"files": "file", "libraries": "library", "ponies": "pony", "lies": "lies", "series": "sery",
		"classes": "class", "glasses": "glass", "processes": "process", "class": "class", "status": "status",
		"analysis": "analysis", "sses": "sses", "kisses": "kiss", "bosses": "boss", "stresses": "stress",
		"data": "data", "runs": "runs", "cats": "cats", "theses": "these", "whats": "what",
		"entries": "entry", "données": "donnée", "": "", "s": "s", "dress": "dress", "caresses": "caress",
	}
	for in, want := range tests {
		if got := Plural(in); got != want {
			t.Errorf("Plural(%q) = %q, want %q", in, got, want)
		}
	}
}
