package usage

import (
	"context"
	"time"
)

// Follower is how a reader that keeps its own copy of a store's history
// (the ranking's view of it) follows the store: the history whole once
// (a snapshot), then what changed since the version the reader has (a
// delta: version, changed, removed), told when the store may have changed.
// It is the one place outside the stores that knows what a store may also
// be (Derived, Notifier) and what Changes answers when it cannot tell
// (ErrResnapshot), as database/sql keeps its drivers' optional interfaces
// to itself. It keeps nothing of the history: the reader does.
type Follower struct {
	s Store
}

// NewFollower follows s.
func NewFollower(s Store) *Follower { return &Follower{s: s} }

// Delta is what changed in a store's history after a version: apply
// Removed, then Changed. Full: Changed is the whole history (what the
// reader had is dropped).
type Delta struct {
	Version int64
	Full    bool
	Changed []Entry
	Removed []Key
}

// Head names the history and gives its version now, for a reader to tell
// whether what it has (or saved) is of this history and how old it is.
// The name is the store's own (Derived.DerivedTag: it changes when the
// store is made anew), else "store".
func (f *Follower) Head(ctx context.Context) (name string, version int64, err error) {
	if d, ok := f.s.(Derived); ok {
		if tag, version, err := d.DerivedTag(ctx); err == nil && tag != "" {
			return tag, version, nil
		}
	}
	version, err = f.s.Version(ctx)
	return "store", version, err
}

// Since is what changed after version after; with after < 0 the whole
// history (Full). When the store cannot tell what changed (a Forget came
// in between, the store was made anew) the error is ErrResnapshot: ask
// for the whole history (Since(ctx, -1)).
func (f *Follower) Since(ctx context.Context, after int64) (Delta, error) {
	if after < 0 {
		entries, version, err := f.s.Snapshot(ctx)
		if err != nil {
			return Delta{}, err
		}
		return Delta{Version: version, Full: true, Changed: entries}, nil
	}
	changed, removed, version, err := f.s.Changes(ctx, after)
	if err != nil {
		return Delta{}, err
	}
	return Delta{Version: version, Changed: changed, Removed: removed}, nil
}

// DerivedPath is where the reader may keep what it derives from the
// history (Derived: the store removes it whenever it forgets), "" when
// the store keeps no such place.
func (f *Follower) DerivedPath() string {
	if d, ok := f.s.(Derived); ok {
		return d.DerivedPath()
	}
	return ""
}

// Secret is a secret of the installation the store's history is read by,
// for purpose (Keyed; nil when the store keeps none, or its key cannot be
// read now).
func (f *Follower) Secret(purpose string) []byte {
	if k, ok := f.s.(Keyed); ok {
		return k.Secret(purpose)
	}
	return nil
}

// wakeGap is the least time between two of Watch's calls that a store's
// wakes (Notifier) bring, beyond the time the last call took.
const wakeGap = 250 * time.Millisecond

// Watch calls look every poll, and at once when the store says it may
// have changed (a store shared by several hosts: Notifier), until ctx
// ends. look tells whether the history changed (Head) and brings the
// reader up to date, saying whether it did; a wake is then taken no
// sooner than that took (and wakeGap) after it ended, so that a busy
// fleet's stream of notifications keeps the reader catching up half the
// time at most.
func (f *Follower) Watch(ctx context.Context, poll time.Duration, look func(context.Context) (caughtUp bool)) {
	t := time.NewTicker(poll)
	defer t.Stop()
	var wake <-chan struct{}
	if n, ok := f.s.(Notifier); ok {
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
		start := time.Now()
		if look(ctx) {
			next = time.Now().Add(max(wakeGap, time.Since(start)))
		}
	}
}
