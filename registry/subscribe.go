package registry

import (
	"context"
	"sort"
	"sync"
)

// subscriber coalesces changes: a slow reader never blocks the registry and
// never misses a name, it just receives several changes merged into one.
type subscriber struct {
	mu      sync.Mutex
	pending *Change
	notify  chan struct{}
}

// Subscribe returns a channel that receives every catalog change after the
// call, until ctx ends (then the channel is closed). Changes that arrive while
// the reader is busy are merged: the Catalog is the newest, and Upserted and
// Removed cover every name that changed in between.
func (r *Registry) Subscribe(ctx context.Context) <-chan Change {
	s := &subscriber{notify: make(chan struct{}, 1)}
	r.subMu.Lock()
	r.subs[s] = struct{}{}
	r.subMu.Unlock()
	out := make(chan Change)
	go func() {
		defer close(out)
		defer func() {
			r.subMu.Lock()
			delete(r.subs, s)
			r.subMu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.notify:
			}
			s.mu.Lock()
			ch := s.pending
			s.pending = nil
			s.mu.Unlock()
			if ch == nil {
				continue
			}
			select {
			case out <- *ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (r *Registry) broadcast(ch Change) {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	for s := range r.subs {
		s.mu.Lock()
		if s.pending == nil {
			c := ch
			s.pending = &c
		} else {
			s.pending = mergeChanges(s.pending, ch)
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// mergeChanges folds b (newer) into a, classifying each name by b's catalog.
func mergeChanges(a *Change, b Change) *Change {
	names := map[string]bool{}
	for _, l := range [][]string{a.Upserted, a.Removed, b.Upserted, b.Removed} {
		for _, n := range l {
			names[n] = true
		}
	}
	out := &Change{Catalog: b.Catalog}
	for n := range names {
		if _, ok := b.Catalog.Get(n); ok {
			out.Upserted = append(out.Upserted, n)
		} else {
			out.Removed = append(out.Removed, n)
		}
	}
	sort.Strings(out.Upserted)
	sort.Strings(out.Removed)
	return out
}
