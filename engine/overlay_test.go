package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A session's overlay: sent tools join its catalog and its ranking (and
// nobody else's), a sent tool shadows the host's of the same name, the
// host's edits reach the session, and a withdrawal undoes a send.
func TestOverlay(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("weather", `{"description":"Current weather and forecast for a city","cmd":"true"}`)
	write("deploy", `{"description":"Deploy the web site to production","cmd":"true"}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache := t.TempDir()
	eng, err := New(ctx, Options{Dirs: []string{dir}, CacheDir: cache, NoThresholds: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go eng.Run(runCtx)

	ov := eng.NewOverlay("s1")
	defer ov.Close()
	if ov.Catalog() != eng.Catalog() {
		t.Error("an overlay with nothing sent is not the engine's catalog")
	}
	top := func(rank func(context.Context, Request) (Answer, error), text string) string {
		t.Helper()
		a, err := rank(ctx, Request{Query: text, Limit: 3, All: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Tools) == 0 {
			return ""
		}
		return a.Tools[0].Name
	}
	res, err := ov.Send(ctx, "lunar_phase", []byte(`{"description":"Phase of the moon tonight: waxing, waning, full","cmd":"/bin/echo"}`))
	if err != nil || res.Tool == nil {
		t.Fatalf("send: %+v %v", res, err)
	}
	hostRev := eng.Catalog().Revision
	if got := ov.Catalog().Revision; got <= hostRev {
		t.Errorf("session revision %d after a send, host %d: it must move", got, hostRev)
	}
	if got := top(ov.Rank, "is the moon waxing tonight"); got != "lunar_phase" {
		t.Errorf("session ranking: %q first, want the sent lunar_phase", got)
	}
	if got := top(eng.Rank, "is the moon waxing tonight"); got == "lunar_phase" {
		t.Error("the engine's own ranking sees a session's sent tool")
	}
	if _, ok := eng.Catalog().Get("lunar_phase"); ok {
		t.Error("the engine's catalog has a session's sent tool")
	}

	// Shadowing: the sent deploy wins in the session.
	if _, err := ov.Send(ctx, "deploy", []byte(`{"description":"Deploy to the staging cluster with helm","cmd":"/bin/echo"}`)); err != nil {
		t.Fatal(err)
	}
	cat := ov.Catalog()
	if d, _ := cat.Get("deploy"); d.Description != "Deploy to the staging cluster with helm" || len(cat.Shadowed) != 1 {
		t.Errorf("deploy %+v, shadowed %+v", d, cat.Shadowed)
	}

	// An edit on the host reaches the session's ranking.
	write("weather", `{"description":"Tide tables and surf report for a beach","cmd":"true"}`)
	waitFor(t, ctx, func() bool { return top(ov.Rank, "surf report at the beach") == "weather" })

	// Invalid: kept, listed with its problem, no tool.
	res, err = ov.Send(ctx, "broken", []byte(`{"description": 7}`))
	if err != nil || len(res.Problems) == 0 {
		t.Fatalf("invalid send: %+v %v", res, err)
	}
	var names []string
	for _, s := range ov.Sent() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"broken", "deploy", "lunar_phase"}) {
		t.Errorf("sent %v", names)
	}
	if b, ok := ov.Definition("broken"); !ok || string(b) != `{"description": 7}` {
		t.Errorf("read back %q %v", b, ok)
	}

	// Withdrawn: gone from the catalog and the ranking.
	if !ov.Withdraw(ctx, "lunar_phase") || ov.Withdraw(ctx, "lunar_phase") {
		t.Error("withdraw: want true once, then false")
	}
	if _, ok := ov.Catalog().Get("lunar_phase"); ok {
		t.Error("a withdrawn tool is still in the session catalog")
	}
	if got := top(ov.Rank, "is the moon waxing tonight"); got == "lunar_phase" {
		t.Error("a withdrawn tool is still ranked")
	}
	if d, _ := ov.Catalog().Get("deploy"); d.Description != "Deploy to the staging cluster with helm" {
		t.Error("withdrawing one tool undid another")
	}
}
