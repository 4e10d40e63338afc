package registry

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// schemaPrep is one schema of a parsed file as its compile job needs it:
// checked against the bounds and hashed where the file is read (on every
// core, see prefetchLocked), so that attaching the job under the lock is a
// map lookup.
type schemaPrep struct {
	idx    int // -1: the top-level schema; else the variant's
	raw    json.RawMessage
	bounds string // why the schema is out of bounds ("" if it is not)
	key    [32]byte
}

// prepareSchema prepares one schema (the default when raw is empty).
func prepareSchema(idx int, raw json.RawMessage) schemaPrep {
	if len(raw) == 0 {
		raw = defaultArgs
	}
	p := schemaPrep{idx: idx, raw: raw, bounds: schemaBounds(raw)}
	if p.bounds == "" {
		p.key = sha256.Sum256(raw)
	}
	return p
}

// prepareSchemas prepares the top-level schema of m (the default when it
// sets none) and each variant's own.
func prepareSchemas(m *Meta) []schemaPrep {
	out := []schemaPrep{prepareSchema(-1, m.args())}
	for i, v := range m.Variants {
		if a := v.args(); a != nil {
			out = append(out, prepareSchema(i, a))
		}
	}
	return out
}

// addJobs attaches the compiles of a newly parsed file's schemas to fe
// (unless a schema is out of bounds: then that is one of fe's problems).
func (r *Registry) addJobs(fe *fileEntry, schemas []schemaPrep) {
	fe.jobs = map[int]*compileJob{}
	for _, p := range schemas {
		if p.bounds != "" {
			field := "args"
			if p.idx >= 0 {
				field = fmt.Sprintf("variants[%d].args", p.idx)
			}
			fe.errs = append(fe.errs, &FieldError{Field: field, Line: fe.meta.Line(field), Msg: p.bounds})
			continue
		}
		j, fresh := r.jobLocked(p.key, p.raw)
		if fresh {
			r.fresh[j] = true
		}
		fe.jobs[p.idx] = j
	}
	sortByLine(fe.errs)
}
