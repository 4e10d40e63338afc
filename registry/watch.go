package registry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch keeps the catalog live until ctx ends. It watches every tool
// directory and its parent (so a directory that is removed and comes back
// recovers), applies bursts of changes after a quiet period of
// Options.Debounce, rescans everything when the kernel's event queue
// overflows, and rescans periodically as a safety net (symlinked .meta files
// whose targets change produce no events).
//
// Watch calls Load itself after the watches are in place, so nothing that
// happens during start-up is missed.
func (r *Registry) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching tool directories: %w", err)
	}
	defer w.Close()
	r.addWatches(w)
	if err := r.Load(ctx); err != nil {
		return err
	}

	pending := map[string]bool{} // changed paths
	full := false
	var quiet, rescan <-chan time.Time
	var quietTimer *time.Timer
	var first time.Time
	if r.opts.Rescan > 0 {
		t := time.NewTicker(r.opts.Rescan)
		defer t.Stop()
		rescan = t.C
	}
	arm := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		d := r.opts.Debounce
		// Under a continuous stream of writes, apply at least every 5 quiet periods.
		if limit := first.Add(5 * r.opts.Debounce); now.Add(d).After(limit) {
			d = max(limit.Sub(now), 0)
		}
		if quietTimer == nil {
			quietTimer = time.NewTimer(d)
		} else {
			quietTimer.Reset(d)
		}
		quiet = quietTimer.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watcher closed")
			}
			if r.relevant(ev) {
				if r.isDirEvent(ev.Name) {
					full = true
				} else {
					pending[ev.Name] = true
				}
				arm()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watcher closed")
			}
			r.log.Warn("watch error; rescanning everything", "err", err)
			full = true
			arm()
		case <-rescan:
			full = true
			arm()
		case <-quiet:
			quiet, first = nil, time.Time{}
			if full {
				r.addWatches(w)
				r.mu.Lock()
				p, err := r.rescanLocked(ctx, false)
				r.mu.Unlock()
				if err != nil && ctx.Err() == nil {
					r.log.Warn("rescan failed", "err", err)
				}
				if len(p.jobs) > 0 {
					r.finish(p) // in the background: the watch goes on
				}
			} else {
				r.applyPaths(pending)
			}
			pending, full = map[string]bool{}, false
		}
	}
}

// addWatches (re)adds watches on every tool directory and its parent;
// directories that do not exist yet are picked up through the parent.
func (r *Registry) addWatches(w *fsnotify.Watcher) {
	have := map[string]bool{}
	for _, p := range w.WatchList() {
		have[p] = true
	}
	for _, d := range r.opts.Dirs {
		for _, p := range []string{filepath.Dir(d), d} {
			if have[p] {
				continue
			}
			if err := w.Add(p); err == nil {
				have[p] = true
			}
		}
	}
}

// relevant filters events: CHMOD alone and editor droppings are ignored;
// events in a parent directory matter only for the tool directory itself.
func (r *Registry) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		// chmod +x can turn a file into a co-located executable.
		return !strings.HasSuffix(ev.Name, ".meta") && r.inToolDir(ev.Name)
	}
	base := filepath.Base(ev.Name)
	if strings.HasPrefix(base, ".") || strings.HasSuffix(base, "~") || strings.HasSuffix(base, ".swp") ||
		strings.HasSuffix(base, ".swx") || strings.HasSuffix(base, ".tmp") {
		return false
	}
	return r.inToolDir(ev.Name) || r.isDirEvent(ev.Name)
}

func (r *Registry) inToolDir(p string) bool {
	dir := filepath.Dir(p)
	for _, d := range r.opts.Dirs {
		if d == dir {
			return true
		}
	}
	return false
}

func (r *Registry) isDirEvent(p string) bool {
	for _, d := range r.opts.Dirs {
		if d == p {
			return true
		}
	}
	return false
}

// applyPaths re-resolves the tools that the changed paths can affect: the
// tool of a changed .meta, the tool co-located with a changed executable, and
// every tool whose command is that file.
func (r *Registry) applyPaths(paths map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := map[string]bool{}
	exes := map[string]bool{} // changed files that are not .meta
	for p := range paths {
		base := filepath.Base(p)
		dir := filepath.Dir(p)
		idx := -1
		for i, d := range r.opts.Dirs {
			if d == dir {
				idx = i
				break
			}
		}
		if idx < 0 {
			continue
		}
		if n, ok := metaName(base); ok {
			if r.readFile(p) == nil {
				delete(r.present[idx], n)
			} else {
				r.present[idx][n] = true
			}
			names[n] = true
			continue
		}
		names[base] = true
		exes[p] = true
	}
	if len(exes) > 0 {
		// Tools whose command is a changed file, and tools whose bare cmd
		// failed to resolve (they may now find it).
		for n, res := range r.results {
			if (res.tool != nil && exes[res.tool.Command.Argv[0]]) || (res.tool == nil && len(res.problems) > 0) {
				names[n] = true
			}
		}
	}
	if p := r.updateLocked(names, nil, false); len(p.jobs) > 0 {
		r.finish(p) // in the background: the watch goes on
	}
}
