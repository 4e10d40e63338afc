package registry

import (
	"fmt"
	"strings"
)

// resolveName decides what name means across the directories. If a file of
// the name waits for a schema compile, it returns those jobs instead.
func (r *Registry) resolveName(name string, h Host) (*result, []*compileJob) {
	res := &result{}
	var fp strings.Builder
	if err := ValidName(name); err != nil {
		for i, dir := range r.opts.Dirs {
			if r.present[i][name] {
				p := inDir(dir, name+".meta")
				res.problems = append(res.problems, Problem{Name: name, File: p, Msg: "bad tool name: " + err.Error() + "; rename the file"})
				fmt.Fprintf(&fp, "P%s\x00", p)
			}
		}
		if len(res.problems) == 0 {
			return nil, nil
		}
		res.fp = fp.String()
		return res, nil
	}
	found := false
	for i, dir := range r.opts.Dirs {
		if !r.present[i][name] {
			continue
		}
		found = true
		p := inDir(dir, name+".meta")
		fe := r.readFile(p)
		if fe == nil { // vanished between listing and reading
			continue
		}
		if waits := fe.unsettled(); len(waits) > 0 {
			return nil, waits
		}
		schemas, errs := fe.outcome()
		if len(errs) > 0 {
			res.problems = append(res.problems, problemsOf(name, p, errs, fe.meta)...)
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, errs)
			continue
		}
		t, hiddenWhy, err := resolve(name, p, dir, fe.sum, fe.meta, schemas, h)
		switch {
		case err != nil:
			res.problems = append(res.problems, problemsOf(name, p, err, fe.meta)...)
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, err)
		case t == nil:
			if res.tool == nil && res.hidden == nil {
				res.hidden = &Hidden{Name: name, File: p, Reason: hiddenWhy}
				fmt.Fprintf(&fp, "H%s\x00%s\x00", p, hiddenWhy)
			}
		case res.tool == nil:
			res.tool = t
			res.hidden = nil
			fp.WriteString("T" + t.Hash + "\x00")
		default:
			res.shadows = append(res.shadows, Shadow{Name: name, File: p, ShadowedBy: res.tool.File})
			fmt.Fprintf(&fp, "S%s\x00", p)
		}
	}
	if !found {
		return nil, nil
	}
	if res.tool != nil {
		res.hidden = nil
	}
	res.fp = fp.String()
	return res, nil
}
