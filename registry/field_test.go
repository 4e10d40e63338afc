package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fieldSample is a value of one definition field that is not its default,
// and another: as written in a .meta, and as the Tool's JSON (under the
// same name) carries it ("" when it is written the same, omitted when the
// JSON leaves it out).
type fieldSample struct {
	value, other         string
	valueTool, otherTool string
}

// fieldSamples has a sample for every field in metaFields; a new field
// needs one here (the tests below say so).
const omitted = "(omitted)"

var fieldSamples = map[string]fieldSample{
	"description":   {value: `"the variant's description"`, other: `"the top-level description"`},
	"prompt":        {value: `"## from the variant"`, other: `"## from the top level"`},
	"keywords":      {value: `["variant","keywords"]`, other: `["top"]`},
	"examples":      {value: `["what changed in my repo?"]`, other: `["show the diff"]`},
	"args":          {value: `{"type":"object","required":["v"]}`, other: `{"type":"object","properties":{"t":{"type":"string"}}}`},
	"tier":          {value: `"cold"`, other: `"hot"`},
	"cmd":           {value: `"echo from the variant"`, other: `"jq"`},
	"readOnly":      {value: `true`, other: `false`, otherTool: omitted},
	"bypass":        {value: `true`, other: `false`, otherTool: omitted},
	"network":       {value: `true`, other: `false`, otherTool: omitted},
	"hostProcesses": {value: `true`, other: `false`, otherTool: omitted},
	"ptrace":        {value: `true`, other: `false`, otherTool: omitted},
	"concurrency":   {value: `"exclusive"`, other: `"serial"`},
	"timeout":       {value: `"90s"`, other: `5`, valueTool: `90000000000`, otherTool: `5000000000`},
	"limits":        {value: `{"processes":64,"memory":"512MiB","fileSize":"2GiB"}`, other: `{"processes":8}`, valueTool: `{"processes":64,"memory":536870912,"fileSize":2147483648}`},
	"scope":         {value: `"variant scope"`, other: `"top scope"`},
	"outputFormat":  {value: `"markdown"`, other: `"text"`},
	"resetsCounter": {value: `true`, other: `false`, otherTool: omitted},
}

func TestFieldDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range metaFields {
		switch {
		case d.name == "" || seen[d.name]:
			t.Errorf("field %q: declared twice or without a name", d.name)
		case d.name == "variants" || d.name == "match":
			t.Errorf("%q is structure, not a definition field", d.name)
		case d.parse == nil || d.build == nil:
			t.Errorf("field %q: no parser or no build", d.name)
		case d.label == "" || d.text == nil:
			t.Errorf("field %q: show does not print it (declare it with .shown)", d.name)
		case len(d.label)+1 >= ShownColumn:
			t.Errorf("field %q: show's label %q does not fit before column %d", d.name, d.label, ShownColumn)
		}
		seen[d.name] = true
		if _, ok := fieldSamples[d.name]; !ok {
			t.Errorf("field %q has no sample in fieldSamples: add one", d.name)
		}
	}
	for name := range fieldSamples {
		if !seen[name] {
			t.Errorf("fieldSamples has %q, which metaFields does not declare", name)
		}
	}
}

// overlayHost runs every variant on linux; /tools/x is executable, so a
// tool x in /tools runs it whatever its cmd says.
func overlayHost() StaticHost {
	return StaticHost{GOOS: "linux", GOARCH: "amd64", Exec: map[string]bool{"/tools/x": true, "/usr/bin/jq": true}, Path: []string{"/usr/bin"}}
}

