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
// file of examples/tools and every tenth line of learn/data, as they were
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

// TestFrozen: the three modes give, term for term, what the analysers they
// replace gave (when the digests were taken, TestSameAsBefore ran the old
// code on these texts too). Table's terms key the shipped table
// (embed/builtin/model.bin): a change there is a change of model, to be
// retrained and re-tuned in the same commit (embed/MODEL.md); a change of
// Index changes every lexical score.
func TestFrozen(t *testing.T) {
	texts := frozenTexts(t)
	for _, m := range []struct {
		name string
		a    Analyzer
		want string
	}{
		{"Index", Index(), "5495ec1b8723c070a788d85376548590f52a6c7aa6a8d23ef009d227bc96ada7"},
		{"Table", Table(), "d647da02bc7d4b8ec9d58b42fed5e33417b34abdf9619ecc7a11aaf934f7c13f"},
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
