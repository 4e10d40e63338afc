package registry

import (
	"sort"
	"strings"
)

// guarded are the keys whose loss changes what runs or how it is
// confined: the guarded definition fields (metaFields) and variants and a
// variant's match. An unknown field is ignored, so a misspelt one silently
// leaves the default in place: for these keys a near miss is an error, and
// the message says what the default would have done. Built once, never
// written.
var guarded = func() map[string]string {
	g := map[string]string{
		"variants": "the variants would be ignored",
		"match":    "the variant would hold on every host",
	}
	for _, d := range metaFields {
		if d.guard != "" {
			g[d.name] = d.guard
		}
	}
	return g
}()

// synonyms are names other tool formats use for our fields.
var synonyms = map[string]string{
	"parameters":  "args",
	"params":      "args",
	"arguments":   "args",
	"inputschema": "args",
	"schema":      "args",
	"command":     "cmd",
}

// nearMiss returns the known name that key most likely meant: the same name
// in another case or with '_'/'-' separators, a name within a small edit
// distance (one edit for names of up to 5 letters, two for longer ones), or
// a synonym from another tool format.
func nearMiss(key string, known []string) (string, bool) {
	k := normalizeName(key)
	if s, ok := synonyms[k]; ok && contains(known, s) {
		return s, true
	}
	best, bestD := "", 1<<30
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	for _, c := range sorted {
		n := strings.ToLower(c)
		if n == k {
			return c, true
		}
		limit := 1
		if len(n) > 5 {
			limit = 2
		}
		if d := editDistance(k, n); d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	return best, best != ""
}

func normalizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent letters cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30 // no field name is that long
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
