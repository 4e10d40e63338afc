package exec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// Prepared helpers (Options.Prepare): a resident server keeps, for each
// tool and policy it has called, one sandbox helper prepared for that
// tool's next call (sandbox.Prepare): started, in the call's namespaces,
// with the call's mounts (its own /proc, the temporary directory's
// tmpfs, the protected paths), limits, dropped capabilities and the
// confined thread that will start the tool, all made before the call
// comes. The call then sends the environment (Go) and the tool starts at
// once; a new helper is prepared in the background meanwhile.
//
// Nothing is shared between calls: each prepared helper serves one call
// and ends with it, with its own namespaces and its own temporary
// directory, as a helper started for the call would. What is kept is the
// preparation only, and only for the very call it was made for:
//
//   - the key is the whole policy (but the temporary directory, the
//     helper's own), the command, the namespaces and the helper binary: a
//     change of the tool's definition, its limits, the session's working
//     directory or the paths kept read-only in it, the operator's grants,
//     is another key, and the old preparation is never used;
//   - Landlock's rules hold the inodes the paths had when the helper was
//     prepared, and the mounts were made over them: at the call, every
//     path of the policy but the system ones must still be the same file
//     (device and inode) or the preparation is thrown away (a file made in
//     place of a removed one may reuse its inode: the call then fails
//     closed, Landlock's rule holding the removed one); its temporary
//     directory must be as made and empty (tmpIntact);
//   - a prepared helper runs nothing and holds nothing of a call: its
//     environment is empty, its descriptors are its standard streams (new
//     pipes), the status and order pipes; it is not dumpable and its
//     capabilities are dropped (see sandbox.HelperMain); where calls have
//     namespaces it is in a PID namespace of its own (a tool that sees the
//     host's processes cannot signal or trace it: Landlock's scoping,
//     which hostProcesses needs). Without namespaces helpers are prepared
//     only from Landlock ABI 6, whose scoping keeps a confined tool from
//     signalling them; below it each call starts its own (preparable);
//   - an unused one is discarded after preparedIdle, the least recently
//     used beyond preparedMax, all of them at Close; a server that dies
//     takes them along (their parent-death signal, and their order pipe
//     closing).
//
// Only sandboxed calls are prepared (an approved bypass asks the broker at
// each call, and runs unconfined).

// preparedMax is how many prepared helpers a runner keeps at most.
const preparedMax = 8

// preparedIdle is how long a prepared helper waits for its call.
const preparedIdle = 2 * time.Minute

// prepSpec is what a helper is prepared for: everything a call's helper is
// started with but the environment and the temporary directory.
type prepSpec struct {
	key  string
	argv []string
	dir  string
	pol  sandbox.Policy // TempDir empty
	nsc  sandbox.Namespaces
}

// preparedHelper is a helper prepared (or being prepared) for a spec.
type preparedHelper struct {
	spec  prepSpec
	h     *sandbox.Helper
	tmp   string
	tmpID dirStamp      // tmp as it was made (tmpIntact)
	files []fileID      // the policy's paths as they were (fingerprint)
	ready chan struct{} // closed when prepared or failed
	err   error         // why it failed (set before ready closes)
	used  time.Time
	idle  *time.Timer // set and stopped under preparer.mu
}

// preparer keeps a runner's prepared helpers.
type preparer struct {
	mu     sync.Mutex
	byKey  map[string]*preparedHelper
	closed bool
	idle   time.Duration
	// used counts the calls that ran on a prepared helper.
	used atomic.Int64
	// removing are the calls' temporary directories being removed.
	removing sync.WaitGroup
}

func newPreparer(idle time.Duration) *preparer {
	if idle <= 0 {
		idle = preparedIdle
	}
	return &preparer{byKey: map[string]*preparedHelper{}, idle: idle}
}

// callSpec is the spec of a call's helper: pol is its policy (the
// temporary directory unset), ns and host as for forkHelper.
func (r *Runner) callSpec(argv []string, dir string, pol sandbox.Policy, ns, host bool) prepSpec {
	var nsc sandbox.Namespaces
	if ns {
		nsc = r.iso.apply(&pol, host)
	}
	pol.TempDir = ""
	pj, _ := json.Marshal(pol)
	var key strings.Builder
	key.WriteString(r.opts.SelfExe)
	key.WriteByte(0)
	kj, _ := json.Marshal(struct {
		NS   sandbox.Namespaces
		Argv []string
		Dir  string
	}{nsc, argv, dir})
	key.Write(kj)
	key.WriteByte(0)
	key.Write(pj)
	return prepSpec{key: key.String(), argv: argv, dir: dir, pol: pol, nsc: nsc}
}

// take returns the helper prepared for spec, ready and with every path of
// its policy as it was, or nil; one still being prepared is waited for
// (until ctx ends). A preparation that no longer fits is thrown away.
func (r *Runner) takePrepared(ctx context.Context, spec prepSpec) *preparedHelper {
	p := r.prep
	if p == nil {
		return nil
	}
	if r.opts.prepareEvery {
		r.prepareNext(spec)
	}
	p.mu.Lock()
	ph := p.byKey[spec.key]
	if ph != nil {
		delete(p.byKey, spec.key)
		if ph.idle != nil {
			ph.idle.Stop()
		}
	}
	p.mu.Unlock()
	if ph == nil {
		return nil
	}
	select {
	case <-ph.ready:
	case <-ctx.Done():
		r.discardPrepared(ph)
		return nil
	}
	if ph.err != nil {
		r.log.Debug("the prepared sandbox helper failed; starting one for the call", "err", ph.err)
		r.discardPrepared(ph)
		return nil
	}
	if !slices.Equal(ph.files, policyFiles(spec.pol)) || !tmpIntact(ph.tmp, ph.tmpID) || !ph.h.Alive() {
		r.log.Debug("the prepared sandbox helper no longer fits its call (a path changed, its temporary directory is not as made, or it ended); starting one for the call")
		r.discardPrepared(ph)
		return nil
	}
	p.used.Add(1)
	return ph
}

