package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/internal/jsonscan"
)

// ValidName reports why name cannot be a tool (or agent) name, or nil.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case strings.ContainsRune(name, 0):
		return errors.New("name contains a NUL byte")
	case strings.Contains(name, "/"):
		return errors.New("name contains '/'")
	case strings.Contains(name, ".."):
		return errors.New("name contains '..'")
	case len(name) > 128:
		return fmt.Errorf("name is %d bytes long; the limit is 128", len(name))
	case !nameChars(name):
		return errors.New("name must start with a letter or digit and contain only letters, digits, '_', '.' and '-'")
	}
	return nil
}

// nameChars is the rule for tool names' characters,
// ^[A-Za-z0-9][A-Za-z0-9_.-]*$, checked byte by byte (a regexp match cost
// more than the rest of resolving a name at start-up).
func nameChars(name string) bool {
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// match is a variant's condition: key → alternatives (OR); keys AND.
type match map[string][]string

type variant struct {
	Match match // nil: always holds
	fields
}

// Meta is a parsed .meta file before variants are resolved.
type Meta struct {
	fields
	Variants []variant
	Extra    map[string]json.RawMessage
	Warnings []string

	// lines finds the line of a field's key ("args", "variants[0].cmd"),
	// for problems found after parsing.
	lines *fieldLines
}

// Line is the 1-based line of field's key in the file, 0 when unknown.
func (m *Meta) Line(field string) int {
	if m == nil {
		return 0
	}
	return m.lines.line(field)
}

var matchKeys = map[string]bool{"binary": true, "file": true, "os": true, "arch": true, "env": true, "nenv": true}

// ParseMeta parses the contents of a .meta file. The error, when not nil, is
// a FieldErrors holding every problem found, each naming the field or line at
// fault and what to do.
func ParseMeta(data []byte) (*Meta, error) {
	m, errs := parseMeta(data)
	if len(errs) > 0 {
		return nil, capErrors(errs)
	}
	return m, nil
}

// metaParser collects the problems of one file.
type metaParser struct {
	lines *fieldLines
	errs  FieldErrors
}

func (p *metaParser) fail(field, msg string) {
	p.errs = append(p.errs, &FieldError{Field: field, Line: p.lines.line(field), Msg: msg})
}

// metaLines indexes the top-level fields, and variants[i],
// variants[i].FIELD and variants[i].match.KEY.
func metaLines(parent jsonPath) bool {
	return len(parent) == 0 || (parent[0].Key == "variants" && len(parent) <= 3)
}

func parseMeta(data []byte) (*Meta, FieldErrors) {
	top, ok, distinct := jsonscan.Object(data)
	if !ok {
		if err := strictUnmarshal(data, &top); err != nil {
			return nil, FieldErrors{syntaxError(data, err)}
		}
	}
	if top == nil {
		return nil, FieldErrors{{Msg: "the file must hold a JSON object, not null"}}
	}
	p := &metaParser{lines: newFieldLines(data, metaLines)}
	var dups []duplicateKey
	if !distinct { // a key repeats somewhere, or one is escaped: look closer
		var err error
		if dups, err = scanKeys(data, nil); err != nil {
			return nil, FieldErrors{{Msg: "not valid JSON: " + err.Error()}}
		}
	}
	for _, d := range collapseDuplicates(dups) {
		p.errs = append(p.errs, &FieldError{Field: d.Path.field(), Line: d.Line, Msg: d.message() + ", which is ambiguous: keep one"})
	}
	m := &Meta{lines: p.lines}
	m.fields = p.parseFields(top, "")
	if raw, ok := top["variants"]; ok && !isNull(raw) {
		var vs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &vs); err != nil {
			p.fail("variants", "must be an array of objects")
			vs = nil
		}
		for i, vr := range vs {
			prefix := fmt.Sprintf("variants[%d]", i)
			if vr == nil {
				p.fail(prefix, "must be an object")
				continue
			}
			v := variant{fields: p.parseFields(vr, prefix+".")}
			if mr, ok := vr["match"]; ok && !isNull(mr) {
				v.Match = p.parseMatch(mr, prefix+".match")
			}
			for _, k := range sortedKeys(vr) {
				if _, known := fieldByName[k]; known || k == "match" {
					continue
				}
				field := prefix + "." + k
				switch msg, warn := p.judgeUnknown(k, variantFieldNames, field); {
				case msg != "":
					p.fail(field, msg)
				case warn != "":
					m.Warnings = append(m.Warnings, warn)
				case k == "variants":
					m.Warnings = append(m.Warnings, fmt.Sprintf("%s: variants do not nest; %q is ignored", prefix, field))
				default:
					m.Warnings = append(m.Warnings, fmt.Sprintf("unknown field %q in %s is ignored", k, prefix))
				}
			}
			m.Variants = append(m.Variants, v)
		}
	}
	for _, k := range sortedKeys(top) {
		if _, known := fieldByName[k]; known || k == "variants" {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[k] = bytes.Clone(top[k]) // not a view of the file's bytes
		switch msg, warn := p.judgeUnknown(k, topFieldNames, k); {
		case msg != "":
			p.fail(k, msg)
		case warn != "":
			m.Warnings = append(m.Warnings, warn+"; it is kept but not used")
		case k == "match":
			m.Warnings = append(m.Warnings, `field "match" only has an effect inside a variant: {"variants": [{"match": ...}]}; it is kept but not used`)
		default:
			m.Warnings = append(m.Warnings, fmt.Sprintf("unknown field %q is kept but not used", k))
		}
	}
	sort.Strings(m.Warnings)
	if raw, ok := top["description"]; !ok || isNull(raw) {
		switch {
		case len(m.Variants) == 0:
			p.fail("description", "is required: add a one-line \"description\"")
		default:
			for i, v := range m.Variants {
				if !v.has("description") {
					p.fail(fmt.Sprintf("variants[%d].description", i), "is required: set a top-level \"description\" or one in every variant")
				}
			}
		}
	}
	sortByLine(p.errs)
	return m, p.errs
}

// judgeUnknown decides about an unknown field: an error message when it is
// a near miss of a guarded field, a warning naming the likely field when it
// is a near miss of another one, or neither.
func (p *metaParser) judgeUnknown(key string, known []string, field string) (errMsg, warning string) {
	s, ok := nearMiss(key, known)
	if !ok {
		return "", ""
	}
	if why, g := guarded[s]; g {
		return fmt.Sprintf("did you mean %q? An unknown field is ignored, so %s; rename it (a field of your own must not look like %q)", s, why, s), ""
	}
	loc := ""
	if l := p.lines.line(field); l > 0 {
		loc = fmt.Sprintf(" (line %d)", l)
	}
	return "", fmt.Sprintf("unknown field %q%s: did you mean %q?", field, loc, s)
}

var topFieldNames, variantFieldNames = fieldNames("variants"), fieldNames("match")

func fieldNames(extra string) []string {
	out := []string{extra}
	for _, d := range metaFields {
		out = append(out, d.name)
	}
	sort.Strings(out)
	return out
}

// sortByLine orders errs as the file does; errors without a line go last.
func sortByLine(errs FieldErrors) {
	key := func(e *FieldError) int {
		if e.Line == 0 {
			return 1 << 30
		}
		return e.Line
	}
	sort.SliceStable(errs, func(i, j int) bool { return key(errs[i]) < key(errs[j]) })
}

// capErrors keeps the first maxReported problems of a file and counts the
// rest in one more, so a file cannot flood the report.
func capErrors(errs FieldErrors) FieldErrors {
	if len(errs) <= maxReported {
		return errs
	}
	out := append(FieldErrors(nil), errs[:maxReported]...)
	return append(out, &FieldError{Msg: fmt.Sprintf("… and %d more problems in this file; fix the ones above first", len(errs)-maxReported)})
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseFields parses the definition fields obj sets; prefix names obj in
// problems ("variants[0].").
func (p *metaParser) parseFields(obj map[string]json.RawMessage, prefix string) fields {
	f := fields{}
	for _, k := range sortedKeys(obj) {
		d, ok := fieldByName[k]
		if !ok || isNull(obj[k]) {
			continue
		}
		v, err := d.parse(obj[k])
		if err != nil {
			p.fail(prefix+k, err.Error())
			continue
		}
		f[k] = v
	}
	return f
}

func (p *metaParser) parseMatch(raw json.RawMessage, field string) match {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		p.fail(field, "must be an object such as {\"binary\": \"journalctl\"}")
		return nil
	}
	m := match{}
	keys := []string{"arch", "binary", "env", "file", "nenv", "os"}
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		if !matchKeys[k] {
			msg := "is not a match key; use binary, file, os, arch, env or nenv"
			if s, ok := nearMiss(k, keys); ok {
				msg = fmt.Sprintf("is not a match key: did you mean %q? (match keys: binary, file, os, arch, env, nenv)", s)
			}
			p.fail(field+"."+k, msg)
			continue
		}
		var one string
		var many []string
		switch {
		case json.Unmarshal(v, &one) == nil:
			many = []string{one}
		case json.Unmarshal(v, &many) == nil && many != nil:
		default:
			p.fail(field+"."+k, "must be a string or an array of strings")
			continue
		}
		if len(many) == 0 {
			p.fail(field+"."+k, "is an empty array, which can never hold")
			continue
		}
		m[k] = many
	}
	return m
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// strictUnmarshal decodes exactly one JSON value and rejects trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return trailingData{dec.InputOffset()}
	}
	return nil
}

func syntaxError(data []byte, err error) *FieldError {
	const fix = "; fix the syntax (`jq . FILE` points at it)"
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var td trailingData
	switch {
	case errors.As(err, &se):
		return &FieldError{Line: lineOf(data, se.Offset), Msg: "not valid JSON: " + se.Error() + fix}
	case errors.As(err, &td):
		return &FieldError{Line: lineOf(data, td.off), Msg: "not valid JSON: unexpected data after the object" + fix}
	case errors.As(err, &te):
		return &FieldError{Msg: fmt.Sprintf("the file must hold a JSON object, not %s", te.Value)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Line: lineOf(data, int64(len(data))), Msg: "not valid JSON: the file ends before the object does" + fix}
	}
	return &FieldError{Msg: "not valid JSON: " + err.Error() + fix}
}

type trailingData struct{ off int64 }

func (t trailingData) Error() string { return "unexpected data after the JSON object" }

func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}
