package engine

import (
	"context"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/usage"
)

// usagePoll is how often Run looks whether the usage history changed
// (other processes record into it too: serve, mcp, call).
const usagePoll = 2 * time.Second

// usageEmbedder is the embedder of the usage signal: the built-in one,
// whatever ranks the tools (local, fast, and stable, so the requests'
// vectors are cached by text).
func usageEmbedder() embed.Embedder {
	e, err := embed.Open(embed.Default, embed.Options{})
	if err != nil {
		return nil // the usage signal is then lexical only
	}
	return e
}

// uses turns the store's entries into the index's.
func uses(entries []usage.Entry) []index.Use {
	out := make([]index.Use, 0, len(entries))
	for _, e := range entries {
		out = append(out, index.Use{Request: e.Text, Tool: e.Key.Tool, Agent: e.Key.Agent,
			Count: int(e.Count), Failed: int(e.Failed), Last: e.Last})
	}
	return out
}

// loadUsage gives the index the usage history as it is now. A store that
// fails leaves the ranking without usage, with a warning: ranking never
// depends on it.
func (e *Engine) loadUsage(ctx context.Context) {
	if e.opts.Usage == nil || e.ix == nil {
		return
	}
	entries, version, err := e.opts.Usage.Snapshot(ctx)
	if err != nil {
		e.log.Warn("usage history unreadable; ranking without it", "err", err)
		return
	}
	fit, err := e.ix.SetUsage(ctx, uses(entries))
	if err != nil {
		e.log.Warn("usage history not applied; ranking without it", "err", err)
		return
	}
	e.usageVersion.Store(version)
	if fit.Entries > 0 {
		e.log.Debug("usage history in effect", "entries", fit.Entries, "weight", fit.Weight,
			"sample", fit.Sample, "recall5", fit.Recall, "recall5Without", fit.Base)
	}
}

// followUsage reloads the usage history whenever its version moves, until
// ctx ends.
func (e *Engine) followUsage(ctx context.Context) {
	t := time.NewTicker(usagePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := e.opts.Usage.Version(ctx)
		if err != nil || v == e.usageVersion.Load() {
			continue
		}
		e.loadUsage(ctx)
	}
}

// UsageFit says how the usage history in effect is weighed (zero: none).
func (e *Engine) UsageFit() index.UsageFit {
	if e.ix == nil {
		return index.UsageFit{}
	}
	return e.ix.UsageFit()
}
