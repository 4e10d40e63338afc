package registry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const manyProblems = `{
  "description": "several problems",
  "tier": "boiling",
  "readOnly": "yes",
  "args": {"type": "strin"},
  "timeout": -3,
  "variants": [
    {"match": {"cpu": "x86"}},
    {"concurrency": "many", "args": {"properties": {"p": {"pattern": "(["}}}}
  ]
}`

// TestEveryProblemOfAFile: validate reported only the first problem of each
// file. Every field error is now reported, each with its field and line:
// from ParseMeta (as FieldErrors) and in the catalog (one Problem each).
func TestEveryProblemOfAFile(t *testing.T) {
	parseWant := []struct {
		field string
		line  int
		msg   string
	}{
		{"tier", 3, `is "boiling"`},
		{"readOnly", 4, "true or false"},
		{"timeout", 6, "positive"},
		{"variants[0].match.cpu", 8, "not a match key"},
		{"variants[1].concurrency", 9, "parallel"},
	}
	_, err := ParseMeta([]byte(manyProblems))
	var all FieldErrors
	if !errors.As(err, &all) || len(all) != len(parseWant) {
		t.Fatalf("ParseMeta error = %v, want %d FieldErrors", err, len(parseWant))
	}
	for i, w := range parseWant {
		if all[i].Field != w.field || all[i].Line != w.line || !strings.Contains(all[i].Msg, w.msg) {
			t.Errorf("problem %d = %+v, want %s line %d %q", i, all[i], w.field, w.line, w.msg)
		}
	}
	var first *FieldError
	if !errors.As(err, &first) || first != all[0] {
		t.Errorf("errors.As(*FieldError) = %v, want the first problem", first)
	}
	if !strings.Contains(err.Error(), `line 3: field "tier"`) || !strings.Contains(err.Error(), `line 9: field "variants[1].concurrency"`) {
		t.Errorf("Error() = %q, want every problem with its line", err)
	}

	// The catalog adds the schema problems, one Problem per problem.
	dir := t.TempDir()
	writeTool(t, dir, "many", manyProblems, false)
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh"}`, false)
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	catWant := []struct {
		field string
		line  int
	}{{"tier", 3}, {"readOnly", 4}, {"args", 5}, {"timeout", 6}, {"variants[0].match.cpu", 8}, {"variants[1].concurrency", 9}, {"variants[1].args", 9}}
	ps := problemsOfFile(r.Catalog(), filepath.Join(dir, "many.meta"))
	if len(ps) != len(catWant) {
		t.Fatalf("problems %v, want %d", ps, len(catWant))
	}
	for i, w := range catWant {
		if ps[i].Field != w.field || ps[i].Line != w.line || ps[i].Name != "many" {
			t.Errorf("problem %d = %+v, want %s line %d", i, ps[i], w.field, w.line)
		}
	}
	if _, ok := r.Catalog().Get("ok"); !ok {
		t.Error("ok is not served")
	}
}

// TestProblemsOfAFileAreCapped: a file cannot flood the report.
func TestProblemsOfAFileAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"description":"d"`)
	for i := range 100 {
		fmt.Fprintf(&b, `,"variants%d":1,"readonly%d":true`, i, i)
	}
	for i := range 100 {
		fmt.Fprintf(&b, `,"timeout":%d`, -i-1)
	}
	b.WriteString(`,"variants":[` + strings.Repeat(`{"tier":1},`, 99) + `{"tier":1}]}`)
	_, err := ParseMeta([]byte(b.String()))
	var all FieldErrors
	if !errors.As(err, &all) || len(all) != maxReported+1 {
		t.Fatalf("got %d problems, want %d and a count", len(all), maxReported)
	}
	if last := all[maxReported]; !strings.Contains(last.Msg, "more problems in this file") {
		t.Errorf("last problem %q, want a count of the rest", last.Msg)
	}
}
