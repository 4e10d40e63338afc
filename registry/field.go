package registry

import (
	"encoding/json"
	"maps"
	"strings"
	"time"
)

// fieldDef declares one definition field of a .meta: a key a variant may
// override. Parsing, the variant overlay, the Tool build, the near-miss
// check and `toolsrv show` (Tool.Shown) are all derived from metaFields, so
// a new field is one entry there (plus its Tool member).
type fieldDef struct {
	name string
	// parse checks a value that is present and not null, and returns what
	// the definition stores. A variant's value replaces the top-level one
	// whole.
	parse func(raw json.RawMessage) (any, error)
	// build puts the value the resolved definition holds (nil: none) on
	// the Tool, or the field's default.
	build func(t *Tool, v any)
	// guard, when set, makes a near miss of the name an error: it says what
	// ignoring the misspelt field would do.
	guard string
	// label and text are how `toolsrv show` prints the field; fields with
	// one label share a line (the flags), and a block field is printed
	// below its label, indented.
	label string
	text  func(t *Tool) string
	block bool
	// enc and dec write a parsed value to the catalog snapshot and read
	// it back (snapshot.go); field derives them from the value's type.
	enc func(w *snapWriter, v any)
	dec func(r *snapReader) any
}

// field declares a field parsed by parse into a T, stored on the Tool at
// the member at returns, dflt when the definition does not set it.
func field[T any](name string, parse func(json.RawMessage) (T, error), at func(*Tool) *T, dflt T) fieldDef {
	enc, dec := valueCodec[T]()
	return fieldDef{
		enc:  enc,
		dec:  dec,
		name: name,
		parse: func(raw json.RawMessage) (any, error) {
			v, err := parse(raw)
			if err != nil {
				return nil, err
			}
			return v, nil
		},
		build: func(t *Tool, v any) {
			x, ok := v.(T)
			if !ok {
				x = dflt
			}
			*at(t) = x
		},
	}
}

// flag declares a boolean field (default false) that show lists among the
// flags when it is true.
func flag(name string, at func(*Tool) *bool) fieldDef {
	return field(name, parseBool, at, false).shown("flags", func(t *Tool) string {
		if *at(t) {
			return name
		}
		return ""
	})
}

// guarded makes a near miss of d's name an error; why says what ignoring
// the misspelt field would do.
func (d fieldDef) guarded(why string) fieldDef { d.guard = why; return d }

// shown sets how show prints d: text on the line labelled label ("" leaves
// the line out).
func (d fieldDef) shown(label string, text func(*Tool) string) fieldDef {
	d.label, d.text = label, text
	return d
}

// shownBelow is shown for a long text, printed indented below its label.
func (d fieldDef) shownBelow(label string, text func(*Tool) string) fieldDef {
	d = d.shown(label, text)
	d.block = true
	return d
}

// metaFields are the definition fields, in the order `toolsrv show`
// prints them. The README lists them (Tool definitions), and the guarded
// ones in its registry decisions.
var metaFields = []fieldDef{
	field("description", parseString, func(t *Tool) *string { return &t.Description }, "").
		shown("description", func(t *Tool) string { return t.Description }),
	field("tier", parseTier, func(t *Tool) *Tier { return &t.Tier }, Warm).
		shown("tier", func(t *Tool) string { return string(t.Tier) }),
	field("cmd", parseCmd, func(t *Tool) *string { return &t.Cmd }, "").
		guarded("the command would be resolved without it (an executable beside the .meta, or the tool's name on $PATH)").
		shown("command", commandText),
	field("concurrency", parseConcurrency, func(t *Tool) *Concurrency { return &t.Concurrency }, Parallel).
		guarded("calls would run in parallel").
		shown("concurrency", func(t *Tool) string { return string(t.Concurrency) }),
	flag("readOnly", func(t *Tool) *bool { return &t.ReadOnly }).
		guarded("the tool would not be read-only"),
	flag("network", func(t *Tool) *bool { return &t.Network }).
		guarded("the tool's network access would be the default (none)"),
	flag("bypass", func(t *Tool) *bool { return &t.Bypass }).
		guarded("the tool's bypass setting would be the default (sandboxed)"),
	flag("hostProcesses", func(t *Tool) *bool { return &t.HostProcesses }).
		guarded("the tool would see only its own call's processes"),
	flag("ptrace", func(t *Tool) *bool { return &t.Ptrace }).
		guarded("the tool could not trace processes"),
	flag("resetsCounter", func(t *Tool) *bool { return &t.ResetsCounter }),
	field("scope", parseString, func(t *Tool) *string { return &t.Scope }, "").
		shown("scope", func(t *Tool) string { return t.Scope }),
	field("outputFormat", parseString, func(t *Tool) *string { return &t.OutputFormat }, "").
		shown("output", func(t *Tool) string { return withSuffix(t.OutputFormat, " (outputFormat)") }),
	field("timeout", parseTimeout, func(t *Tool) *time.Duration { return &t.Timeout }, 0).
		guarded("calls would get the default timeout").
		shown("timeout", timeoutText),
	field("limits", parseLimits, func(t *Tool) *ToolLimits { return &t.Limits }, ToolLimits{}).
		guarded("calls would get the server's default limits").
		shown("limits", limitsText),
	field("keywords", parseKeywords, func(t *Tool) *[]string { return &t.Keywords }, nil).
		shown("keywords", func(t *Tool) string { return strings.Join(t.Keywords, ", ") }),
	field("examples", parseExamples, func(t *Tool) *[]string { return &t.Examples }, nil).
		shown("examples", func(t *Tool) string { return strings.Join(t.Examples, " | ") }),
	field("args", parseArgs, func(t *Tool) *json.RawMessage { return &t.Args }, defaultArgs).
		guarded("the arguments would not be checked against the schema").
		shown("args", argsText),
	field("prompt", parseString, func(t *Tool) *string { return &t.Prompt }, "").
		shownBelow("prompt", func(t *Tool) string { return t.Prompt }),
}

// fieldByName indexes metaFields; it is built once and never written.
var fieldByName = func() map[string]*fieldDef {
	m := make(map[string]*fieldDef, len(metaFields))
	for i := range metaFields {
		m[metaFields[i].name] = &metaFields[i]
	}
	return m
}()

// fields are the definition fields one object (the top level or a
// variant) sets: name → parsed value. A field it does not set is absent.
type fields map[string]any

func (f fields) has(name string) bool {
	_, ok := f[name]
	return ok
}

// args is the argument schema f sets, or nil.
func (f fields) args() json.RawMessage {
	a, _ := f["args"].(json.RawMessage)
	return a
}

// overlay is base with every field v sets replaced by v's value.
func overlay(base, v fields) fields {
	out := make(fields, len(base)+len(v))
	maps.Copy(out, base)
	maps.Copy(out, v)
	return out
}

// build puts every definition field of f on t (the default for those f
// does not set).
func (f fields) build(t *Tool) {
	for _, d := range metaFields {
		d.build(t, f[d.name])
	}
}
