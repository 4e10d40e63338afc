package registry

import "github.com/toolsrv/toolsrv/internal/parallel"

// prefetchLocked reads and parses the files of names (in every directory
// that has one) on GOMAXPROCS goroutines, for the update in progress: the
// first load of a large catalog is mostly reading and parsing. Few files
// are read where they are needed, one at a time.
func (r *Registry) prefetchLocked(names map[string]bool) {
	var paths []string
	for n := range names {
		if ValidName(n) != nil {
			continue
		}
		for i, dir := range r.opts.Dirs {
			if r.present[i][n] {
				paths = append(paths, inDir(dir, n+".meta"))
			}
		}
	}
	if len(paths) < prefetchMin {
		return
	}
	results := make([]loaded, len(paths))
	snap := r.snapshotLocked()
	parallel.Each(len(paths), func(i int) {
		results[i] = loadFile(paths[i], r.files[paths[i]], r.regular[paths[i]], snap[paths[i]])
	})
	r.fetched = make(map[string]*fileEntry, len(paths))
	for i, p := range paths {
		r.fetched[p] = r.storeFile(p, results[i])
	}
}

// prefetchMin is the fewest files read in parallel.
const prefetchMin = 64
