package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The ASCII fast path of appendTokens splits, lowercases and stems exactly
// like the general (Unicode) path.
func TestTokensASCIIFastPathMatchesGeneral(t *testing.T) {
	fixed := []string{"", "getWeather HTTPServer parseJSONFile", "files processes classes glasses status",
		"PDF2Text v2API x86_64 ABCdef aB Ab A", "libraries queries --flag=value_name; a.b.c",
		"ALLCAPS WORDS", "iPhone eBay MyHTTP2Server", "the files, of THE Directories!"}
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := "aAbBeEiIsSzZ09 _-.,;:/'\"\n\tXYies"
	for range 3000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		fixed = append(fixed, string(b))
	}
	for _, s := range fixed {
		got, want := appendTokens(nil, s), appendTokensUnicode(nil, s)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: fast path %q, general %q", s, got, want)
		}
	}
	// Non-ASCII text goes through the general path.
	if got := tokens("Größe ändern: fileSize"); !slices.Equal(got, []string{"größe", "ändern", "file", "size"}) {
		t.Fatalf("unicode: %q", got)
	}
}
