package usage

import (
	"errors"
	"io/fs"
	"os"
)

// Derived is a store that keeps, beside its own file, a private file for
// what a reader derives from the history (the engine keeps its built
// usage view there, so that a one-shot `toolsrv rank` need not build it
// again from every entry). The store removes that file whenever it
// forgets entries and when it sets a damaged file aside: nothing derived
// outlives what it was derived from. Readers treat the file as a cache
// (checked, rebuilt when it does not match).
type Derived interface {
	DerivedPath() string
}

// derivedSuffix names the derived file: the store's path and this.
const derivedSuffix = ".view"

// DerivedPath is the file beside the store's database.
func (s *fileStore) DerivedPath() string { return s.path + derivedSuffix }

// removeDerived removes the derived file of the store at path, if any.
func removeDerived(path string) error {
	if err := os.Remove(path + derivedSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
