package registry

// publishLocked builds the catalog from r.results and sends the change of
// every name changed since the last publish.
func (r *Registry) publishLocked() {
	changed := r.dirty
	r.dirty = map[string]bool{}
	prev := r.cur.Load()
	var tools []*Tool
	var hidden []Hidden
	var problems []Problem
	var shadows []Shadow
	for _, res := range r.results {
		if res.tool != nil {
			tools = append(tools, res.tool)
		}
		if res.hidden != nil {
			hidden = append(hidden, *res.hidden)
		}
		problems = append(problems, res.problems...)
		shadows = append(shadows, res.shadows...)
	}
	for _, p := range r.provided {
		tools = append(tools, p.tools...)
		hidden = append(hidden, p.hidden...)
		problems = append(problems, p.problems...)
	}
	r.rev++
	cat := newCatalog(r.rev, r.opts.Dirs, tools, hidden, problems, shadows)
	r.cur.Store(cat)
	ch := Change{Catalog: cat}
	for n := range changed {
		t, ok := cat.Get(n)
		old, had := prev.Get(n)
		switch {
		case ok && (!had || old.Hash != t.Hash):
			ch.Upserted = append(ch.Upserted, n)
		case !ok && had:
			ch.Removed = append(ch.Removed, n)
		}
	}
	r.log.Debug("catalog updated", "revision", cat.Revision, "tools", len(tools), "upserted", len(ch.Upserted),
		"removed", len(ch.Removed), "problems", len(problems))
	r.broadcast(ch)
}
