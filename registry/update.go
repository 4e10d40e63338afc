package registry

import (
	"github.com/toolsrv/toolsrv/internal/parallel"
)

// updateLocked re-resolves the given names and publishes a new catalog if
// anything changed. listing, when not nil, holds the entries of directories
// just read. A name whose file waits for a schema compile keeps its previous
// state; the compiles this update created are returned for the caller to run
// (see finish), and when deferPublish is set and there are any, publishing is
// left to the caller too.
func (r *Registry) updateLocked(names map[string]bool, listing map[string]map[string]bool, deferPublish bool) pending {
	p := pending{names: map[string]bool{}, listing: listing}
	h := newMemoHost(r.opts.Host, listing)
	r.prefetchLocked(names)
	defer func() { r.fetched = nil }()
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	for i, o := range r.resolveAllLocked(list, h) {
		n, res, waits := list[i], o.res, o.waits
		if len(waits) > 0 {
			for _, j := range waits {
				if r.fresh[j] {
					p.names[n] = true
				} else {
					j.waiters[n] = true // its owner re-resolves n
				}
			}
			continue
		}
		old := r.results[n]
		if res == nil {
			if old != nil {
				delete(r.results, n)
				r.dirty[n] = true
			}
			continue
		}
		if old == nil || old.fp != res.fp {
			r.results[n] = res
			r.dirty[n] = true
		}
	}
	for j := range r.fresh {
		p.jobs = append(p.jobs, j)
	}
	r.fresh = map[*compileJob]bool{}
	if len(r.dirty) > 0 && !(deferPublish && len(p.jobs) > 0) {
		r.publishLocked()
	}
	return p
}

// resolution is what one name resolves to (see resolveName).
type resolution struct {
	res   *result
	waits []*compileJob
}

// resolveAllLocked resolves names. When the update read its files ahead
// (prefetchLocked), they are resolved on every core: resolving then only
// reads the registry (the update holds its lock) and asks the Host through
// h. Otherwise one by one (a file read on the way is stored).
func (r *Registry) resolveAllLocked(names []string, h *memoHost) []resolution {
	out := make([]resolution, len(names))
	resolve := func(i int) { out[i].res, out[i].waits = r.resolveName(names[i], h) }
	if r.fetched == nil {
		for i := range names {
			resolve(i)
		}
		return out
	}
	parallel.Each(len(names), resolve)
	return out
}
