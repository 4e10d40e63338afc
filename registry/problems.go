package registry

import (
	"errors"
	"io/fs"
)

// problemsOf turns err into one Problem per FieldError it holds, with the
// line of the field's key filled in from m when the error lacks one.
func problemsOf(name, file string, err error, m *Meta) []Problem {
	var all FieldErrors
	var one *FieldError
	switch {
	case errors.As(err, &all):
	case errors.As(err, &one):
		all = FieldErrors{one}
	default:
		return []Problem{{Name: name, File: file, Msg: err.Error()}}
	}
	out := make([]Problem, 0, len(all))
	for _, fe := range all {
		line := fe.Line
		if line == 0 && fe.Field != "" && m != nil {
			line = m.Line(fe.Field)
		}
		out = append(out, Problem{Name: name, File: file, Field: fe.Field, Line: line, Msg: fe.Msg})
	}
	return out
}

// pathErrMsg is err without the path (a Problem names the file already).
func pathErrMsg(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
