package fileio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic writes a file so that a reader, or a crash, sees either the
// old contents or the new, never part of them: write writes the contents
// to a temporary file in the same directory, which is synced, given perm,
// renamed over path, and the directory synced so the rename itself is
// durable. The directory is created (0700) when missing. On failure the
// temporary file is removed and path is untouched.
//
// The temporary file is locked (flock) from its creation to its rename,
// so that RemoveStaleTemps can tell a live writer's from one a killed
// writer left behind.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return writeAtomic(path, perm, func(w *bufio.Writer, _ *os.File) error { return write(w) })
}

// writeAtomic is WriteAtomic whose write also gets the temporary file
// under the buffered writer (to patch what it wrote: flush first).
func writeAtomic(path string, perm os.FileMode, write func(*bufio.Writer, *os.File) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		f.Close() // releases the lock, after the rename
		if err != nil && !renamed {
			os.Remove(tmp)
		}
	}()
	// A file system without flock leaves it unlocked: RemoveStaleTemps
	// still leaves it alone while it is written to.
	lockTemp(f)
	w := bufio.NewWriterSize(f, 256<<10)
	if err := write(w, f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	renamed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// The rename is in the directory: sync it too.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
