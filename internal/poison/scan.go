package poison

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Kind is what a finding is.
type Kind string

// The kinds of findings (see the package doc).
const (
	Hidden     Kind = "hidden"
	Bidi       Kind = "bidi"
	Imperative Kind = "imperative"
	Secret     Kind = "secret"
)

// Finding is one thing Scan found.
type Finding struct {
	Kind Kind
	// What is what was found, as a person can read it: the words matched
	// (at most a line's worth), or the hidden characters named and, for
	// Unicode tags, what they spell.
	What string
}

func (f Finding) String() string {
	switch f.Kind {
	case Hidden:
		return "hidden characters: " + f.What
	case Bidi:
		return "bidirectional controls: " + f.What
	case Imperative:
		return fmt.Sprintf("orders to the model: %q", f.What)
	default:
		return fmt.Sprintf("a request for secrets: %q", f.What)
	}
}

// Scan returns what text holds of the four kinds, each kind once (its
// first occurrence).
func Scan(text string) []Finding {
	var out []Finding
	out = append(out, invisible(text)...)
	flat := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	for _, r := range []struct {
		kind Kind
		re   *regexp.Regexp
	}{{Imperative, imperative}, {Secret, secretFile}, {Secret, secretAsk}} {
		if m := r.re.FindString(flat); m != "" && !has(out, r.kind) {
			out = append(out, Finding{Kind: r.kind, What: strings.TrimSpace(cut(m, 80))})
		}
	}
	return out
}

func has(fs []Finding, k Kind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

var (
	imperative = regexp.MustCompile(`\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|preceding|former|other|system|original)\s+(?:instructions?|prompts?|directions?|rules|messages|guidelines|context)\b` +
		`|\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this|it)\s+to|notify|alert|reveal\s+(?:this|it)\s+to|show\s+(?:this|it)\s+to)\s+the\s+user\b` +
		`|\bwithout\s+(?:telling|informing|notifying|alerting)\s+the\s+user\b` +
		`|\byou\s+are\s+now\s+(?:a|an|in)\b|\bnew\s+instructions\s*:` +
		`|<\s*/?\s*(?:important|system|instructions?)\s*>`)
	secretFile = regexp.MustCompile(`~/\.ssh\b|(?:^|[\s/"'\x60(])\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|(?:^|[\s/"'\x60(])\.env(?:\.\w+)?\b` +
		`|\.aws/credentials\b|(?:^|[\s/"'\x60(~])\.(?:netrc|pgpass|git-credentials|npmrc|pypirc|gnupg)\b|\.kube/config\b|\.docker/config\.json\b|/etc/shadow\b`)
	secretAsk = regexp.MustCompile(`\b(?:read|send|pass|include|share|paste|upload|forward|attach|copy|leak|exfiltrate)\b(?:\s+\S+){0,6}?\s+(?:api[\s_-]?keys?|access[\s_-]?tokens?|auth(?:entication)?[\s_-]?tokens?|bearer\s+tokens?|secret[\s_-]?keys?|private[\s_-]?keys?|passwords?|passphrases?|credentials|session\s+cookies?|cookies)\b`)
)

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// invisible finds the Hidden and Bidi characters of text.
func invisible(text string) []Finding {
	var tags strings.Builder
	var hidden, bidi []string
	ntags := 0
	runes := []rune(text)
	zeroWidth := func(r rune) bool {
		return r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff || r == 0x180e || (r >= 0x2061 && r <= 0x2064)
	}
	selector := func(r rune) bool { return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef) }
	ascii := func(i int) bool { return i >= 0 && i < len(runes) && runes[i] < 0x80 }
	name := func(r rune) string { return fmt.Sprintf("U+%04X", r) }
	note := func(list *[]string, r rune) {
		if n := name(r); len(*list) < 8 && !contains(*list, n) {
			*list = append(*list, n)
		}
	}
	for i, r := range runes {
		switch {
		case r >= 0xe0000 && r <= 0xe007f:
			if c := r - 0xe0000; c >= 0x20 && c < 0x7f {
				tags.WriteRune(c)
			}
			ntags++
		case r == 0x202a || r == 0x202b || r == 0x202c || r == 0x202d || r == 0x202e ||
			(r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c:
			note(&bidi, r)
		case r == 0xfeff && i == 0: // a byte-order mark
		case r == 0x200c || r == 0x200d:
			// Joiners: Persian, Indic scripts and emoji need them between
			// their own characters; beside ASCII or in a run they hide.
			run := (i > 0 && zeroWidth(runes[i-1])) || (i+1 < len(runes) && zeroWidth(runes[i+1]))
			if ascii(i-1) || ascii(i+1) || run {
				note(&hidden, r)
			}
		case zeroWidth(r):
			note(&hidden, r)
		case r >= 0xe0100 && r <= 0xe01ef:
			note(&hidden, r)
		case selector(r) && ((i > 0 && selector(runes[i-1])) || (i+1 < len(runes) && selector(runes[i+1]))):
			note(&hidden, r)
		}
	}
	var out []Finding
	if ntags > 0 {
		what := fmt.Sprintf("%d Unicode tag characters (U+E0000–U+E007F)", ntags)
		if s := tags.String(); s != "" {
			what += fmt.Sprintf(" spelling %q", cut(s, 120))
		}
		hidden = append([]string{what}, hidden...)
	}
	if len(hidden) > 0 {
		out = append(out, Finding{Kind: Hidden, What: strings.Join(hidden, ", ")})
	}
	if len(bidi) > 0 {
		out = append(out, Finding{Kind: Bidi, What: strings.Join(bidi, ", ")})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
