package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// uses turns the store's entries into the index's, with room for room
// more (the examples the index appends: no second copy).
func uses(entries []usage.Entry, room int) []index.Use {
	out := make([]index.Use, 0, len(entries)+room)
	for _, e := range entries {
		out = append(out, index.Use{Request: e.Text, Tool: e.Key.Tool, Principal: usage.Unit(e.Key.Principal),
			Role: roleOf(e.Key.Principal), Count: int(e.Count), Failed: int(e.Failed), First: e.First, Last: e.Last, ID: useID(e.Key)})
	}
	return out
}

// roleOf is what a principal's word is to the ranking: the owner's is
// believed, any other's earns its weight (index/usagevoice.go).
func roleOf(principal string) index.Role {
	if principal == usage.Owner {
		return index.RoleOwner
	}
	return index.RoleOther
}

// useID is the index's identity of a store entry (index.Use.ID).
func useID(k usage.Key) string {
	return k.Principal + "\x00" + k.Agent + "\x00" + k.Tool + "\x00" + k.Request
}

// examples are the catalog's example requests as usage entries, each
// tool's its author's (principal author:TOOL: they can bring their tool
// in, not push another out), and a digest of them (to tell when they
// changed).
func examples(cat *registry.Catalog) ([]index.Use, string) {
	var out []index.Use
	h := sha256.New()
	for _, t := range cat.Tools {
		for _, ex := range t.Examples {
			out = append(out, index.Use{Request: ex, Tool: t.Name, Principal: usage.PrefixAuthor + t.Name, Role: index.RoleAuthor, Count: 1})
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
	if e.follow == nil {
		if len(ex) > 0 || e.examples.Load() != nil {
			if _, err := e.ix.SetUsage(ctx, ex); err != nil {
				e.warnUsage(ctx, "tool examples not applied", err)
				return
			}
			e.examples.Store(&digest)
		}
		return
	}
	fit, version, err := e.applyHistory(ctx, ex)
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

// applyHistory gives the index the history the follower reads, with the
// examples ex, and returns its version. The index reads of it only what
// it needs (index.Index.SetUsageSaved: what changed since the view it has,
// the view saved for it, or the history whole). A store that fails to
// read leaves the ranking with the examples only, with a warning.
func (e *Engine) applyHistory(ctx context.Context, ex []index.Use) (index.UsageFit, int64, error) {
	name, version, err := e.follow.Head(ctx)
	if err != nil {
		e.warnUsage(ctx, "usage history unreadable; ranking without it", err)
		fit, err := e.ix.SetUsage(ctx, ex)
		return fit, 0, err
	}
	var readErr error
	fit, err := e.ix.SetUsageSaved(ctx, index.History{
		Source:  name,
		Version: version,
		Extra:   ex,
		// Which entries judge each principal: the installation's secret
		// chooses them (none of its principals can read it).
		Secret: e.follow.Secret(judgingSecret),
		Load: func(ctx context.Context) ([]index.Use, error) {
			d, err := e.follow.Since(ctx, -1)
			readErr = err
			return uses(d.Changed, len(ex)), err
		},
		Since: func(ctx context.Context, v int64) ([]index.Use, []string, error) {
			d, err := e.follow.Since(ctx, v)
			ids := make([]string, len(d.Removed))
			for i, k := range d.Removed {
				ids[i] = useID(k)
			}
			return uses(d.Changed, 0), ids, err
		},
	})
	if err == nil || readErr == nil {
		return fit, version, err
	}
	e.warnUsage(ctx, "usage history unreadable; ranking without it", readErr)
	fit, err = e.ix.SetUsage(ctx, ex)
	return fit, 0, err
}

// judgingSecret is the purpose of the installation's secret that chooses
// the entries each principal of the history is judged by.
const judgingSecret = "usage judging sample"

// warnUsage warns that the usage history failed (err), unless ctx ended:
// a shutdown cancels a reload, which is no news (logged at Debug).
func (e *Engine) warnUsage(ctx context.Context, msg string, err error) {
	if ctx.Err() != nil {
		e.log.Debug(msg, "err", err)
		return
	}
	e.log.Warn(msg, "err", err)
}

// followUsage reloads the usage history whenever its version moves or
// the tools' examples change, until ctx ends: every usagePoll, and at
// once when a store shared by several hosts says another recorded
// (usage.Follower.Watch).
func (e *Engine) followUsage(ctx context.Context) {
	if e.opts.UsageLater {
		e.loadUsage(ctx)
	}
	look := func(ctx context.Context) bool {
		changed := false
		if e.follow != nil {
			_, v, err := e.follow.Head(ctx)
			changed = err == nil && v != e.usageVersion.Load()
		}
		if _, digest := examples(e.reg.Catalog()); !changed {
			old := e.examples.Load()
			changed = (old == nil && digest != emptyDigest) || (old != nil && *old != digest)
		}
		if changed {
			e.loadUsage(ctx)
		}
		return changed
	}
	if e.follow == nil {
		t := time.NewTicker(usagePoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				look(ctx)
			}
		}
	}
	e.follow.Watch(ctx, usagePoll, look)
}

// emptyDigest is the digest of no examples.
var emptyDigest = func() string { _, d := examples(&registry.Catalog{}); return d }()

// UsageFit says how the usage history in effect is weighed (zero: none).
func (e *Engine) UsageFit() index.UsageFit {
	if e.ix == nil {
		return index.UsageFit{}
	}
	return e.ix.UsageFit()
}

// UsagePrincipals says how the ranking hears each principal of the
// history in effect (with the tools' authors): its belief and voice
// (nil: no history).
func (e *Engine) UsagePrincipals() []index.PrincipalTrust {
	if e.ix == nil {
		return nil
	}
	return e.ix.UsagePrincipals()
}
