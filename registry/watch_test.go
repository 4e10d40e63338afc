package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func timeAfter(t testing.TB, dir string) time.Time {
	return time.Now().Add(2 * time.Second)
}

// waitFor polls the catalog until cond holds (or safetyNet passes).
func waitFor(t *testing.T, r *Registry, what string, cond func(*Catalog) bool) *Catalog {
	t.Helper()
	deadline := time.Now().Add(safetyNet)
	for {
		c := r.Catalog()
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s (revision %d, tools %v, problems %v)", what, c.Revision, names(c), c.Problems)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Name)
	}
	return out
}

func desc(c *Catalog, name string) string {
	if t, ok := c.Get(name); ok {
		return t.Description
	}
	return ""
}

func TestWatchLiveEdits(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tools")
	other := filepath.Join(root, "elsewhere")
	os.MkdirAll(other, 0o755)
	writeTool(t, dir, "seed", `{"description":"seed","cmd":"/bin/sh"}`, false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := New(Options{Dirs: []string{dir}, Debounce: 30 * time.Millisecond, Rescan: -1})
	changes := r.Subscribe(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx) }()
	waitFor(t, r, "initial load", func(c *Catalog) bool { return desc(c, "seed") == "seed" })

	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
		cond func(*Catalog) bool
	}{
		{"create", func() { write("a.meta", `{"description":"A1","cmd":"/bin/sh"}`) },
			func(c *Catalog) bool { return desc(c, "a") == "A1" }},
		{"edit in place", func() { write("a.meta", `{"description":"A2 longer","cmd":"/bin/sh"}`) },
			func(c *Catalog) bool { return desc(c, "a") == "A2 longer" }},
		{"editor save (write temp + rename)", func() {
			write(".a.meta.tmp", `{"description":"A3 via rename","cmd":"/bin/sh"}`)
			os.Rename(filepath.Join(dir, ".a.meta.tmp"), filepath.Join(dir, "a.meta"))
		}, func(c *Catalog) bool { return desc(c, "a") == "A3 via rename" }},
		{"vim-style save (backup, new file, remove backup)", func() {
			os.Rename(filepath.Join(dir, "a.meta"), filepath.Join(dir, "a.meta~"))
			write("a.meta", `{"description":"A4 vim","cmd":"/bin/sh"}`)
			os.Remove(filepath.Join(dir, "a.meta~"))
		}, func(c *Catalog) bool { return desc(c, "a") == "A4 vim" }},
		{"break it: old version goes, problem listed", func() { write("a.meta", `{"description":`) },
			func(c *Catalog) bool {
				_, ok := c.Get("a")
				return !ok && len(c.Problems) == 1 && c.Problems[0].Name == "a"
			}},
		{"fix it", func() { write("a.meta", `{"description":"A5 fixed","cmd":"/bin/sh"}`) },
			func(c *Catalog) bool { return desc(c, "a") == "A5 fixed" && len(c.Problems) == 0 }},
		{"rename", func() { os.Rename(filepath.Join(dir, "a.meta"), filepath.Join(dir, "b.meta")) },
			func(c *Catalog) bool { _, okA := c.Get("a"); return !okA && desc(c, "b") == "A5 fixed" }},
		{"move out", func() { os.Rename(filepath.Join(dir, "b.meta"), filepath.Join(other, "b.meta")) },
			func(c *Catalog) bool { _, ok := c.Get("b"); return !ok }},
		{"move in", func() { os.Rename(filepath.Join(other, "b.meta"), filepath.Join(dir, "c.meta")) },
			func(c *Catalog) bool { return desc(c, "c") == "A5 fixed" }},
		{"delete", func() { os.Remove(filepath.Join(dir, "c.meta")) },
			func(c *Catalog) bool { _, ok := c.Get("c"); return !ok }},
		{"executable appears: becomes co-located", func() {
			write("x.meta", `{"description":"x","cmd":"/bin/sh"}`)
			os.WriteFile(filepath.Join(dir, "x"), []byte("#!/bin/sh\ncat\n"), 0o755)
		}, func(c *Catalog) bool { t, ok := c.Get("x"); return ok && t.Command.Kind == CoLocated }},
		{"executable loses its x bit", func() { os.Chmod(filepath.Join(dir, "x"), 0o644) },
			func(c *Catalog) bool { t, ok := c.Get("x"); return ok && t.Command.Kind == Direct }},
		{"executable gets its x bit back", func() { os.Chmod(filepath.Join(dir, "x"), 0o755) },
			func(c *Catalog) bool { t, ok := c.Get("x"); return ok && t.Command.Kind == CoLocated }},
		{"executable is deleted", func() { os.Remove(filepath.Join(dir, "x")) },
			func(c *Catalog) bool { t, ok := c.Get("x"); return ok && t.Command.Kind == Direct }},
		{"directory removed", func() { os.RemoveAll(dir) },
			func(c *Catalog) bool { return len(c.Tools) == 0 }},
		{"directory comes back", func() {
			os.MkdirAll(dir, 0o755)
			time.Sleep(50 * time.Millisecond)
			write("back.meta", `{"description":"back","cmd":"/bin/sh"}`)
		}, func(c *Catalog) bool { return desc(c, "back") == "back" }},
		{"burst of saves is debounced", func() {
			for i := 0; i < 20; i++ {
				write("burst.meta", fmt.Sprintf(`{"description":"burst %d","cmd":"/bin/sh"}`, i))
			}
		}, func(c *Catalog) bool { return desc(c, "burst") == "burst 19" }},
	}
	for _, s := range steps {
		before := r.Catalog().Revision
		s.do()
		c := waitFor(t, r, s.name, s.cond)
		if c.Revision <= before {
			t.Errorf("%s: revision %d did not advance from %d", s.name, c.Revision, before)
		}
	}
	// Subscribers saw the changes, merged but complete.
	seen := map[string]bool{}
	deadline := time.After(safetyNet)
drain:
	for {
		select {
		case ch := <-changes:
			for _, n := range append(ch.Upserted, ch.Removed...) {
				seen[n] = true
			}
			if ch.Catalog.Revision == r.Catalog().Revision {
				break drain
			}
		case <-deadline:
			break drain
		}
	}
	for _, n := range []string{"a", "b", "c", "x", "back", "burst"} {
		if !seen[n] {
			t.Errorf("subscriber never heard of %s (saw %v)", n, seen)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch: %v", err)
	}
}

func TestSubscriberMerge(t *testing.T) {
	dir := t.TempDir()
	r := New(Options{Dirs: []string{dir}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := r.Subscribe(ctx)
	writeTool(t, dir, "p", `{"description":"p","cmd":"/bin/sh"}`, false)
	r.Load(ctx)
	writeTool(t, dir, "q", `{"description":"q","cmd":"/bin/sh"}`, false)
	r.Load(ctx)
	os.Remove(filepath.Join(dir, "p.meta"))
	r.Load(ctx)
	// Nobody read in between: one merged change with q upserted, p removed.
	var got Change
	select {
	case got = <-ch:
	case <-time.After(2 * time.Second):
		t.Fatal("no change delivered")
	}
	// Merge until the change reaches the last revision (a reader may take
	// the first change before the later ones exist).
	for got.Catalog.Revision < r.Catalog().Revision {
		select {
		case c := <-ch:
			got = *mergeChanges(&got, c)
		case <-time.After(2 * time.Second):
			t.Fatalf("incomplete: %+v", got)
		}
	}
	if strings.Join(got.Upserted, ",") != "q" || strings.Join(got.Removed, ",") != "p" {
		t.Errorf("merged change = up %v rm %v", got.Upserted, got.Removed)
	}
}
