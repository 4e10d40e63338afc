package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// safetyNet bounds a test's wait for an event (a change applied, a file
// written): the test waits for the event itself, and this only ends a
// wait that would never end. Generous, because a loaded machine (load ~170
// on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

// compileSchemas compiles m's top-level and variant schemas synchronously,
// as the registry's compile jobs do, and returns the first problem as a
// *FieldError naming the field.
func compileSchemas(m *Meta) (map[int]*compileJob, error) {
	out := map[int]*compileJob{}
	one := func(idx int, raw json.RawMessage) error {
		field := "args"
		if idx >= 0 {
			field = fmt.Sprintf("variants[%d].args", idx)
		}
		if raw == nil {
			raw = defaultArgs
		}
		if why := schemaBounds(raw); why != "" {
			return &FieldError{Field: field, Msg: why}
		}
		s, err := compileSchema(raw)
		if err != nil {
			return &FieldError{Field: field, Msg: err.Error()}
		}
		j := newCompileJob(raw)
		j.settle(s, "")
		out[idx] = j
		return nil
	}
	if err := one(-1, m.args()); err != nil {
		return nil, err
	}
	for i, v := range m.Variants {
		if a := v.args(); a != nil {
			if err := one(i, a); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// within runs f and fails the test if it has not returned after 30 s (a
// deadlock guard, not a timing assertion).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still blocked after 30 s", what)
	}
}

// problemsOfFile returns the catalog's problems for file.
func problemsOfFile(c *Catalog, file string) []Problem {
	var out []Problem
	for _, p := range c.Problems {
		if p.File == file {
			out = append(out, p)
		}
	}
	return out
}

// asFieldErrors is errors.As for a FieldErrors target.
func asFieldErrors(err error, all *FieldErrors) bool { return errors.As(err, all) }
