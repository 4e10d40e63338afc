package registry

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// privateCaches readies the directories of the known-schemas file and the
// catalog snapshot (usually one): each is made private to this user
// (fileio.PrivateDir: created 0700, or made 0700 if others may enter it)
// and cleared of the temporary files of writers that were killed
// (fileio.RemoveStaleTemps). A directory that is refused (another user's,
// a shared one) keeps neither file: its options are cleared, with a
// warning.
func privateCaches(o *Options, log *slog.Logger) {
	refused := map[string]bool{}
	for _, path := range []*string{&o.SchemaCache, &o.CatalogCache} {
		if *path == "" {
			continue
		}
		dir := filepath.Dir(*path)
		bad, seen := refused[dir]
		if !seen {
			bad = !privateCacheDir(dir, log)
			refused[dir] = bad
		}
		if bad {
			*path = ""
		}
	}
}

// privateCacheDir readies one directory and reports whether it may hold
// the caches.
func privateCacheDir(dir string, log *slog.Logger) bool {
	if err := fileio.PrivateDir(dir, os.Geteuid(), log); err != nil {
		log.Warn("the registry's cache directory is refused: no known-schemas cache and no catalog snapshot", "err", err)
		return false
	}
	removed, err := fileio.RemoveStaleTemps(dir)
	if err != nil {
		log.Warn("looking for stale temporary files", "dir", dir, "err", err)
	}
	if len(removed) > 0 {
		log.Info("removed the temporary files of writers that died", "dir", dir, "files", removed)
	}
	return true
}
