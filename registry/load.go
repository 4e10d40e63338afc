package registry

import "context"

// Load scans every directory from scratch (reusing parses of unchanged files)
// and publishes the result. A missing directory is not an error: it is simply
// empty until it appears.
//
// Load returns once the schemas it had to compile are compiled (or have
// missed Options.CompileTimeout) and the catalog shows them. It does not wait
// for a compile that another update (a watch event, a concurrent Load)
// started: that tool keeps its previous state until its compile ends.
func (r *Registry) Load(ctx context.Context) error {
	r.mu.Lock()
	r.openSnapshotLocked()
	p, err := r.rescanLocked(ctx, true)
	r.mu.Unlock()
	defer r.saveSnapshot()
	if err != nil {
		return err
	}
	if len(p.jobs) > 0 {
		select {
		case <-r.finish(p):
		case <-ctx.Done():
			return ctx.Err() // the compiles still finish and are published
		}
	}
	return nil
}

// Preload starts reading the catalog snapshot (Options.CatalogCache)
// that the first Load uses, so that it is read while the caller starts
// other work; Load starts it itself otherwise. Calling it first, before
// starting other goroutines, gives the read a core of its own at once.
func (r *Registry) Preload() {
	r.mu.Lock()
	r.openSnapshotLocked()
	r.mu.Unlock()
}

// pending is what an update left waiting for schema compiles it started:
// the jobs, and the tools that wait for them.
type pending struct {
	jobs  []*compileJob
	names map[string]bool
	// listing is the update's directory listing (see updateLocked), reused
	// when the names are resolved again.
	listing map[string]map[string]bool
}

// finish runs p's compiles off the lock and then re-resolves the tools that
// waited for them (and any tool another update found waiting for them). The
// channel is closed when the catalog shows the outcome.
func (r *Registry) finish(p pending) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(p.jobs) > 0 {
			runJobs(p.jobs, r.compile, r.opts.CompileTimeout)
			r.mu.Lock()
			r.known.add(p.jobs)
			names := p.names
			for _, j := range p.jobs {
				for n := range j.waiters {
					names[n] = true
				}
				clear(j.waiters)
			}
			p = r.updateLocked(names, p.listing, false)
			r.mu.Unlock()
		}
		r.saveKnown()
	}()
	return done
}

// saveKnown writes the known-schemas cache if schemas were added to it. A
// cache that cannot be written is logged: it only costs the next start
// time.
func (r *Registry) saveKnown() {
	r.mu.Lock()
	data := r.known.snapshot()
	r.mu.Unlock()
	if data == nil {
		return
	}
	if err := writeKnownSchemas(r.opts.SchemaCache, data); err != nil {
		r.log.Warn("cannot write the known-schemas cache", "file", r.opts.SchemaCache, "err", err)
	}
}
