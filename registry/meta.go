package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// nameRE is the rule for tool names (SPEC §1).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

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
	case !nameRE.MatchString(name):
		return errors.New("name must start with a letter or digit and contain only letters, digits, '_', '.' and '-'")
	}
	return nil
}

// fields are the definition fields a variant may override. A nil pointer
// (or nil slice/raw message) means "not set here".
type fields struct {
	Description   *string
	Prompt        *string
	Keywords      []string
	Args          json.RawMessage
	Tier          *Tier
	Cmd           *string
	ReadOnly      *bool
	Bypass        *bool
	Network       *bool
	Concurrency   *Concurrency
	Timeout       *time.Duration
	Limits        *ToolLimits
	Scope         *string
	OutputFormat  *string
	ResetsCounter *bool
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
	var top map[string]json.RawMessage
	if err := strictUnmarshal(data, &top); err != nil {
		return nil, FieldErrors{syntaxError(data, err)}
	}
	if top == nil {
		return nil, FieldErrors{{Msg: "the file must hold a JSON object, not null"}}
	}
	p := &metaParser{lines: newFieldLines(data, metaLines)}
	dups, err := scanKeys(data, nil)
	if err != nil {
		return nil, FieldErrors{{Msg: "not valid JSON: " + err.Error()}}
	}
	for _, d := range collapseDuplicates(dups) {
		p.errs = append(p.errs, &FieldError{Field: d.Path.field(), Line: d.Line, Msg: d.message() + ", which is ambiguous: keep one"})
	}
	m := &Meta{lines: p.lines}
	p.parseFields(&m.fields, top, "")
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
			v := variant{}
			p.parseFields(&v.fields, vr, prefix+".")
			if mr, ok := vr["match"]; ok && !isNull(mr) {
				v.Match = p.parseMatch(mr, prefix+".match")
			}
			for _, k := range sortedKeys(vr) {
				if _, known := knownFields[k]; known || k == "match" {
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
		if _, known := knownFields[k]; known || k == "variants" {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[k] = top[k]
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
				if v.Description == nil {
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
	for k := range knownFields {
		out = append(out, k)
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

// knownFields maps each definition field to its parser.
var knownFields = map[string]func(f *fields, raw json.RawMessage) error{
	"description": func(f *fields, raw json.RawMessage) error { return decodeString(raw, &f.Description) },
	"prompt":      func(f *fields, raw json.RawMessage) error { return decodeString(raw, &f.Prompt) },
	"keywords": func(f *fields, raw json.RawMessage) error {
		var ks []string
		if err := json.Unmarshal(raw, &ks); err != nil {
			return errors.New("must be an array of strings")
		}
		if ks == nil {
			ks = []string{}
		}
		f.Keywords = ks
		return nil
	},
	"args": func(f *fields, raw json.RawMessage) error {
		t := bytes.TrimSpace(raw)
		if len(t) == 0 || (t[0] != '{' && t[0] != 't' && t[0] != 'f') {
			return errors.New("must be a JSON Schema object (or true/false)")
		}
		f.Args = append(json.RawMessage(nil), t...)
		return nil
	},
	"tier": func(f *fields, raw json.RawMessage) error {
		var s *string
		if err := decodeString(raw, &s); err != nil {
			return err
		}
		switch t := Tier(*s); t {
		case Hot, Warm, Cold:
			f.Tier = &t
			return nil
		}
		return fmt.Errorf("is %q; use \"hot\", \"warm\" or \"cold\"", *s)
	},
	"cmd": func(f *fields, raw json.RawMessage) error {
		if err := decodeString(raw, &f.Cmd); err != nil {
			return err
		}
		if strings.TrimSpace(*f.Cmd) == "" {
			return errors.New("is empty; remove it or give a command")
		}
		if strings.ContainsRune(*f.Cmd, 0) {
			return errors.New("contains a NUL byte")
		}
		return nil
	},
	"readOnly":      func(f *fields, raw json.RawMessage) error { return decodeBool(raw, &f.ReadOnly) },
	"bypass":        func(f *fields, raw json.RawMessage) error { return decodeBool(raw, &f.Bypass) },
	"network":       func(f *fields, raw json.RawMessage) error { return decodeBool(raw, &f.Network) },
	"resetsCounter": func(f *fields, raw json.RawMessage) error { return decodeBool(raw, &f.ResetsCounter) },
	"scope":         func(f *fields, raw json.RawMessage) error { return decodeString(raw, &f.Scope) },
	"outputFormat":  func(f *fields, raw json.RawMessage) error { return decodeString(raw, &f.OutputFormat) },
	"concurrency": func(f *fields, raw json.RawMessage) error {
		var s *string
		if err := decodeString(raw, &s); err != nil {
			return err
		}
		switch c := Concurrency(*s); c {
		case Parallel, Serial, Exclusive:
			f.Concurrency = &c
			return nil
		}
		return fmt.Errorf("is %q; use \"parallel\", \"serial\" or \"exclusive\"", *s)
	},
	"limits": func(f *fields, raw json.RawMessage) error {
		l, err := parseLimits(raw)
		if err != nil {
			return err
		}
		f.Limits = &l
		return nil
	},
	"timeout": func(f *fields, raw json.RawMessage) error {
		var d time.Duration
		var secs float64
		var s string
		switch {
		case json.Unmarshal(raw, &secs) == nil:
			d = time.Duration(secs * float64(time.Second))
		case json.Unmarshal(raw, &s) == nil:
			var err error
			if d, err = time.ParseDuration(s); err != nil {
				return fmt.Errorf("%q is not a duration; write seconds (30) or a duration (\"90s\", \"2m\")", s)
			}
		default:
			return errors.New("must be seconds (a number) or a duration string such as \"90s\"")
		}
		if d <= 0 {
			return errors.New("must be positive")
		}
		f.Timeout = &d
		return nil
	},
}

func (p *metaParser) parseFields(f *fields, obj map[string]json.RawMessage, prefix string) {
	for _, k := range sortedKeys(obj) {
		parse, ok := knownFields[k]
		if !ok || isNull(obj[k]) {
			continue
		}
		if err := parse(f, obj[k]); err != nil {
			p.fail(prefix+k, err.Error())
		}
	}
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

func decodeString(raw json.RawMessage, dst **string) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("must be a string, not %s", jsonKind(raw))
	}
	*dst = &s
	return nil
}

func decodeBool(raw json.RawMessage, dst **bool) error {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("must be true or false, not %s", jsonKind(raw))
	}
	*dst = &b
	return nil
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
