package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// An Overlay is one session's own catalog: the engine's tools plus the
// .meta definitions sent to that session (over 9P, typically from another
// machine), each resolved against this engine's host as a file in a tools
// directory would be (registry.ResolveSent). A sent tool wins over the
// engine's tool of the same name within the session, and the engine's is
// reported as shadowed (registry.WithSent). Ranking in the session uses an
// index of its own catalog, made at the first sent definition from the
// engine's index cache (so only the sent tools are embedded) and kept in
// step with the engine's catalog; calls go through Engine.CallTool as any
// tool's. Other sessions, and the engine's own catalog, never see the sent
// tools. Safe for concurrent use; Close releases the index.
type Overlay struct {
	e       *Engine
	session string

	// upd serialises changes (sends, withdrawals, the engine's catalog
	// changes) and the session index's updates; mu guards the fields
	// below and is never held while the index embeds.
	upd     sync.Mutex
	mu      sync.Mutex
	sent    map[string]sentDef
	sentRev uint64 // counts changes of sent
	cat     *registry.Catalog
	host    *registry.Catalog // what cat was made from
	ix      *index.Index      // nil until the first definition (or without an index)
	ixErr   error             // why the session index could not be built
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
}

type sentDef struct {
	data []byte
	res  registry.Sent
}

// NewOverlay returns session's overlay, with nothing sent yet: its catalog
// is the engine's.
func (e *Engine) NewOverlay(session string) *Overlay {
	return &Overlay{e: e, session: session, sent: map[string]sentDef{}}
}

// SentFile is where a definition sent to a session is said to come from:
// its tool's File, its problems' File.
func SentFile(session, name string) string { return "session/" + session + "/meta/" + name }

// Send resolves data as the definition of tool name in this session,
// replacing any definition sent before under that name, and returns what
// it amounts to on this host (a tool, hidden, or problems). The definition
// is kept either way, as a file with problems stays in a tools directory:
// listed, its problems reported, until it is replaced or withdrawn. The
// error is ctx's, or a closed overlay's.
func (o *Overlay) Send(ctx context.Context, name string, data []byte) (registry.Sent, error) {
	res, err := o.e.reg.ResolveSent(ctx, name, SentFile(o.session, name), data)
	if err != nil {
		return res, err
	}
	o.upd.Lock()
	defer o.upd.Unlock()
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return res, fmt.Errorf("session %s has ended", o.session)
	}
	o.sent[name] = sentDef{data: append([]byte(nil), data...), res: res}
	o.sentRev++
	o.mu.Unlock()
	o.changed(ctx, []string{name})
	return res, nil
}

// Withdraw removes the definition sent as name; false if there is none.
func (o *Overlay) Withdraw(ctx context.Context, name string) bool {
	o.upd.Lock()
	defer o.upd.Unlock()
	o.mu.Lock()
	if _, ok := o.sent[name]; !ok || o.closed {
		o.mu.Unlock()
		return false
	}
	delete(o.sent, name)
	o.sentRev++
	o.mu.Unlock()
	o.changed(ctx, []string{name})
	return true
}

// Definition is the document sent as name, as it was sent.
func (o *Overlay) Definition(name string) ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.sent[name]
	return d.data, ok
}

