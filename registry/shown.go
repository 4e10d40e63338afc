package registry

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ShownField is one definition field of a tool as `toolsrv show` prints
// it.
type ShownField struct {
	// Field is the .meta field ("outputFormat").
	Field string
	// Label is what show prints before the text ("output"); fields that
	// share a label share a line ("flags").
	Label string
	// Text is the value as text; "" when show leaves the field out (such
	// as a flag that is off). Show prints it as it is: the lines after the
	// first of a multi-line text are already indented to show's value
	// column (ShownColumn) where that helps (the schema), or left as they
	// are where they must stay exact (a shell command).
	Text string
	// Block is set for a long text printed below its label, indented
	// (the prompt).
	Block bool
}

// ShownColumn is the column at which show prints a field's text: a label
// of at most 11 letters and its colon, then at least one space.
const ShownColumn = 13

// Shown lists every definition field of t, in the order show prints them.
func (t *Tool) Shown() []ShownField {
	out := make([]ShownField, len(metaFields))
	for i, d := range metaFields {
		out[i] = ShownField{Field: d.name, Label: d.label, Block: d.block}
		if d.text != nil {
			out[i].Text = d.text(t)
		}
	}
	return out
}

// commandText is the resolved command: how it was resolved and its argv,
// quoted as a shell would need it.
func commandText(t *Tool) string {
	if len(t.Command.Argv) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s", t.Command.Kind, QuoteArgv(t.Command.Argv))
}

// QuoteArgv shows argv as a shell would take it: a word with anything but
// letters, digits and _./=:@%+,- in it (or an empty one) single-quoted, so
// that where one argument ends is never in doubt ("sh -c 'a b'" is not
// "sh -c a b").
func QuoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		plain := a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./=:@%+,-", r))
		}) < 0
		if plain {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

func timeoutText(t *Tool) string {
	if t.Timeout <= 0 {
		return ""
	}
	return t.Timeout.String()
}

// limitsText writes the limits as a .meta would ("processes 64, memory
// 512MiB").
func limitsText(t *Tool) string {
	var parts []string
	if n := t.Limits.Processes; n > 0 {
		parts = append(parts, fmt.Sprintf("processes %d", n))
	}
	for _, l := range []struct {
		name string
		n    int64
	}{{"memory", t.Limits.Memory}, {"file size", t.Limits.FileSize}, {"temp size", t.Limits.TempSize}} {
		if l.n > 0 {
			parts = append(parts, l.name+" "+sizeText(l.n))
		}
	}
	return strings.Join(parts, ", ")
}

// sizeText writes n bytes in GiB or MiB when it is a whole number of them.
func sizeText(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprint(n)
}

// argsText is the argument schema, indented, its lines after the first
// at show's value column.
func argsText(t *Tool) string {
	var pretty any
	if json.Unmarshal(t.Args, &pretty) != nil {
		return ""
	}
	b, _ := json.MarshalIndent(pretty, strings.Repeat(" ", ShownColumn), "  ")
	return string(b)
}

func withSuffix(s, suffix string) string {
	if s == "" {
		return ""
	}
	return s + suffix
}