// resolveJSON builds the Tool that top (a .meta's top-level object) and
// variants give on overlayHost, and returns the JSON value its field name
// holds (omitted when absent), the variant that matched, and the parse
// error.
func resolveJSON(t *testing.T, name string, top map[string]string, variants ...map[string]string) (string, int, error) {
	t.Helper()
	obj := map[string]json.RawMessage{}
	for k, v := range top {
		obj[k] = json.RawMessage(v)
	}
	var vs []map[string]json.RawMessage
	for _, v := range variants {
		o := map[string]json.RawMessage{}
		for k, x := range v {
			o[k] = json.RawMessage(x)
		}
		vs = append(vs, o)
	}
	if vs != nil {
		b, _ := json.Marshal(vs)
		obj["variants"] = b
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMeta(data)
	if err != nil {
		return "", 0, err
	}
	sch, err := compileSchemas(m)
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	tool, why, err := resolve("x", "/tools/x.meta", "/tools", sha256.Sum256(data), m, sch, overlayHost())
	if err != nil || tool == nil {
		t.Fatalf("%s: resolve: %v %s", data, err, why)
	}
	out, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got[name]; !ok {
		return omitted, tool.Variant, nil
	}
	return compact(t, string(got[name])), tool.Variant, nil
}

func compact(t *testing.T, s string) string {
	t.Helper()
	if s == omitted {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b.String()
}

// TestEveryFieldSurvivesAnOverlay: for every declared field, a variant that
// sets it gives the Tool the variant's value over the top level's, and a
// value set only at the top level reaches the Tool through a variant that
// does not set it. The values are checked not to be the defaults.
func TestEveryFieldSurvivesAnOverlay(t *testing.T) {
	for _, d := range metaFields {
		s, ok := fieldSamples[d.name]
		if !ok {
			continue // TestFieldDeclarations says so
		}
		t.Run(d.name, func(t *testing.T) {
			// top is a top level with a description and name set to v
			// ("": name not set).
			top := func(v string) map[string]string {
				m := map[string]string{"description": `"d"`}
				delete(m, d.name)
				if v != "" {
					m[d.name] = v
				}
				return m
			}
			linux := func(kv ...string) map[string]string {
				m := map[string]string{"match": `{"os":"linux"}`}
				for i := 0; i+1 < len(kv); i += 2 {
					m[kv[i]] = kv[i+1]
				}
				return m
			}
			value := compact(t, cmpOr(s.valueTool, s.value))
			other := compact(t, cmpOr(s.otherTool, s.other))
			if value == other {
				t.Fatalf("the sample's two values are the same: %s", value)
			}

			// The default (nothing sets the field) is not the sample's value.
			switch got, _, err := resolveJSON(t, d.name, top("")); {
			case err != nil:
				var all FieldErrors
				if !asFieldErrors(err, &all) || len(all) != 1 || all[0].Field != d.name || !strings.Contains(all[0].Msg, "is required") {
					t.Fatalf("without %q: %v", d.name, err)
				}
			case got == value:
				t.Errorf("without %q the Tool has %s, the sample's value: pick one that is not the default", d.name, got)
			}

			for _, tc := range []struct {
				what     string
				top      map[string]string
				variants []map[string]string
				want     string
				variant  int
			}{
				{"set at the top level, through a matched variant that does not set it (an unmatched one does)",
					top(s.value), []map[string]string{{"match": `{"os":"plan9"}`, d.name: s.other}, linux()}, value, 1},
				{"the other value at the top level, through a variant",
					top(s.other), []map[string]string{linux()}, other, 0},
				{"set in the matched variant over the top level",
					top(s.other), []map[string]string{linux(d.name, s.value)}, value, 0},
				{"set only in a variant without match",
					top(""), []map[string]string{{d.name: s.value}}, value, 0},
			} {
				got, idx, err := resolveJSON(t, d.name, tc.top, tc.variants...)
				if err != nil || got != tc.want || idx != tc.variant {
					t.Errorf("%s: the Tool has %s (variant %d, %v), want %s (variant %d)", tc.what, got, idx, err, tc.want, tc.variant)
				}
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// misspellings are near misses of name a user might write: another case,
// the last letter dropped, the last two different letters swapped.
func misspellings(name string) []string {
	r := []rune(name)
	swapped := slices.Clone(r)
	for i := len(r) - 2; i >= 0; i-- {
		if r[i] != r[i+1] {
			swapped[i], swapped[i+1] = r[i+1], r[i]
			break
		}
	}
	return []string{strings.ToUpper(name), string(r[:len(r)-1]), string(swapped)}
}

// TestEveryFieldIsCaughtMisspelt: a misspelling of every declared field,
// at the top level and in a variant, is caught: an error saying what the
// misspelling would have done for a guarded field, a warning naming the
// field for the others.
func TestEveryFieldIsCaughtMisspelt(t *testing.T) {
	for _, d := range metaFields {
		value := `"x"`
		if s, ok := fieldSamples[d.name]; ok {
			value = s.value
		}
		for _, miss := range misspellings(d.name) {
			if _, known := fieldByName[miss]; known || miss == d.name || miss == "variants" || miss == "match" {
				t.Fatalf("%q is not a misspelling of %q", miss, d.name)
			}
			for _, tc := range []struct{ where, meta, field string }{
				{"top level", `{"description":"d",` + quote(miss) + `:` + value + `}`, miss},
				{"variant", `{"description":"d","variants":[{` + quote(miss) + `:` + value + `}]}`, "variants[0]." + miss},
			} {
				t.Run(d.name+"/"+miss+"/"+tc.where, func(t *testing.T) {
					m, err := ParseMeta([]byte(tc.meta))
					want := `did you mean "` + d.name + `"?`
					if d.guard != "" {
						var all FieldErrors
						if !asFieldErrors(err, &all) || len(all) != 1 || all[0].Field != tc.field ||
							!strings.Contains(all[0].Msg, want) || !strings.Contains(all[0].Msg, d.guard) {
							t.Fatalf("%s: error %v, want one on %s saying %s and %q", tc.meta, err, tc.field, want, d.guard)
						}
						return
					}
					if err != nil {
						t.Fatalf("%s: %v, want a warning", tc.meta, err)
					}
					if w := strings.Join(m.Warnings, "\n"); !strings.Contains(w, want) || !strings.Contains(w, quote(tc.field)) {
						t.Errorf("%s: warnings %q, want one on %s saying %s", tc.meta, m.Warnings, tc.field, want)
					}
				})
			}
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestREADMEDocumentsTheFields: docs/meta-format.md lists every declared field, and
// its registry decisions name exactly the guarded keys.
func TestREADMEDocumentsTheFields(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "meta-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	code := regexp.MustCompile("`([A-Za-z]+)`")
	between := func(from, to string) []string {
		i := strings.Index(readme, from)
		if i < 0 {
			t.Fatalf("docs/meta-format.md lacks %q", from)
		}
		rest := readme[i+len(from):]
		j := strings.Index(rest, to)
		if j < 0 {
			t.Fatalf("docs/meta-format.md: no %q after %q", to, from)
		}
		var names []string
		for _, m := range code.FindAllStringSubmatch(rest[:j], -1) {
			names = append(names, m[1])
		}
		sort.Strings(names)
		return names
	}

	listed := between("Fields: ", "Pass-through fields")
	for _, d := range metaFields {
		if _, ok := slices.BinarySearch(listed, d.name); !ok {
			t.Errorf("docs/meta-format.md's Fields: do not list %q", d.name)
		}
	}

	documented := between("A near miss of a field that changes what runs or how it is confined (", ")")
	var declared []string
	for k := range guarded {
		declared = append(declared, k)
	}
	sort.Strings(declared)
	if !slices.Equal(documented, declared) {
		t.Errorf("docs/meta-format.md says a near miss of %q is an error; the guarded keys are %q", documented, declared)
	}
}
