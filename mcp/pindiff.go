package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Diff is what changed of a held tool, as lines for its owner to read:
// the definition's fields as text (the description line by line, the
// schema and annotations as indented JSON), the approved one's lines that
// went prefixed "- ", the new ones "+ ", and a few unchanged ones around
// them "  ". Every character a person would not see, or that could
// rewrite the terminal (controls, bidirectional and zero-width
// characters, Unicode tags, variation selectors), is shown as \u{XXXX}:
// hidden text is the point of a poisoned description. A new tool's diff
// is all "+".
func (h *Held) Diff() []string {
	if h.Unreadable {
		return nil
	}
	var was []string
	switch {
	case h.Was != nil:
		was = definitionLines(h.Was)
	case !h.New:
		was = []string{"(the approved definition's text was not kept, only its hash: it was too long)"}
	}
	return diffLines(was, definitionLines(&h.Now), 3, 400)
}

// definitionLines is d as lines of text, escaped (ShowText).
func definitionLines(d *Definition) []string {
	out := []string{"name: " + ShowText(d.Name)}
	if d.Title != "" {
		out = append(out, "title: "+ShowText(d.Title))
	}
	out = append(out, "description:")
	for _, l := range strings.Split(d.Description, "\n") {
		out = append(out, "  "+ShowText(l))
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"inputSchema", d.InputSchema}, {"annotations", d.Annotations}} {
		if len(f.raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if json.Indent(&b, f.raw, "", "  ") != nil {
			b.Reset()
			b.Write(f.raw)
		}
		out = append(out, f.name+":")
		for _, l := range strings.Split(b.String(), "\n") {
			out = append(out, "  "+ShowText(l))
		}
	}
	return out
}

// ShowText is s with every character a person would not see, or that a
// terminal would act on, shown as \u{XXXX}: controls (line feeds too),
// format characters (bidirectional controls, zero-width characters,
// Unicode tags), variation selectors, and bytes that are not UTF-8
// (\u{FFFD}).
func ShowText(s string) string {
	clean := true
	for _, r := range s {
		if hiddenRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\u{FFFD}`)
		case hiddenRune(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hiddenRune reports whether ShowText escapes r.
func hiddenRune(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case unicode.Is(unicode.Cf, r): // bidi controls, zero-width, tags, BOM
		return true
	case r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef: // variation selectors
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tags (those not in Cf)
		return true
	}
	return false
}

// diffLines is the line diff of a and b, with ctx unchanged lines kept
// around each change and at most limit lines (the rest counted).
func diffLines(a, b []string, ctx, limit int) []string {
	type op struct {
		kind byte // ' ', '-', '+'
		line string
	}
	var ops []op
	if len(a)*len(b) > 4_000_000 {
		// Too long to align: all of a out, all of b in.
		for _, l := range a {
			ops = append(ops, op{'-', l})
		}
		for _, l := range b {
			ops = append(ops, op{'+', l})
		}
	} else {
		// Longest common subsequence, from the ends.
		lcs := make([][]int32, len(a)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(b)+1)
		}
		for i := len(a) - 1; i >= 0; i-- {
			for j := len(b) - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max32(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(a) || j < len(b) {
			switch {
			case i < len(a) && j < len(b) && a[i] == b[j]:
				ops = append(ops, op{' ', a[i]})
				i++
				j++
			case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', a[i]})
				i++
			default:
				ops = append(ops, op{'+', b[j]})
				j++
			}
		}
	}
	// Keep the changes and ctx lines around each.
	keep := make([]bool, len(ops))
	for k, o := range ops {
		if o.kind != ' ' {
			for m := max(0, k-ctx); m <= min(len(ops)-1, k+ctx); m++ {
				keep[m] = true
			}
		}
	}
	var out []string
	skipped := false
	for k, o := range ops {
		if !keep[k] {
			skipped = true
			continue
		}
		if skipped {
			out = append(out, "  …")
			skipped = false
		}
		out = append(out, string(o.kind)+" "+o.line)
	}
	if skipped {
		out = append(out, "  …")
	}
	if len(out) > limit {
		n := len(out) - limit
		out = append(out[:limit], fmt.Sprintf("  … and %d more lines", n))
	}
	return out
}

func max32(a, b int32) int32 {
	if a > b {
		return a
	}
	return b
}