// prepareNext prepares, in the background, a helper for the next call of
// spec, unless one is kept or being prepared for it already.
func (r *Runner) prepareNext(spec prepSpec) {
	p := r.prep
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed || p.byKey[spec.key] != nil {
		p.mu.Unlock()
		return
	}
	ph := &preparedHelper{spec: spec, ready: make(chan struct{}), used: time.Now()}
	p.byKey[spec.key] = ph
	var evict []*preparedHelper
	for len(p.byKey) > preparedMax {
		var old *preparedHelper
		for _, x := range p.byKey {
			if x != ph && (old == nil || x.used.Before(old.used)) {
				old = x
			}
		}
		delete(p.byKey, old.spec.key)
		evict = append(evict, old)
	}
	p.mu.Unlock()
	for _, x := range evict {
		go func() { <-x.ready; r.discardPrepared(x) }()
	}
	go r.prepare(ph)
}

// prepare starts ph's helper and waits until it is ready.
func (r *Runner) prepare(ph *preparedHelper) {
	defer close(ph.ready)
	fail := func(err error) {
		ph.err = err
		if ph.tmp != "" {
			os.RemoveAll(ph.tmp)
			ph.tmp = ""
		}
	}
	tmp, err := r.temp.make()
	if err != nil {
		fail(err)
		return
	}
	ph.tmp = tmp
	ph.tmpID = stampOf(tmp)
	pol := ph.spec.pol
	pol.TempDir = tmp
	pj, err := json.Marshal(pol)
	if err != nil {
		fail(err)
		return
	}
	ph.files = policyFiles(ph.spec.pol)
	h, err := sandbox.Prepare(r.opts.SelfExe, ph.spec.nsc, sandbox.Order{Policy: pj, Argv: ph.spec.argv, Dir: ph.spec.dir})
	if err != nil {
		fail(err)
		return
	}
	ph.h = h
	if err := h.Ready(); err != nil {
		h.Discard()
		ph.h = nil
		fail(err)
		return
	}
	// The paths as the helper found them: a path swapped while it was
	// being prepared (its rules may hold either file) is not used.
	if !slices.Equal(ph.files, policyFiles(ph.spec.pol)) {
		h.Discard()
		ph.h = nil
		fail(errors.New("a path of the policy changed while the helper was prepared"))
		return
	}
	// The idle timer is set under the lock it is stopped under, and only
	// while ph is kept: one taken meanwhile needs none.
	p := r.prep
	p.mu.Lock()
	if p.byKey[ph.spec.key] == ph {
		ph.idle = time.AfterFunc(p.idle, func() { r.dropPrepared(ph) })
	}
	p.mu.Unlock()
}

// dropPrepared discards ph if it is still kept (unused).
func (r *Runner) dropPrepared(ph *preparedHelper) {
	p := r.prep
	p.mu.Lock()
	kept := p.byKey[ph.spec.key] == ph
	if kept {
		delete(p.byKey, ph.spec.key)
	}
	p.mu.Unlock()
	if kept {
		r.discardPrepared(ph)
	}
}

// discardPrepared ends a prepared helper no call took (once it is
// ready) and removes its temporary directory.
func (r *Runner) discardPrepared(ph *preparedHelper) {
	<-ph.ready
	if ph.h != nil {
		ph.h.Discard()
	}
	if ph.tmp != "" {
		os.RemoveAll(ph.tmp)
	}
}

// removeTemp removes a call's temporary directory: a resident runner's
// (Options.Prepare) in the background, so that the call's answer does not
// wait for it (the directory is a mount point in the namespace of a helper
// that is still exiting, and its removal took a quarter of a prepared
// call); Close waits for those.
func (r *Runner) removeTemp(dir string) {
	p := r.prep
	if p == nil {
		os.RemoveAll(dir)
		return
	}
	// After Close (which waits on removing) a call that ends removes its
	// directory itself: an Add racing with that Wait is not allowed.
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.removing.Add(1)
	}
	p.mu.Unlock()
	if closed {
		os.RemoveAll(dir)
		return
	}
	go func() {
		defer p.removing.Done()
		os.RemoveAll(dir)
	}()
}

// Close discards the helpers prepared for calls that did not come
// (Options.Prepare) and waits until the temporary directories of the calls
// that ended are removed. Calls under way are not affected; later calls
// start their helpers themselves.
func (r *Runner) Close() {
	if r == nil || r.prep == nil {
		return
	}
	p := r.prep
	p.mu.Lock()
	p.closed = true
	all := make([]*preparedHelper, 0, len(p.byKey))
	for k, ph := range p.byKey {
		delete(p.byKey, k)
		if ph.idle != nil {
			ph.idle.Stop()
		}
		all = append(all, ph)
	}
	p.mu.Unlock()
	for _, ph := range all {
		r.discardPrepared(ph)
	}
	p.removing.Wait()
}
