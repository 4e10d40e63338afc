package early

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/internal/statedir"
)

// The recipes of recent calls are kept in toolsrv's private state
// directory, one file per working directory (calls/SHA-256 of its path),
// each holding the recipes of the last few tools called from there, the
// latest first. They only save time: a file that is missing, unreadable,
// not the user's own or not private, too big or not valid is passed over
// (and replaced at the next call), and a recipe is never trusted: the
// call compares it with its own in every field before it uses the helper
// prepared from it.
const (
	recipesDir = "calls"
	// recipesPerDir is how many tools' recipes a working directory keeps.
	recipesPerDir = 8
	// recipeFiles is how many working directories keep recipes; the
	// least recently written go first.
	recipeFiles = 64
	// maxRecipes bounds a file's size.
	maxRecipes = 256 << 10
)

// recipeBook is one working directory's recipes: read at init, written
// back by remember.
type recipeBook struct {
	wd   string // the working directory
	path string // "": no state directory or working directory
	read []byte // the file as read
	rcs  []sandbox.Recipe
}

// openBook reads the recipes of calls in working directory wd.
func openBook(getenv func(string) string, wd string) *recipeBook {
	dir := statedir.Dir(getenv)
	if wd == "" || !filepath.IsAbs(dir) {
		return &recipeBook{}
	}
	sum := sha256.Sum256([]byte(wd))
	b := &recipeBook{wd: wd, path: filepath.Join(dir, recipesDir, hex.EncodeToString(sum[:16])+".json")}
	if data, ok := readPrivate(b.path); ok && json.Unmarshal(data, &b.rcs) == nil {
		b.read = data
	} else {
		b.rcs = nil
	}
	return b
}

// readPrivate reads path if it and its directory are this user's and no
// one else may write them (nor read the file), and it is a regular file
// of at most maxRecipes bytes.
func readPrivate(path string) ([]byte, bool) {
	if fi, err := os.Lstat(filepath.Dir(path)); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !owned(fi) {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() > maxRecipes {
		return nil, false
	}
	if !owned(fi) {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecipes+1))
	return data, err == nil && len(data) <= maxRecipes
}

// owned says whether fi is this process's (effective) user's.
func owned(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// pick returns the latest recipe of a call in the book's working
// directory whose tool is named among args (a guess: whether it is the
// call's own is for the call to say).
func (b *recipeBook) pick(args []string) (sandbox.Recipe, bool) {
	for _, rc := range b.rcs {
		if rc.Tool != "" && rc.Dir == b.wd && slices.Contains(args, rc.Tool) {
			return rc, true
		}
	}
	return sandbox.Recipe{}, false
}

// remember puts rc first (its tool's older recipe dropped), keeps
// recipesPerDir, and writes the file if that changed it.
func (b *recipeBook) remember(rc sandbox.Recipe) {
	if b.path == "" {
		return
	}
	rcs := []sandbox.Recipe{rc}
	for _, x := range b.rcs {
		if x.Tool != rc.Tool && len(rcs) < recipesPerDir {
			rcs = append(rcs, x)
		}
	}
	data, err := json.Marshal(rcs)
	if err != nil || len(data) > maxRecipes || bytes.Equal(data, b.read) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		return
	}
	if writeReplacing(b.path, data) != nil {
		return
	}
	b.read, b.rcs = data, rcs
	prune(filepath.Dir(b.path), recipeFiles)
}

// writeReplacing writes data to a new private file beside path and
// renames it over path: a reader sees the old file or the new one. It is
// not synced: recipes are a cache, and a sync would cost the call that
// writes them milliseconds (a file lost in a crash is written again at
// the next call). A writer killed between the two leaves its temporary
// file, which prune removes.
func writeReplacing(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// tempSuffix ends writeReplacing's temporary files' names.
const tempSuffix = ".tmp"

// staleTemp is how old a temporary file of writeReplacing's must be before
// prune takes it for one a killed writer left.
const staleTemp = time.Minute

// prune removes the least recently written recipe files of dir beyond
// keep, and temporary files killed writers left.
func prune(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  int64
	}
	var fs []file
	for _, e := range ents {
		fi, err := e.Info()
		switch {
		case err != nil || !fi.Mode().IsRegular():
		case filepath.Ext(e.Name()) == ".json":
			fs = append(fs, file{e.Name(), fi.ModTime().UnixNano()})
		case filepath.Ext(e.Name()) == tempSuffix && time.Since(fi.ModTime()) > staleTemp:
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].mod > fs[j].mod })
	for _, f := range fs[min(keep, len(fs)):] {
		os.Remove(filepath.Join(dir, f.name))
	}
}
