package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/usage"
)

// usagePoll is how often Run looks whether the usage history changed
// (other processes record into it too: serve, mcp, call).
const usagePoll = 2 * time.Second

// usageEmbedder is the embedder of the usage signal: the built-in one,
// whatever ranks the tools (local, fast, and stable, so the requests'
// vectors are cached by text). It is opened at its first use: an
// installation with no history and no examples never pays for it.
func usageEmbedder() embed.Embedder { return &lazyEmbedder{} }

// lazyEmbedder opens the built-in embedder when first asked.
type lazyEmbedder struct {
	once sync.Once
	e    embed.Embedder
	err  error
}

func (l *lazyEmbedder) get() (embed.Embedder, error) {
	l.once.Do(func() { l.e, l.err = embed.Open(embed.Default, embed.Options{}) })
	return l.e, l.err
}

func (l *lazyEmbedder) ID() string {
	if e, err := l.get(); err == nil {
		return e.ID()
	}
	return "unavailable"
}

func (l *lazyEmbedder) Dim() int {
	if e, err := l.get(); err == nil {
		return e.Dim()
	}
	return 0
}

func (l *lazyEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e, err := l.get()
	if err != nil {
		return nil, err
	}
	return e.EmbedQuery(ctx, text)
}

func (l *lazyEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e, err := l.get()
	if err != nil {
		return nil, err
	}
	return e.EmbedDocuments(ctx, texts)
}

// uses turns the store's entries into the index's.
func uses(entries []usage.Entry) []index.Use {
	out := make([]index.Use, 0, len(entries))
	for _, e := range entries {
		out = append(out, index.Use{Request: e.Text, Tool: e.Key.Tool, Agent: e.Key.Agent,
			Count: int(e.Count), Failed: int(e.Failed), Last: e.Last, ID: useID(e.Key)})
	}
	return out
}

// useID is the index's identity of a store entry (index.Use.ID).
func useID(k usage.Key) string { return k.Agent + "\x00" + k.Tool + "\x00" + k.Request }

// examplesAgent is the agent the tools' examples are recorded as: their
// authors, one voice among the agents.
const examplesAgent = "(examples)"

// examples are the catalog's example requests as usage entries, and a
// digest of them (to tell when they changed).
func examples(cat *registry.Catalog) ([]index.Use, string) {
	var out []index.Use
	h := sha256.New()
	for _, t := range cat.Tools {
		for _, ex := range t.Examples {
			out = append(out, index.Use{Request: ex, Tool: t.Name, Agent: examplesAgent, Count: 1})
			fmt.Fprintf(h, "%s\x00%s\x00", t.Name, ex)
		}
	}
	return out, hex.EncodeToString(h.Sum(nil))
}

// loadUsage gives the index the usage history as it is now, with the
// tools' examples. A store that fails leaves the ranking without its
// history, with a warning: ranking never depends on it.
func (e *Engine) loadUsage(ctx context.Context) {
	if e.ix == nil {
		return
	}
	e.usageMu.Lock()
	defer e.usageMu.Unlock()
	ex, digest := examples(e.reg.Catalog())
	if e.opts.Usage == nil {
		if len(ex) > 0 || e.examples.Load() != nil {
			if _, err := e.ix.SetUsage(ctx, ex); err != nil {
				e.warnUsage(ctx, "tool examples not applied", err)
				return
			}
			e.examples.Store(&digest)
		}
		return
	}
	fit, version, err := e.setUsage(ctx, ex, digest)
	if err != nil {
		e.warnUsage(ctx, "usage history not applied; ranking without it", err)
		return
	}
	e.usageVersion.Store(version)
	e.examples.Store(&digest)
	if fit.Entries > 0 {
		e.log.Debug("usage history in effect", "entries", fit.Entries, "weight", fit.Weight,
			"sample", fit.Sample, "recall5", fit.Recall, "recall5Without", fit.Base)
	}
}

// setUsage gives the index the store's entries and the examples ex
// (whose digest is digest), and returns the history's version. The index
// brings the view it ranks with up to date with what changed since (a
// server's reload), and a store that names its history (usage.Derived)
// lets it take the view saved for it instead of reading the entries
// (rank's start). A store that fails to read leaves the ranking with the
// examples only, with a warning.
func (e *Engine) setUsage(ctx context.Context, ex []index.Use, digest string) (index.UsageFit, int64, error) {
	source, version, err := e.usageSource(ctx)
	if err != nil {
		e.warnUsage(ctx, "usage history unreadable; ranking without it", err)
		fit, err := e.ix.SetUsage(ctx, ex)
		return fit, 0, err
	}
	read := false
	var readErr error
	fit, err := e.ix.SetUsageSaved(ctx, index.History{
		Source:  source + "; examples " + digest,
		Version: version,
		Load: func(ctx context.Context) ([]index.Use, error) {
			read = true
			entries, v, err := e.usageEntries(ctx)
			if err != nil {
				readErr = err
				return nil, err
			}
			version = v
			return append(uses(entries), ex...), nil
		},
		Since: func(ctx context.Context, v int64) ([]index.Use, []string, error) {
			changed, removed, _, err := e.opts.Usage.Changes(ctx, v)
			if errors.Is(err, usage.ErrResnapshot) {
				// Nor can the entries held follow (a Forget, a new
				// store): Load reads the store whole without asking.
				e.usageHeld = nil
			}
			if err != nil {
				return nil, nil, err
			}
			ids := make([]string, len(removed))
			for i, k := range removed {
				ids[i] = useID(k)
			}
			return uses(changed), ids, nil
		},
	})
	if err == nil {
		if !read {
			// The entries held no longer follow the store's
			// changes: the next reload reads it whole.
			e.usageHeld = nil
		}
		return fit, version, nil
	}
	if readErr == nil {
		return index.UsageFit{}, 0, err
	}
	e.warnUsage(ctx, "usage history unreadable; ranking without it", readErr)
	fit, err = e.ix.SetUsage(ctx, ex)
	return fit, 0, err
}

