package usage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plainStore is a store with none of the optional interfaces.
type plainStore struct{ Store }

// A follower reads the history whole, then what changed since the
// version the reader has, and says when it cannot tell; it names the
// history as the store does (Derived), else "store".
func TestFollower(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "usage.db")
	s := open(t, path, Options{})
	f := NewFollower(s)
	if name, v, err := f.Head(ctx); err != nil || name != "store" || v != 0 {
		t.Errorf("Head of no history yet: %q %d %v, want store 0", name, v, err)
	}
	record(t, s, Event{Request: "show the git status", Tool: "git_status", OK: true},
		Event{Request: "how full is the disk", Tool: "disk_usage", OK: true})
	name, v1, err := f.Head(ctx)
	if err != nil || !strings.HasPrefix(name, "file ") || v1 == 0 {
		t.Fatalf("Head: %q %d %v, want the file's tag and a version", name, v1, err)
	}
	if p := f.DerivedPath(); p != path+derivedSuffix {
		t.Errorf("DerivedPath %q", p)
	}
	if NewFollower(plainStore{s}).DerivedPath() != "" {
		t.Error("a store that keeps no derived file has a DerivedPath")
	}
	if name, v, _ := NewFollower(plainStore{s}).Head(ctx); name != "store" || v != v1 {
		t.Errorf("Head of a store that does not name its history: %q %d, want store %d", name, v, v1)
	}

	d, err := f.Since(ctx, -1)
	if err != nil || !d.Full || len(d.Changed) != 2 || d.Version != v1 {
		t.Fatalf("the whole history: %+v %v", d, err)
	}
	record(t, s, Event{Request: "find the TODO comments", Tool: "find_todos", OK: true})
	d, err = f.Since(ctx, v1)
	if err != nil || d.Full || len(d.Changed) != 1 || d.Changed[0].Key.Tool != "find_todos" || d.Version <= v1 {
		t.Fatalf("what changed: %+v %v", d, err)
	}
	if _, err := s.Forget(ctx, Filter{Tool: "disk_usage"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Since(ctx, d.Version); !errors.Is(err, ErrResnapshot) {
		t.Errorf("after a Forget: %v, want ErrResnapshot", err)
	}
	if d, err := f.Since(ctx, -1); err != nil || len(d.Changed) != 2 {
		t.Errorf("the whole history after a Forget: %+v %v", d, err)
	}
}

// notifying is a store that says when it may have changed (Notifier).
type notifying struct {
	Store
	ch chan struct{}
}

func (n notifying) Notify() <-chan struct{} { return n.ch }

// Watch looks every poll, and at once when the store says it changed;
// a stream of wakes makes it look no sooner than the last catch-up took
// (and the gap) after it ended.
func TestFollowerWatch(t *testing.T) {
	s := notifying{open(t, filepath.Join(t.TempDir(), "usage.db"), Options{}), make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	looked := make(chan time.Time, 100)
	go NewFollower(s).Watch(ctx, time.Hour, func(context.Context) bool { // no poll within the test
		looked <- time.Now()
		return true
	})
	s.ch <- struct{}{}
	select {
	case <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("a wake brought no look")
	}
	// At once again: held back by the gap.
	s.ch <- struct{}{}
	again := time.Now()
	select {
	case at := <-looked:
		if d := at.Sub(again); d < wakeGap/2 {
			t.Errorf("a second wake looked %v after it, within the gap (%v)", d, wakeGap)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second wake brought no look")
	}
	// Polling, with no wakes.
	quiet := notifying{plainStore{s.Store}, nil}
	pctx, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	polls := make(chan struct{}, 100)
	go NewFollower(quiet).Watch(pctx, 20*time.Millisecond, func(context.Context) bool { polls <- struct{}{}; return false })
	for range 3 {
		select {
		case <-polls:
		case <-time.After(10 * time.Second):
			t.Fatal("no poll")
		}
	}
}
