package usage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// follower keeps a copy of a store's entries up to date with Changes, as
// the ranking does. catchUp may run on another goroutine than the test's.
type follower struct {
	entries map[Key]Entry
	version int64
	resnaps int
}

func (f *follower) catchUp(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	changed, removed, v, err := s.Changes(ctx, f.version)
	if err == ErrResnapshot {
		f.resnaps++
		es, v, err := s.Snapshot(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		f.entries = map[Key]Entry{}
		for _, e := range es {
			f.entries[e.Key] = e
		}
		f.version = v
		return
	}
	if err != nil {
		t.Error(err)
		return
	}
	for _, k := range removed {
		delete(f.entries, k)
	}
	for _, e := range changed {
		if e.Version <= f.version || e.Version > v {
			t.Errorf("changed entry at version %d, reader at %d, store at %d", e.Version, f.version, v)
		}
		f.entries[e.Key] = e
	}
	f.version = v
}

// check compares the follower's copy with a snapshot.
func (f *follower) check(t *testing.T, s Store) {
	t.Helper()
	want := snapshot(t, s)
	if len(want) != len(f.entries) {
		t.Fatalf("follower has %d entries, the store %d", len(f.entries), len(want))
	}
	for k, e := range want {
		if g := f.entries[k]; g.Count != e.Count || g.Version != e.Version || !g.Last.Equal(e.Last) {
			t.Fatalf("%v: follower has %+v, the store %+v", k, g, e)
		}
	}
}

func TestChanges(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	path := filepath.Join(t.TempDir(), "usage.db")
	s := open(t, path, Options{PerTool: 5, PerAgentTool: -1, Now: c.now, Retention: 48 * time.Hour})
	f := &follower{entries: map[Key]Entry{}}
	f.catchUp(t, s) // no store yet
	if f.resnaps != 0 {
		t.Fatal("no store: resnapshot")
	}
	for i := range 30 {
		c.add(time.Minute)
		record(t, s, Event{Request: fmt.Sprint("r", i%8), Tool: fmt.Sprint("t", i%3), OK: true})
		if i%4 == 0 {
			f.catchUp(t, s)
			f.check(t, s)
		}
	}
	// The first version of a store follows its creation: Changes from
	// 0 asks for a snapshot.
	if f.resnaps != 1 {
		t.Errorf("%d resnapshots", f.resnaps)
	}
	f.catchUp(t, s)
	f.check(t, s)
	// Evicted entries come as removed.
	for i := range 10 {
		c.add(time.Minute)
		record(t, s, Event{Request: fmt.Sprint("new ", i), Tool: "t0", OK: true})
	}
	// Removed are the 5 old ones and the first 5 new ones, which this
	// reader never saw.
	changed, removed, _, err := s.Changes(ctx, f.version)
	if err != nil || len(changed) != 5 || len(removed) != 10 {
		t.Fatalf("%d changed, %d removed: %v", len(changed), len(removed), err)
	}
	f.catchUp(t, s)
	f.check(t, s)
	// And expired ones.
	c.add(49 * time.Hour)
	record(t, s, Event{Request: "fresh", Tool: "t9", OK: true})
	f.catchUp(t, s)
	f.check(t, s)
	if len(f.entries) != 1 {
		t.Errorf("%d entries", len(f.entries))
	}
	// Nothing new: nothing, at the same version.
	v := f.version
	changed, removed, v2, err := s.Changes(ctx, v)
	if err != nil || len(changed)+len(removed) != 0 || v2 != v {
		t.Fatalf("%v %v %d %v", changed, removed, v2, err)
	}
	// A version the store never had (a store made anew) asks for a
	// snapshot.
	if _, _, _, err := s.Changes(ctx, v+100); err != ErrResnapshot {
		t.Errorf("changes from the future: %v", err)
	}
	// Forget asks for a snapshot, as does a store made anew.
	resnaps := f.resnaps
	if _, err := s.Forget(ctx, Filter{Tool: "t9"}); err != nil {
		t.Fatal(err)
	}
	f.catchUp(t, s)
	f.check(t, s)
	s.Close()
	os.Remove(path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	s = open(t, path, Options{Now: c.now})
	c.add(time.Second)
	record(t, s, Event{Request: "new store", Tool: "t", OK: true})
	f.catchUp(t, s)
	f.check(t, s)
	if f.resnaps != resnaps+2 {
		t.Errorf("%d resnapshots, want %d", f.resnaps, resnaps+2)
	}
}

// Removals are remembered up to Options.tombstones; a reader further
// behind takes a snapshot.
func TestChangesHorizon(t *testing.T) {
	const keep = 50
	s := open(t, filepath.Join(t.TempDir(), "usage.db"), Options{Total: 10, PerAgentTool: -1, tombstones: keep})
	f := &follower{}
	f.catchUp(t, s)
	var evs []Event
	for i := range keep + 40 {
		evs = append(evs, Event{Request: fmt.Sprint("r", i), Tool: "t", OK: true})
	}
	record(t, s, evs[:5]...)
	f.catchUp(t, s)
	resnaps := f.resnaps
	// Within the horizon: changes.
	for _, ev := range evs[5:25] {
		record(t, s, ev)
	}
	f.catchUp(t, s)
	if f.resnaps != resnaps {
		t.Errorf("a reader within the horizon took a snapshot")
	}
	f.check(t, s)
	// Behind it (more removals since than remembered): a snapshot.
	for _, ev := range evs[25:] {
		record(t, s, ev)
	}
	f.catchUp(t, s)
	if f.resnaps != resnaps+1 {
		t.Errorf("a reader behind the horizon did not take a snapshot")
	}
	f.check(t, s)
}

// Records from many goroutines all count; readers meanwhile see
// consistent states: both events of one Record or neither, and Changes
// applied one after another agree with a snapshot.
func TestConcurrentRecordAndRead(t *testing.T) {
	const writers, each = 6, 40
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "usage.db")
	s := open(t, path, Options{MaxCount: -1})
	reader := open(t, path, Options{})
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// A pair in one Record: a reader sees both or neither.
				err := s.Record(ctx,
					Event{Request: fmt.Sprintf("left %d", i%4), Tool: "l", Agent: fmt.Sprint(w), OK: true},
					Event{Request: fmt.Sprintf("right %d", i%4), Tool: "r", Agent: fmt.Sprint(w), OK: true})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var rwg sync.WaitGroup
	rwg.Go(func() {
		f := &follower{entries: map[Key]Entry{}}
		for {
			select {
			case <-done:
				return
			default:
			}
			es, _, err := reader.Snapshot(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			var left, right int64
			for _, e := range es {
				if e.Key.Tool == "l" {
					left += e.Count
				} else {
					right += e.Count
				}
			}
			if left != right {
				t.Errorf("snapshot saw %d left, %d right", left, right)
				return
			}
			f.catchUp(t, reader)
		}
	})
	wg.Wait()
	close(done)
	rwg.Wait()
	var total int64
	for _, e := range snapshot(t, reader) {
		total += e.Count
	}
	if total != 2*writers*each {
		t.Errorf("%d calls counted, want %d", total, 2*writers*each)
	}
	f := &follower{}
	f.catchUp(t, reader)
	f.check(t, s)
}