// Sent is what every sent definition amounts to here, by name.
func (o *Overlay) Sent() []registry.Sent {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]registry.Sent, 0, len(o.sent))
	for _, d := range o.sent {
		out = append(out, d.res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Catalog is the session's catalog: the engine's current catalog with the
// sent tools. Its revision moves whenever the engine's does or a
// definition is sent or withdrawn.
func (o *Overlay) Catalog() *registry.Catalog {
	host := o.e.reg.Catalog()
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.catalogLocked(host)
}

func (o *Overlay) catalogLocked(host *registry.Catalog) *registry.Catalog {
	if o.cat != nil && o.host == host {
		return o.cat
	}
	if len(o.sent) == 0 && o.sentRev == 0 {
		return host
	}
	sent := make([]registry.Sent, 0, len(o.sent))
	for _, d := range o.sent {
		sent = append(sent, d.res)
	}
	o.cat = registry.WithSent(host, sent, host.Revision+o.sentRev)
	o.host = host
	return o.cat
}

// Rank ranks the session's catalog for q, as Engine.Rank ranks the
// engine's.
func (o *Overlay) Rank(ctx context.Context, q Request) (Answer, error) {
	host := o.e.reg.Catalog()
	o.mu.Lock()
	ix, cat, ixErr := o.ix, o.catalogLocked(host), o.ixErr
	o.mu.Unlock()
	if ix == nil {
		if cat != host && o.e.ix != nil {
			// The session index could not be built: the engine's ranks,
			// without the sent tools, and says so.
			a, err := o.e.Rank(ctx, q)
			a.Ranking.Degraded = true
			a.Ranking.Reason = fmt.Sprintf("the session's sent tools are not ranked: %v", ixErr)
			a.Degraded, a.DegradedReason = true, a.Ranking.Reason
			return a, err
		}
		return o.e.Rank(ctx, q)
	}
	if o.e.ix != nil {
		ix.ShareUsage(o.e.ix)
	}
	a, err := o.e.rank(ctx, ix, cat, q)
	if err != nil {
		return a, err
	}
	o.e.answers.remember(&a, q)
	return a, nil
}

// Call runs c.Tool of the session's catalog (sent tools included), as
// Engine.Call runs the engine's.
func (o *Overlay) Call(ctx context.Context, c CallRequest) (*exec.Result, error) {
	t, err := o.Catalog().Lookup(c.Tool)
	if err != nil {
		return nil, err
	}
	return o.e.callTool(ctx, t, c)
}

// changed brings the session's catalog and index up to date after the
// sent definitions of names changed. The caller holds upd.
func (o *Overlay) changed(ctx context.Context, names []string) {
	o.mu.Lock()
	o.cat = nil
	cat, ix := o.catalogLocked(o.e.reg.Catalog()), o.ix
	o.mu.Unlock()
	switch {
	case o.e.ix == nil:
	case ix == nil:
		o.startIndex(ctx, cat)
	default:
		if err := ix.Update(ctx, registry.Change{Catalog: cat, Upserted: names}); err != nil {
			o.e.log.Warn("session index: sent tools not embedded; they rank lexically until the next change", "session", o.session, "err", err)
		}
	}
}

// startIndex builds the session's index over cat from the engine's index
// cache, and starts following the engine's catalog. The caller holds upd.
func (o *Overlay) startIndex(ctx context.Context, cat *registry.Catalog) {
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	changes := o.e.reg.Subscribe(life) // before Sync: nothing is missed
	io := o.e.indexOptions()
	io.ReadOnlyCache = true
	ix := index.New(o.e.emb, io)
	if err := ix.Sync(ctx, cat); err != nil && ix.Stats().Tools == 0 && len(cat.Tools) > 0 {
		stop()
		o.mu.Lock()
		o.ixErr = err
		o.mu.Unlock()
		o.e.log.Warn("session index could not be built; the session ranks without its sent tools", "session", o.session, "err", err)
		return
	}
	o.mu.Lock()
	if o.closed { // the session ended meanwhile
		o.mu.Unlock()
		stop()
		return
	}
	o.ix, o.stop = ix, stop
	o.wg.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.wg.Done()
		for ch := range changes {
			names := append(append([]string(nil), ch.Upserted...), ch.Removed...)
			o.upd.Lock()
			o.mu.Lock()
			closed, cat := o.closed, o.catalogLocked(o.e.reg.Catalog())
			o.mu.Unlock()
			if !closed {
				if err := ix.Update(life, registry.Change{Catalog: cat, Upserted: names}); err != nil && life.Err() == nil {
					o.e.log.Warn("session index: update incomplete", "session", o.session, "err", err)
				}
			}
			o.upd.Unlock()
		}
	}()
}

// Close ends the overlay: its index is released and nothing more can be
// sent.
func (o *Overlay) Close() {
	o.mu.Lock()
	o.closed = true
	stop := o.stop
	o.ix = nil
	o.mu.Unlock()
	if stop != nil {
		stop()
	}
	o.wg.Wait()
}
