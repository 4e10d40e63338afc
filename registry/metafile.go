package registry

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// fileEntry caches one parsed .meta file.
type fileEntry struct {
	// key is the file's stat when it was read: size, times, inode (its
	// zero value when not known); snapped says the parse came from the
	// catalog snapshot.
	key     fileKey
	snapped bool
	sum     [32]byte
	meta    *Meta
	// errs are the problems found reading and parsing the file.
	errs FieldErrors
	// jobs compile the top-level schema (-1) and each variant's (index).
	jobs map[int]*compileJob
}

// unsettled returns the compile jobs of fe still running.
func (fe *fileEntry) unsettled() []*compileJob {
	var out []*compileJob
	for _, j := range fe.jobs {
		if !j.settled() {
			out = append(out, j)
		}
	}
	return out
}

// outcome is what the settled file amounts to: every problem (parse and
// schema) or the compiled schemas.
func (fe *fileEntry) outcome() (map[int]*compileJob, FieldErrors) {
	errs := append(FieldErrors(nil), fe.errs...)
	schemas := map[int]*compileJob{}
	for i, j := range fe.jobs {
		if j.usable() {
			schemas[i] = j
			continue
		}
		field := "args"
		if i >= 0 {
			field = fmt.Sprintf("variants[%d].args", i)
		}
		errs = append(errs, &FieldError{Field: field, Line: fe.meta.Line(field), Msg: j.errMsg})
	}
	sortByLine(errs)
	return schemas, capErrors(errs)
}

// readFile returns the parsed file at p, re-reading it only when its size,
// time or contents changed, and starting (creating) the compile of schemas
// not compiled yet. It returns nil if p does not exist. Only a regular file
// is read, without blocking and at most MaxMetaSize bytes of it: a named pipe
// or a device (or a symlink to one, even one swapped in after the check) is
// a problem of that file, never a stall of the registry.
func (r *Registry) readFile(p string) *fileEntry {
	if fe, ok := r.fetched[p]; ok {
		return fe // prefetched (the only way while names resolve in parallel)
	}
	return r.storeFile(p, loadFile(p, r.files[p], r.regular[p], r.snapshotLocked()[p]))
}

// loaded is what loadFile found at a path.
type loaded struct {
	fe *fileEntry // nil: the file is gone
	// unchanged: fe is the old entry, whose key becomes key when that is
	// not zero (the contents were read and compared: its times changed).
	unchanged    bool
	key          fileKey
	forgetOld    bool // the old entry no longer applies
	parsedAfresh bool // fe is new: its schemas are still to be scheduled
	schemas      []schemaPrep
}

// loadFile reads and parses the .meta file at p, unless old (the entry read
// before, or nil) still describes it. It touches no registry state, so
// several run at once (see prefetchLocked).
//
// listedRegular says the directory listing of this update showed p as a
// regular file (not a symlink): the path is then not checked before it is
// opened (see fileio.ReadListedRegular).
//
// snap, when not nil, is p's entry in the catalog snapshot: if p is
// unchanged since (one stat), its parse is taken from there.
func loadFile(p string, old *fileEntry, listedRegular bool, snap *snapEntry) loaded {
	if old == nil && snap != nil {
		if l, ok := loadSnapped(p, snap); ok {
			return l
		}
	}
	var raw []byte
	var fi fs.FileInfo
	var err error
	if old != nil {
		if fi, err = os.Stat(p); err == nil && fi.Mode().IsRegular() && old.key.size == fi.Size() && old.key.mtime == fi.ModTime().UnixNano() {
			return loaded{fe: old, unchanged: true}
		}
	}
	switch {
	case err == nil && listedRegular && old == nil:
		raw, fi, err = fileio.ReadListedRegular(p, MaxMetaSize)
	case err == nil:
		raw, fi, err = fileio.ReadRegularInfo(p, MaxMetaSize)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return loaded{forgetOld: true}
	case errors.Is(err, fileio.ErrNotRegular):
		return loaded{forgetOld: true, fe: &fileEntry{errs: FieldErrors{{Msg: pathErrMsg(err) + "; a .meta must be a JSON file"}}}}
	case errors.Is(err, fileio.ErrTooLarge):
		return loaded{forgetOld: true, fe: &fileEntry{errs: FieldErrors{{Msg: fmt.Sprintf("the file is larger than %d bytes, the limit: shorten the prompt", MaxMetaSize)}}}}
	case err != nil:
		return loaded{forgetOld: true, fe: &fileEntry{errs: FieldErrors{{Msg: "cannot read: " + pathErrMsg(err)}}}}
	}
	sum := sha256.Sum256(raw)
	st, _ := fi.Sys().(*syscall.Stat_t)
	if old != nil && old.sum == sum {
		return loaded{fe: old, unchanged: true, key: keyOf(st)}
	}
	fe := &fileEntry{key: keyOf(st), sum: sum}
	fe.meta, fe.errs = parseMeta(raw)
	var schemas []schemaPrep
	if fe.meta != nil {
		fe.meta.lines.fromFile(p, sum)
		schemas = prepareSchemas(fe.meta)
	}
	return loaded{fe: fe, parsedAfresh: true, schemas: schemas}
}

// loadSnapped is loadFile from the catalog snapshot's entry for p, if p
// is the file the entry was made from (see fileKey).
func loadSnapped(p string, e *snapEntry) (loaded, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || keyOf(&st) != e.key {
		return loaded{}, false
	}
	m, err := e.decodeMeta(p)
	if err != nil {
		return loaded{}, false
	}
	fe := &fileEntry{key: e.key, snapped: true, sum: e.sum, meta: m}
	return loaded{fe: fe, parsedAfresh: true, schemas: prepareSchemas(m)}, true
}

// storeFile records what loadFile found and schedules the compiles of a
// newly parsed file's schemas.
func (r *Registry) storeFile(p string, l loaded) *fileEntry {
	switch {
	case l.unchanged:
		if l.key != (fileKey{}) {
			l.fe.key = l.key
		}
		return l.fe
	case l.forgetOld:
		delete(r.files, p)
		return l.fe
	}
	fe := l.fe
	if l.parsedAfresh && fe.meta != nil {
		r.addJobs(fe, l.schemas)
	}
	r.files[p] = fe
	return fe
}
