package index

import "testing"

// TestSupported: what the authors' examples cannot lift another tool past.
// A lexical score made only of a message's optional terms (a class, a
// number, a phrase of stop words: a tool author's choice, Hit.Words
// false) is no support, as it is no evidence for the offered set.
func TestSupported(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Hit
		want bool
	}{
		{"a real word", Hit{Score: 0.3, Lexical: 0.4, Words: true}, true},
		{"optional terms alone", Hit{Score: 0.3, Lexical: 0.4}, false},
		{"optional terms alone, near in meaning", Hit{Score: 0.3, Lexical: 0.4, Dense: usageSupportDense}, true},
		{"the history raised it", Hit{Score: 0.3, Usage: 0.1}, true},
		{"named", Hit{Score: 0.3, Named: true}, true},
		{"a word, below the floor", Hit{Score: usageSupportFloor / 2, Lexical: 0.4, Words: true}, false},
		{"nothing", Hit{Score: 0.3, Dense: usageSupportDense / 2}, false},
	} {
		if got := supported(&tc.h); got != tc.want {
			t.Errorf("%s: supported(%+v) = %v, want %v", tc.name, tc.h, got, tc.want)
		}
	}
}
