package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// An engine running on one instance learns what another instance's
// agents called: the other's Record notifies (usage.Notifier), the
// engine's view catches up.
func TestEngineFollowsOtherInstance(t *testing.T) {
	_, dsn := server(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := open(t, dsn, usage.Options{})
	b, _, err := usage.Open(ctx, dsn, usage.Options{LocalDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine(t, b)
	done := make(chan struct{})
	go func() { defer close(done); eng.Run(ctx) }()
	defer func() { cancel(); <-done }()

	before := eng.UsageFit().Entries
	// C (like B, whose channel the engine reads) is woken by A's commit.
	c := open(t, dsn, usage.Options{})
	wake := c.(usage.Notifier).Notify()
	if _, err := c.Version(ctx); err != nil { // connected
		t.Fatal(err)
	}
	waitFor(t, "C listening", func() bool { return len(wake) > 0 }) // the first wake: its LISTEN is in place
	<-wake
	var evs []usage.Event
	for i := 0; i < 12; i++ {
		evs = append(evs, usage.Event{Request: fmt.Sprintf("zorp the blarg %d", i), Tool: "archive_list", Agent: fmt.Sprint("agent", i%3), OK: true})
	}
	if err := a.Record(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	recorded := time.Now()
	select {
	case <-wake:
	case <-time.After(time.Minute):
		t.Fatal("C was not notified of A's Record within a minute")
	}
	waitFor(t, "the engine on B taking A's entries", func() bool { return eng.UsageFit().Entries == before+12 })
	t.Logf("B's engine had A's entries %v after A's Record", time.Since(recorded))
}
