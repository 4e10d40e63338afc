package registry

import (
	"context"
	"crypto/sha256"
	"fmt"
)

// MaxSentSize is the largest .meta definition a session may be sent (a
// tools directory's files may be up to MaxMetaSize: a sent definition
// crosses a connection and is held in memory per session).
const MaxSentSize = 256 << 10

// Sent is one .meta definition sent to a session (over 9P, from another
// machine) instead of read from a tools directory, resolved against this
// registry's host exactly as a file would be: the same parser, variants
// matched against this host, commands looked up on this host's $PATH, the
// schema bounds and compile deadline. It has no directory, so nothing can
// sit beside it: an executable beside the .meta is not sent, and a command
// must be a program of this host or a shell command.
type Sent struct {
	Name string
	// File says where it was sent ("session/S/meta/NAME"): its tool's
	// File and its problems' File.
	File string
	// Exactly one of these describes it: the tool it defines here, why it
	// is hidden here (no variant matches this host), or why it is invalid.
	Tool     *Tool
	Hidden   *Hidden
	Problems []Problem
}

// ResolveSent parses and resolves data, the contents of a .meta file sent
// as tool name, against this registry's host. It waits for the schemas'
// compiles (shared with the directories' tools, bounded by
// Options.CompileTimeout); the error is ctx's, when it ends first.
func (r *Registry) ResolveSent(ctx context.Context, name, file string, data []byte) (Sent, error) {
	s := Sent{Name: name, File: file}
	bad := func(field, msg string) Sent {
		s.Problems = []Problem{{Name: name, File: file, Field: field, Msg: msg}}
		return s
	}
	if err := ValidName(name); err != nil {
		return bad("", "bad tool name: "+err.Error()), nil
	}
	if len(data) > MaxSentSize {
		return bad("", fmt.Sprintf("the definition is %d bytes; a sent definition may be at most %d (%d KiB): shorten the prompt", len(data), MaxSentSize, MaxSentSize>>10)), nil
	}
	fe := &fileEntry{sum: sha256.Sum256(data)}
	fe.meta, fe.errs = parseMeta(data)
	var fresh []*compileJob
	if fe.meta != nil {
		schemas := prepareSchemas(fe.meta)
		r.mu.Lock()
		before := len(r.fresh)
		r.addJobs(fe, schemas)
		// addJobs marks the jobs it creates for the update in progress;
		// this is no update, so they are ours to run.
		if len(r.fresh) > before {
			for _, j := range fe.jobs {
				if r.fresh[j] {
					delete(r.fresh, j)
					fresh = append(fresh, j)
				}
			}
		}
		r.mu.Unlock()
	}
	if err := r.compileOwn(ctx, fresh); err != nil {
		return s, err
	}
	for _, j := range fe.jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
	schemas, errs := fe.outcome()
	if len(errs) > 0 {
		s.Problems = problemsOf(name, file, errs, fe.meta)
		return s, nil
	}
	t, hiddenWhy, err := resolve(name, file, "", fe.sum, fe.meta, schemas, newMemoHost(r.opts.Host, nil))
	switch {
	case err != nil:
		s.Problems = problemsOf(name, file, err, fe.meta)
	case t == nil:
		s.Hidden = &Hidden{Name: name, File: file, Reason: hiddenWhy}
	default:
		s.Tool = t
	}
	return s, nil
}

// compileOwn runs compile jobs created outside an update (ResolveSent,
// Provide), then re-resolves the tools an update found waiting for them
// (see compileJob.waiters): their owner is not an update that would. It
// returns when the jobs are settled, or with ctx's error (the jobs and the
// re-resolution still finish).
func (r *Registry) compileOwn(ctx context.Context, jobs []*compileJob) error {
	if len(jobs) == 0 {
		return nil
	}
	settled := make(chan struct{})
	go func() {
		runJobs(jobs, r.compile, r.opts.CompileTimeout)
		close(settled)
		r.mu.Lock()
		r.known.add(jobs)
		names := map[string]bool{}
		for _, j := range jobs {
			for n := range j.waiters {
				names[n] = true
			}
			clear(j.waiters)
		}
		var p pending
		if len(names) > 0 {
			p = r.updateLocked(names, nil, false)
		}
		r.mu.Unlock()
		if len(p.jobs) > 0 {
			<-r.finish(p) // saves the known schemas
		} else {
			r.saveKnown()
		}
	}()
	select {
	case <-settled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WithSent is the catalog of a session that was sent definitions: host's
// tools and the sent ones, at revision rev. A sent tool that this host
// also defines wins in the session (the sender asked for it; the host's
// definition is reported as shadowed by it); a sent definition that is
// hidden or invalid here shadows nothing: the host's tool of that name,
// if any, is served, as an invalid or hidden definition in an earlier tools
// directory shadows nothing. Problems hold the host's and the sent
// definitions'.
func WithSent(host *Catalog, sent []Sent, rev uint64) *Catalog {
	byName := make(map[string]*Tool, len(host.Tools)+len(sent))
	for _, t := range host.Tools {
		byName[t.Name] = t
	}
	hidden := map[string]Hidden{}
	for _, h := range host.Hidden {
		hidden[h.Name] = h
	}
	problems := append([]Problem(nil), host.Problems...)
	shadows := append([]Shadow(nil), host.Shadowed...)
	for _, s := range sent {
		switch {
		case s.Tool != nil:
			if ht, ok := byName[s.Name]; ok {
				shadows = append(shadows, Shadow{Name: s.Name, File: ht.File, ShadowedBy: s.File})
			}
			byName[s.Name] = s.Tool
			delete(hidden, s.Name)
		case s.Hidden != nil:
			if _, ok := byName[s.Name]; !ok {
				hidden[s.Name] = *s.Hidden
			}
		}
		problems = append(problems, s.Problems...)
	}
	tools := make([]*Tool, 0, len(byName))
	for _, t := range byName {
		tools = append(tools, t)
	}
	hid := make([]Hidden, 0, len(hidden))
	for _, h := range hidden {
		hid = append(hid, h)
	}
	return newCatalog(rev, host.Dirs, tools, hid, problems, shadows)
}
