package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/registry"
)

// showSamples has a value for every .meta definition field that is not its
// default: as written in the .meta, what `toolsrv show` prints for it (in
// the field's section), and the JSON `show --json` gives it ("" when it is
// written the same). A new field needs one here.
var showSamples = map[string]struct{ meta, text, json string }{
	"description":   {`"Shows every field."`, "Shows every field.", ""},
	"prompt":        {`"## every\nfield"`, "  ## every\n  field", ""},
	"keywords":      {`["kw one","kw two"]`, "kw one, kw two", ""},
	"examples":      {`["ex one","ex two"]`, "ex one | ex two", ""},
	"args":          {`{"type":"object","properties":{"argmarker":{"type":"string"}}}`, `"argmarker"`, ""},
	"tier":          {`"cold"`, "cold", ""},
	"cmd":           {`"echo cmd-marker"`, "shell: /bin/sh -c 'echo cmd-marker'", ""},
	"readOnly":      {`true`, "readOnly", ""},
	"bypass":        {`true`, "bypass", ""},
	"network":       {`true`, "network", ""},
	"hostProcesses": {`true`, "hostProcesses", ""},
	"ptrace":        {`true`, "ptrace", ""},
	"concurrency":   {`"exclusive"`, "exclusive", ""},
	"timeout":       {`"90s"`, "1m30s", `90000000000`},
	"limits":        {`{"processes":64,"memory":"512MiB"}`, "processes 64, memory 512MiB", `{"processes":64,"memory":536870912}`},
	"scope":         {`"scope-marker"`, "scope-marker", ""},
	"outputFormat":  {`"format-marker"`, "format-marker (outputFormat)", ""},
	"resetsCounter": {`true`, "resetsCounter", ""},
}

// section is the part of show's output for label: its line and the
// indented lines after it.
func section(out, label string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, label+":"):
			in = true
		case in && !strings.HasPrefix(l, " "):
			return b.String()
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestShowPrintsEveryField: a tool that sets every declared field shows
// each in `toolsrv show` (under the field's label) and in `show --json`.
func TestShowPrintsEveryField(t *testing.T) {
	declared := (&registry.Tool{}).Shown()
	meta := map[string]json.RawMessage{}
	for _, f := range declared {
		s, ok := showSamples[f.Field]
		if !ok {
			t.Errorf("field %q has no sample in showSamples: add one", f.Field)
			continue
		}
		meta[f.Field] = json.RawMessage(s.meta)
	}
	for name := range showSamples {
		if _, ok := meta[name]; !ok {
			t.Errorf("showSamples has %q, which is not a declared field", name)
		}
	}
	data, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "every.meta"), data, 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errs := runCLI(t, "show", "--tools", dir, "every")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	code, js, errs := runCLI(t, "show", "--json", "--tools", dir, "every")
	if code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, errs)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("show --json: %v\n%s", err, js)
	}
	for _, f := range declared {
		s, ok := showSamples[f.Field]
		if !ok {
			continue
		}
		if sec := section(out, f.Label); f.Label == "" || !strings.Contains(sec, s.text) {
			t.Errorf("show prints %q as %q, want %q under %q:\n%s", f.Field, sec, s.text, f.Label+":", out)
		}
		want := s.json
		if want == "" {
			want = s.meta
		}
		if g, w := compactShown(t, got[f.Field]), compactShown(t, []byte(want)); g != w {
			t.Errorf("show --json has %q: %s, want %s", f.Field, g, w)
		}
	}
}

func compactShown(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		return "(absent)"
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return c.String()
}
