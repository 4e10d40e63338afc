package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/usage"
)

// server starts a PostgreSQL server for t and returns it and the
// superuser's URL of its database postgres.
func server(t *testing.T) (*testdeps.PG, string) {
	t.Helper()
	pg := testdeps.StartPostgres(t)
	return pg, pg.URL("postgres", testdeps.PostgresPassword, "postgres")
}

// open opens the store at dsn with a local directory of t's own.
func open(t *testing.T, dsn string, opts usage.Options) usage.Store {
	t.Helper()
	if opts.LocalDir == "" {
		opts.LocalDir = t.TempDir()
	}
	s, warns, err := usage.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v (warnings %v)", err, warns)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// byKey sorts entries for comparing.
func byKey(es []usage.Entry) []usage.Entry {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i].Key, es[j].Key
		if a.Request != b.Request {
			return a.Request < b.Request
		}
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		return a.Agent < b.Agent
	})
	return es
}

// same reports how two lists of entries differ (ignoring versions), or "".
func same(a, b []usage.Entry) string {
	a, b = byKey(a), byKey(b)
	if len(a) != len(b) {
		return fmt.Sprintf("%d entries, want %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Key != y.Key || x.Text != y.Text || x.Count != y.Count || x.Failed != y.Failed ||
			!x.First.Equal(y.First) || !x.Last.Equal(y.Last) || strings.Join(x.Offered, ",") != strings.Join(y.Offered, ",") {
			return fmt.Sprintf("entry %d: %+v, want %+v", i, x, y)
		}
	}
	return ""
}

// seenFrom is es, entries recorded by instance rec, as another instance
// of the namespace reads them, first read at read: each principal rec's,
// first used no earlier than read (principal.go).
func seenFrom(es []usage.Entry, rec usage.Store, read time.Time) []usage.Entry {
	out := make([]usage.Entry, len(es))
	for i, e := range es {
		e.Key.Principal = usage.PrefixInstance + rec.(*store).in.id + "/" + e.Key.Principal
		if e.First.Before(read) {
			e.First = read
		}
		if e.Last.Before(e.First) {
			e.Last = e.First
		}
		out[i] = e
	}
	return out
}

// events makes n events over a few tools, agents and requests, some
// repeated and some failing, at times t0 + i s.
func events(n int, t0 time.Time, prefix string) []usage.Event {
	evs := make([]usage.Event, n)
	for i := range evs {
		evs[i] = usage.Event{
			Request: fmt.Sprintf("%s request %d about things", prefix, i%(n/3+1)),
			Tool:    fmt.Sprintf("tool%d", i%7),
			Agent:   fmt.Sprintf("agent%d", i%3),
			OK:      i%5 != 0,
			Time:    t0.Add(time.Duration(i) * time.Second),
			Offered: []string{"a", "b"},
			Source:  usage.SourceMCP,
			ID:      fmt.Sprintf("%s-%d", prefix, i),
		}
	}
	return evs
}

// The shared store merges events into the same entries as the embedded
// store, caps included, and skips repeated IDs.
func TestSameEntriesAsEmbedded(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	opts := usage.Options{PerTool: 20, PerAgentTool: 8, Total: 100, MaxCount: 4}
	for _, tc := range []struct {
		name  string
		batch int
	}{{"one at a time", 1}, {"in batches", 37}} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Namespace = strings.ReplaceAll(tc.name, " ", "_")
			pg := open(t, dsn, o)
			file := open(t, t.TempDir()+"/usage.db", opts)
			evs := events(600, t0, "x")
			for i := 0; i < len(evs); i += tc.batch {
				b := evs[i:min(i+tc.batch, len(evs))]
				for _, s := range []usage.Store{pg, file} {
					if err := s.Record(ctx, b...); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Repeats change nothing.
			if err := pg.Record(ctx, evs[:50]...); err != nil {
				t.Fatal(err)
			}
			a, _, err := pg.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := file.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) == 0 || len(a) > 100 {
				t.Fatalf("%d entries", len(a))
			}
			if d := same(a, b); d != "" {
				t.Error(d)
			}
			sa, err := pg.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sb, _ := file.Stats(ctx)
			if sa.Entries != sb.Entries || sa.Events != sb.Events || sa.Failed != sb.Failed || sa.Sources["mcp"] != sb.Sources["mcp"] || sa.Pending != 0 {
				t.Errorf("stats %+v, embedded %+v", sa, sb)
			}
		})
	}
}

// Changes brings a reader from a version to the next; a Forget in
// between makes it take a snapshot.
func TestChanges(t *testing.T) {
	_, dsn := server(t)
	ctx := context.Background()
	s := open(t, dsn, usage.Options{PerAgentTool: 2})
	if _, _, v, err := s.Changes(ctx, 0); err != nil || v != 0 {
		t.Fatalf("Changes of nothing: %d %v", v, err)
	}
	t0 := time.Now().Add(-time.Minute)
	if err := s.Record(ctx, usage.Event{Request: "one", Tool: "t", Time: t0}); err != nil {
		t.Fatal(err)
	}
	_, v1, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, usage.Event{Request: "two", Tool: "t", Time: t0.Add(time.Second)},
		usage.Event{Request: "three", Tool: "t", Time: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	changed, removed, v2, err := s.Changes(ctx, v1)
	if err != nil || v2 <= v1 || len(changed) != 2 || len(removed) != 1 || removed[0].Request != "one" {
		t.Fatalf("Changes(%d): %v %v %d %v", v1, changed, removed, v2, err)
	}
	if v, err := s.Version(ctx); err != nil || v != v2 {
		t.Fatalf("Version %d %v, want %d", v, err, v2)
	}
	if n, err := s.Forget(ctx, usage.Filter{Tool: "t"}); err != nil || n != 2 {
		t.Fatalf("Forget: %d %v", n, err)
	}
	if _, _, _, err := s.Changes(ctx, v2); !errors.Is(err, usage.ErrResnapshot) {
		t.Fatalf("Changes after Forget: %v, want ErrResnapshot", err)
	}
	if es, _, err := s.Snapshot(ctx); err != nil || len(es) != 0 {
		t.Fatalf("Snapshot after Forget: %v %v", es, err)
	}
}
