package registry

import (
	"fmt"
	"strings"
)

// FieldError is one problem of a .meta file or an agent profile: the field
// at fault (such as "args" or "variants[1].match.os"; empty for the file as a
// whole), the 1-based line where it is (0 when unknown) and what to do.
type FieldError struct {
	Field string `json:"field,omitempty"`
	Line  int    `json:"line,omitempty"`
	Msg   string `json:"error"`
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Msg)
}

// FieldErrors is every problem found in one file, in the order of the file.
// ParseMeta and ParseProfile return one (never empty) as their error:
//
//	var all registry.FieldErrors
//	if errors.As(err, &all) { for _, fe := range all { ... } }
//
// errors.As with a *FieldError target finds the first.
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		if e.Line > 0 {
			parts[i] = fmt.Sprintf("line %d: %s", e.Line, e.Error())
		} else {
			parts[i] = e.Error()
		}
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives errors.Is and errors.As every FieldError.
func (es FieldErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
