package registry

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// rescanLocked lists every directory and re-resolves every name. When
// deferPublish is set and schemas must be compiled, nothing is published yet
// (the caller finishes the compiles and publishes once).
func (r *Registry) rescanLocked(ctx context.Context, deferPublish bool) (pending, error) {
	lists := make([][]os.DirEntry, len(r.opts.Dirs))
	total := 0
	for i, dir := range r.opts.Dirs {
		if err := ctx.Err(); err != nil {
			return pending{}, err
		}
		ents, err := readDirUnsorted(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot read tool directory", "dir", dir, "err", err)
		}
		lists[i], total = ents, total+len(ents)
	}
	names := make(map[string]bool, max(len(r.results), total))
	for n := range r.results {
		names[n] = true
	}
	seenFiles := make(map[string]bool, total)
	listing := make(map[string]map[string]bool, len(lists))
	r.regular = make(map[string]bool, total)
	defer func() { r.regular = nil }()
	for i, dir := range r.opts.Dirs {
		ents := lists[i]
		r.present[i] = make(map[string]bool, len(ents))
		listing[dir] = make(map[string]bool, len(ents))
		for _, e := range ents {
			listing[dir][e.Name()] = true
			n, ok := metaName(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			p := inDir(dir, e.Name())
			if e.Type().IsRegular() {
				r.regular[p] = true
			}
			r.present[i][n] = true
			names[n] = true
			seenFiles[p] = true
		}
	}
	for p := range r.files {
		if !seenFiles[p] {
			delete(r.files, p)
		}
	}
	if len(r.schemas) > 2*len(r.files)+64 { // edits left stale schemas behind
		r.pruneSchemasLocked()
	}
	return r.updateLocked(names, listing, deferPublish), nil
}

// readDirUnsorted is os.ReadDir without the sort: the listing goes into
// maps (sorting 10,000 names was a tenth of it).
func readDirUnsorted(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// pruneSchemasLocked drops the compile jobs no file uses any more. Jobs in
// use stay, so an abandoned (timed-out) compile is not started again.
func (r *Registry) pruneSchemasLocked() {
	used := map[*compileJob]bool{}
	for _, fe := range r.files {
		for _, j := range fe.jobs {
			used[j] = true
		}
	}
	for k, j := range r.schemas {
		if !used[j] && j.settled() {
			delete(r.schemas, k)
		}
	}
}

// inDir is filepath.Join(dir, base) for a clean dir (every tool
// directory is made clean by New) and a base name without a separator:
// without Join's Clean, which was a tenth of resolving 10,000 names.
func inDir(dir, base string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) { // the root
		return dir + base
	}
	return dir + string(filepath.Separator) + base
}

// metaName returns the tool name of a directory entry that is a .meta file,
// skipping editor droppings (dotfiles, backups, swap and temp files).
func metaName(base string) (string, bool) {
	if !strings.HasSuffix(base, ".meta") || strings.HasPrefix(base, ".") {
		return "", false
	}
	return strings.TrimSuffix(base, ".meta"), true
}
