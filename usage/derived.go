package usage

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// Derived is a store that keeps, beside its own file, a private file for
// what a reader derives from the history (the engine keeps its built
// usage view there, so that a one-shot `toolsrv rank` need not build it
// again from every entry), and the files named after it with a suffix
// (DerivedPath() + ".…": the engine's cache of the requests' vectors).
// The store removes them all whenever it forgets entries and when it sets
// a damaged file aside: nothing derived outlives what it was derived
// from. Readers treat the files as caches (checked, rebuilt when they do
// not match).
type Derived interface {
	// DerivedPath is the file.
	DerivedPath() string
	// DerivedTag names the store's file and gives the history's Version
	// now: the same tag and version are the same history (the version
	// grows with every change, and a new file gets another tag). "" when
	// there is no history yet.
	DerivedTag(ctx context.Context) (string, int64, error)
}

// derivedSuffix names the derived file: the store's path and this.
const derivedSuffix = ".view"

// DerivedPath is the file beside the store's database.
func (s *fileStore) DerivedPath() string { return s.path + derivedSuffix }

// removeDerived removes the derived files of the store at path, if any:
// the file, those named after it with a suffix, and the temporary files
// of their writers (fileio.TempOf), a live writer's too: what it writes
// is of the history as it was.
func removeDerived(path string) error {
	dir, name := filepath.Split(path + derivedSuffix)
	ents, err := os.ReadDir(filepath.Clean(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	derived := func(n string) bool { return n == name || strings.HasPrefix(n, name+".") }
	for _, e := range ents {
		n := e.Name()
		if t, temp := fileio.TempOf(n); e.IsDir() || !derived(n) && !(temp && derived(t)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// DerivedTag is the store file's device and inode (sqlitefile.File.Tag),
// and its version. A new file starts its versions again, and may get the
// inode of one removed: the store removes the derived file when it makes
// a new one (sqlitefile.Options.Derived), so that nothing derived from an
// old file can match.
func (s *fileStore) DerivedTag(ctx context.Context) (string, int64, error) {
	var (
		tag     string
		version int64
	)
	err := s.read(ctx, "version", func(tx *sql.Tx) error {
		tag, version = "", 0 // a second try starts afresh
		if tx == nil {
			return nil
		}
		v, err := metaValue(ctx, tx, "version")
		if err != nil {
			return err
		}
		tag, version = s.file.Tag(), v
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	if tag != "" && s.file.Tag() != tag { // set aside meanwhile: no tag names what was read
		return "", version, nil
	}
	return tag, version, nil
}