// warnUsage warns that the usage history failed (err), unless ctx ended:
// a shutdown cancels a reload, which is no news (logged at Debug).
func (e *Engine) warnUsage(ctx context.Context, msg string, err error) {
	if ctx.Err() != nil {
		e.log.Debug(msg, "err", err)
		return
	}
	e.log.Warn(msg, "err", err)
}

// usageSource names the store's history and gives its version: the
// store's own name of it (usage.Derived, which changes when the store is
// made anew), else "store" (the engine keeps one store).
func (e *Engine) usageSource(ctx context.Context) (string, int64, error) {
	if d, ok := e.opts.Usage.(usage.Derived); ok {
		if tag, version, err := d.DerivedTag(ctx); err == nil && tag != "" {
			return tag, version, nil
		}
	}
	version, err := e.opts.Usage.Version(ctx)
	return "store", version, err
}

// heldEntries are the store's entries as last read: the snapshot's list
// as it came, until the first change makes them a map by key.
type heldEntries struct {
	list  []usage.Entry
	byKey map[usage.Key]usage.Entry
}

// usageEntries returns the store's entries now and their version (in no
// order: the index orders them when it builds its view). Once read whole,
// the engine keeps them and asks the store only what changed since (a few
// rows, not the whole history); when the store cannot tell (a Forget, a
// new store), it reads them whole again. Caller holds usageMu.
func (e *Engine) usageEntries(ctx context.Context) ([]usage.Entry, int64, error) {
	var version int64
	err := usage.ErrResnapshot
	if h := e.usageHeld; h != nil {
		var changed []usage.Entry
		var removed []usage.Key
		changed, removed, version, err = e.opts.Usage.Changes(ctx, e.usageVersion.Load())
		if err == nil {
			if h.byKey == nil { // the first change: by key from now on
				h.byKey = make(map[usage.Key]usage.Entry, len(h.list))
				for _, en := range h.list {
					h.byKey[en.Key] = en
				}
				h.list = nil
			}
			for _, k := range removed {
				delete(h.byKey, k)
			}
			for _, en := range changed {
				h.byKey[en.Key] = en
			}
		}
	}
	if errors.Is(err, usage.ErrResnapshot) {
		var entries []usage.Entry
		entries, version, err = e.opts.Usage.Snapshot(ctx)
		if err == nil {
			e.usageHeld = &heldEntries{list: entries}
		}
	}
	if err != nil {
		e.usageHeld = nil
		return nil, 0, err
	}
	h := e.usageHeld
	if h.byKey == nil {
		return h.list, version, nil // (read only, by uses)
	}
	out := make([]usage.Entry, 0, len(h.byKey))
	for _, en := range h.byKey {
		out = append(out, en)
	}
	return out, version, nil
}

// followUsage reloads the usage history whenever its version moves or
// the tools' examples change, until ctx ends.
func (e *Engine) followUsage(ctx context.Context) {
	if e.opts.UsageLater {
		e.loadUsage(ctx)
	}
	t := time.NewTicker(usagePoll)
	defer t.Stop()
	// A store shared by several hosts wakes its readers when another
	// records (usage.Notifier): the view follows within moments, not polls.
	// Woken, it reloads no sooner than the last reload took (and
	// usageWakeGap) after it ended, so that a busy fleet's stream of
	// notifications keeps the engine reloading half the time at most.
	var wake <-chan struct{}
	if n, ok := e.opts.Usage.(usage.Notifier); ok {
		wake = n.Notify()
	}
	var next time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
		}
		changed := false
		if e.opts.Usage != nil {
			v, err := e.opts.Usage.Version(ctx)
			changed = err == nil && v != e.usageVersion.Load()
		}
		if _, digest := examples(e.reg.Catalog()); !changed {
			old := e.examples.Load()
			changed = (old == nil && digest != emptyDigest) || (old != nil && *old != digest)
		}
		if changed {
			start := time.Now()
			e.loadUsage(ctx)
			next = time.Now().Add(max(usageWakeGap, time.Since(start)))
		}
	}
}

// usageWakeGap is the least time between reloads a Notifier's wakes
// bring.
const usageWakeGap = 250 * time.Millisecond

// emptyDigest is the digest of no examples.
var emptyDigest = func() string { _, d := examples(&registry.Catalog{}); return d }()

// UsageFit says how the usage history in effect is weighed (zero: none).
func (e *Engine) UsageFit() index.UsageFit {
	if e.ix == nil {
		return index.UsageFit{}
	}
	return e.ix.UsageFit()
}
