package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// Every field's sample values come back from the snapshot as they were
// parsed: a new field whose type the codec gets wrong fails here.
func TestSnapshotFields(t *testing.T) {
	for _, d := range metaFields {
		s := fieldSamples[d.name]
		for _, raw := range []string{s.value, s.other} {
			v, err := d.parse(json.RawMessage(raw))
			if err != nil {
				t.Fatalf("%s: sample %s does not parse: %v", d.name, raw, err)
			}
			var w snapWriter
			d.enc(&w, v)
			if w.err != nil {
				t.Fatalf("%s: %v", d.name, w.err)
			}
			r := snapReader{s: string(w.b)}
			got := d.dec(&r)
			if r.err != nil || len(r.s) != 0 {
				t.Fatalf("%s: reading back %s: err %v, %d bytes left", d.name, raw, r.err, len(r.s))
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("%s: %s parsed into %#v, came back as %#v", d.name, raw, v, got)
			}
		}
	}
}

// A whole definition (variants with and without a match, fields of the
// user's own, warnings) comes back as parsed, and so do the examples.
func TestSnapshotMeta(t *testing.T) {
	files := map[string][]byte{
		"variants.meta": []byte(`{"description":"d","prompt":"p","keywords":[],"mine":{"x":[1,2]},"promt":"p",
			"variants":[{"match":{"os":"linux","binary":["jq","gojq"]},"cmd":"jq","limits":{"memory":"1GiB"}},
				{"cmd":"cat","tier":"cold","readOnly":false}]}`),
	}
	examples, err := filepath.Glob("../examples/tools/*.meta")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range examples {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = data
	}
	for name, data := range files {
		m, err := ParseMeta(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var w snapWriter
		w.meta(m)
		e := &snapEntry{meta: string(w.b)}
		got, err := e.decodeMeta("/nowhere/" + name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got.lines, m.lines = nil, nil
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: parsed %+v, came back as %+v", name, m, got)
		}
	}
}

// catalogState is what a load must give whether the files came from the
// snapshot or not: every tool with its definition's hash, every problem
// with its line.
func catalogState(r *Registry) string {
	var out []string
	for _, tool := range r.Catalog().Tools {
		out = append(out, tool.Name+" "+tool.Hash+" "+tool.Description)
	}
	for _, p := range r.Catalog().Problems {
		out = append(out, fmt.Sprintf("problem %s:%d %s", filepath.Base(p.File), p.Line, p.Msg))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// A restart takes unchanged files from the catalog snapshot and reads
// every file that changed in any way a stat can tell, whatever happened to
// the snapshot file; the catalog is the one reading every file gives.
func TestSnapshotLoad(t *testing.T) {
	const (
		a      = `{"description":"tool a","cmd":"/bin/true","keywords":["x"]}`
		aSame  = `{"description":"tool A","cmd":"/bin/true","keywords":["x"]}` // a's size
		broken = `{"description":"broken","cmd":"/bin/true",
"tier":"lukewarm"}`
	)
	setup := func(t *testing.T) (dir, cache string) {
		dir, cache = t.TempDir(), filepath.Join(t.TempDir(), "catalog.snap")
		writeTool(t, dir, "a", a, false)
		writeTool(t, dir, "b", `{"description":"tool b","cmd":"/bin/true","variants":[{"match":{"os":"plan9"},"cmd":"/bin/false"}]}`, false)
		writeTool(t, dir, "c", `{"description":"tool c","cmd":"/bin/true","timeout":"90s"}`, false)
		writeTool(t, dir, "broken", broken, false)
		// Parses (so the snapshot keeps it) but does not resolve: its
		// problem's line is read from the file when asked for.
		writeTool(t, dir, "nocmd", "{\"description\":\"no such command\",\n\"cmd\":\"no-such-command-of-toolsrv\"}", false)
		return dir, cache
	}
	// load loads dir with the snapshot at cache; later moves the racy
	// rule's clock on, so that files just written count as old; without
	// it the load happens half of snapRacy after the last file changed.
	load := func(t *testing.T, dir, cache string, later bool) (*Registry, []string) {
		t.Helper()
		r := New(Options{Dirs: []string{dir}, CatalogCache: cache})
		r.now = func() time.Time { return time.Now().Add(time.Minute) }
		if !later {
			r.now = func() time.Time { return lastChange(t, dir).Add(snapRacy / 2) }
		}
		if err := r.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		var snapped []string
		for p, fe := range r.files {
			if fe.snapped {
				snapped = append(snapped, filepath.Base(p))
			}
		}
		slices.Sort(snapped)
		return r, snapped
	}
	// reading is the catalog of dir with no snapshot.
	reading := func(t *testing.T, dir string) string {
		r := New(Options{Dirs: []string{dir}})
		if err := r.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return catalogState(r)
	}
	rewriteSnapshot := func(t *testing.T, cache string, change func(h *snapHeader, body []byte) []byte) {
		var h snapHeader
		body, err := fileio.ReadFramed(cache, snapMagic, &h, maxSnapBytes)
		if err != nil {
			t.Fatal(err)
		}
		body = change(&h, body)
		if err := fileio.WriteFramed(cache, 0o600, snapMagic, &h, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"a.meta", "b.meta", "c.meta", "nocmd.meta"}

	for _, tc := range []struct {
		name        string
		change      func(t *testing.T, dir, cache string)
		wantSnapped []string
	}{
		{"unchanged", func(*testing.T, string, string) {}, all},
		{"same size, modification time put back", func(t *testing.T, dir, _ string) {
			p := filepath.Join(dir, "a.meta")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			writeTool(t, dir, "a", aSame, false)
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, []string{"b.meta", "c.meta", "nocmd.meta"}},
		{"replaced by a rename", func(t *testing.T, dir, _ string) {
			tmp := filepath.Join(dir, ".a.meta.tmp")
			if err := os.WriteFile(tmp, []byte(aSame), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "a.meta")); err != nil {
				t.Fatal(err)
			}
		}, []string{"b.meta", "c.meta", "nocmd.meta"}},
		{"removed and added", func(t *testing.T, dir, _ string) {
			if err := os.Remove(filepath.Join(dir, "b.meta")); err != nil {
				t.Fatal(err)
			}
			writeTool(t, dir, "d", `{"description":"tool d","cmd":"/bin/true"}`, false)
		}, []string{"a.meta", "c.meta", "nocmd.meta"}},
		{"broken fixed", func(t *testing.T, dir, _ string) {
			writeTool(t, dir, "broken", `{"description":"fixed","cmd":"/bin/true"}`, false)
		}, all},
		{"snapshot of another build", func(t *testing.T, _, cache string) {
			rewriteSnapshot(t, cache, func(h *snapHeader, body []byte) []byte { h.Program += " (rebuilt)"; return body })
		}, nil},
		{"snapshot corrupted", func(t *testing.T, _, cache string) {
			data, err := os.ReadFile(cache)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-1] ^= 0xff
			if err := os.WriteFile(cache, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"snapshot truncated", func(t *testing.T, _, cache string) {
			if err := os.Truncate(cache, 40); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"snapshot malformed under a good checksum", func(t *testing.T, _, cache string) {
			rewriteSnapshot(t, cache, func(_ *snapHeader, body []byte) []byte { return body[:len(body)-3] })
		}, nil},
		{"snapshot replaced by a named pipe", func(t *testing.T, _, cache string) {
			if err := os.Remove(cache); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(cache, 0o600); err != nil {
				t.Fatal(err)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, cache := setup(t)
			if _, snapped := load(t, dir, cache, true); len(snapped) != 0 {
				t.Fatalf("the first load took %v from a snapshot that did not exist", snapped)
			}
			if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the snapshot (every definition, prompts included) is not its owner's alone: %v, %v", fi.Mode(), err)
			}
			// The racy rule is off in these loads (the clock is moved on), so
			// a change must not share the writes' timestamp tick (a few ms).
			time.Sleep(20 * time.Millisecond)
			tc.change(t, dir, cache)
			r, snapped := load(t, dir, cache, true)
			if !slices.Equal(snapped, tc.wantSnapped) {
				t.Errorf("taken from the snapshot: %v, want %v", snapped, tc.wantSnapped)
			}
			if got, want := catalogState(r), reading(t, dir); got != want {
				t.Errorf("catalog after a load with the snapshot:\n%s\nwant (every file read):\n%s", got, want)
			}
			// The next load finds the snapshot rewritten for what it read.
			var valid []string
			for p, fe := range r.files {
				if fe.meta != nil && len(fe.errs) == 0 {
					valid = append(valid, filepath.Base(p))
				}
			}
			slices.Sort(valid)
			if _, snapped := load(t, dir, cache, true); !slices.Equal(snapped, valid) {
				t.Errorf("the load after took %v from the snapshot, want every valid file: %v", snapped, valid)
			}
		})
	}

	// Files changed within snapRacy of the load that read them are not
	// kept: a write in the same clock tick would not show.
	dir, cache := setup(t)
	load(t, dir, cache, false)
	if _, snapped := load(t, dir, cache, false); len(snapped) != 0 {
		t.Errorf("files changed within snapRacy of the load were taken from the snapshot: %v", snapped)
	}
}

// lastChange is the latest change time of dir's files.
func lastChange(t *testing.T, dir string) time.Time {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, e := range ents {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		if c := time.Unix(st.Ctim.Unix()); c.After(last) {
			last = c
		}
	}
	return last
}

// A few changed files are read at each start rather than the snapshot
// rewritten after every edit; more than one in snapSlack rewrites it.
func TestSnapshotSlack(t *testing.T) {
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "catalog.snap")
	const n = 3 * snapSlack
	for i := range n {
		writeTool(t, dir, fmt.Sprintf("t%03d", i), fmt.Sprintf(`{"description":"tool %03d","cmd":"/bin/true"}`, i), false)
	}
	load := func() *Registry {
		t.Helper()
		r := New(Options{Dirs: []string{dir}, CatalogCache: cache})
		r.now = func() time.Time { return time.Now().Add(time.Minute) }
		if err := r.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	written := func() time.Time {
		t.Helper()
		fi, err := os.Stat(cache)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	load()
	first := written()
	time.Sleep(20 * time.Millisecond) // see TestSnapshotLoad
	// Edit 2 (< n/snapSlack = 3): read afresh, right, the snapshot kept.
	for i := range 2 {
		writeTool(t, dir, fmt.Sprintf("t%03d", i), fmt.Sprintf(`{"description":"edited tool %d","cmd":"/bin/true"}`, i), false)
	}
	for range 2 {
		r := load()
		if tool, _ := r.Catalog().Get("t001"); tool == nil || tool.Description != "edited tool 1" {
			t.Fatalf("an edited file was not read: %+v", tool)
		}
		if r.files[filepath.Join(dir, "t001.meta")].snapped {
			t.Fatal("the edited file came from the snapshot")
		}
		if !r.files[filepath.Join(dir, "t100.meta")].snapped {
			t.Fatal("an unchanged file did not come from the snapshot")
		}
	}
	if !written().Equal(first) {
		t.Error("the snapshot was rewritten for 2 changed files in 192")
	}
	// Two more (4 > 3): rewritten, and then every file comes from it.
	for i := 2; i < 4; i++ {
		writeTool(t, dir, fmt.Sprintf("t%03d", i), `{"description":"edited","cmd":"/bin/true"}`, false)
	}
	time.Sleep(20 * time.Millisecond) // a later modification time than first (see TestSnapshotLoad)
	load()
	if written().Equal(first) {
		t.Error("the snapshot was not rewritten for 4 changed files in 192")
	}
	for p, fe := range load().files {
		if !fe.snapped {
			t.Errorf("%s read after the rewrite", p)
		}
	}
}
