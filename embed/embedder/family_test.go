package embedder

import "testing"

func TestFamily(t *testing.T) {
	for _, tc := range []struct {
		id, want string
		// was is what the copy this function replaced returned where the
		// two disagreed (learn.Family dropped the fit suffix and gave
		// want; thresholds.Family did not); "" where both gave want.
		was string
	}{
		{id: "builtin/v1-abbe22c2", want: "builtin/v1"},
		{id: "builtin/v1-2eae4a02", want: "builtin/v1"},
		{id: "builtin/v1", want: "builtin/v1"},
		{id: "builtin/v1-0123456789", want: "builtin/v1"},
		{id: "ollama/nomic-embed-text", want: "ollama/nomic-embed-text"},
		{id: "ollama/nomic-embed-text@256", want: "ollama/nomic-embed-text@256"},
		{id: "x/model-abc", want: "x/model-abc"},         // too short for a digest
		{id: "x/model-abcdefg", want: "x/model-abcdefg"}, // not hex
		{id: "x/model-ABCDEF", want: "x/model-ABCDEF"},   // not lowercase
		{id: "x-abc", want: "x-abc"},
		{id: "x-abcdefg", want: "x-abcdefg"},
		{id: "-abcdef", want: ""},
		{id: "", want: ""},
		// A fitted built-in embedder's ID: the fit belongs to one catalog,
		// not to the family.
		{id: "builtin/v1-abbe22c2+fit-0123456789ab", want: "builtin/v1", was: "thresholds: builtin/v1-abbe22c2+fit"},
		{id: "builtin/v1-abbe22c2+fit-deadbeef0", want: "builtin/v1", was: "thresholds: builtin/v1-abbe22c2+fit"},
		{id: "builtin/v1-abbe22c2+fit-1234", want: "builtin/v1", was: "thresholds: builtin/v1-abbe22c2+fit-1234"},
		{id: "builtin/v1+fit-0123456789ab", want: "builtin/v1", was: "thresholds: builtin/v1+fit"},
		{id: "x/model+fit", want: "x/model", was: "thresholds: x/model+fit"},
	} {
		if got := Family(tc.id); got != tc.want {
			t.Errorf("Family(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}
