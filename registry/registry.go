package registry

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/parallel"
)

// MaxMetaSize is the largest .meta file read.
const MaxMetaSize = 4 << 20

// Options configure a Registry.
type Options struct {
	// Dirs are the tool directories, earliest wins. Empty: DefaultDirs().
	Dirs []string
	// Host is what variants and commands are resolved against (LocalHost{}).
	Host Host
	// Logger receives load and watch events (slog.Default()).
	Logger *slog.Logger
	// Debounce is the quiet period before a burst of changes is applied
	// (100 ms).
	Debounce time.Duration
	// Rescan is the period of a safety full rescan while watching (30 s);
	// negative disables it.
	Rescan time.Duration
	// CompileTimeout bounds the compilation of one argument schema
	// (DefaultCompileTimeout). A schema that takes longer makes its tool
	// invalid; compiles never hold up other tools.
	CompileTimeout time.Duration
	// SchemaCache is a file that remembers which argument schemas
	// compiled, so that a restart takes them as valid and compiles each
	// when a call first needs it (see knownschemas.go); "" keeps none.
	// Its directory and CatalogCache's are made private when New opens
	// them, or refused (cachedir.go); their files are 0600.
	SchemaCache string
	// CatalogCache is a file that keeps what every .meta parsed into
	// between runs, so that a load takes an unchanged file's parse from
	// it instead of reading the file (see snapshot.go); "" keeps none.
	// CatalogCacheFile names one per list of tool directories.
	CatalogCache string
}

// Registry holds the current Catalog and keeps it up to date.
type Registry struct {
	opts Options
	log  *slog.Logger

	// compile compiles one schema (compileSchema; tests replace it).
	compile func([]byte) (*jsonschema.Schema, error)
	// now is the clock of the catalog snapshot's racy rule (time.Now;
	// tests move it on).
	now func() time.Time

	mu      sync.Mutex              // guards the fields below and serialises updates
	files   map[string]*fileEntry   // .meta path → parsed contents
	results map[string]*result      // tool name → resolution
	present []map[string]bool       // per dir: names with a .meta there
	schemas schemaCache             // schema compile jobs by content
	fresh   map[*compileJob]bool    // jobs created by the update in progress
	dirty   map[string]bool         // names changed since the last publish
	fetched map[string]*fileEntry   // files read ahead for the update in progress
	regular map[string]bool         // .meta paths the rescan in progress listed as regular files
	rev     uint64                  // revision of the last published catalog
	cur     atomic.Pointer[Catalog] // readable without mu
	known   *knownSchemas           // schemas that compiled before (guarded by mu)
	// snap is the catalog snapshot while the first Load uses it (nil
	// otherwise), once snapRead has delivered it; snapSince is when that
	// Load started (see keepable).
	snap      snapshot
	snapRead  chan snapshot
	snapSince time.Time
	// provided holds each provider's tools (see Provide).
	provided map[string]*provision

	subMu sync.Mutex
	subs  map[*subscriber]struct{}
}

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

// result is what one name resolves to across all directories.
type result struct {
	tool     *Tool
	hidden   *Hidden
	problems []Problem
	shadows  []Shadow
	fp       string
}

// DefaultDirs returns the directories of OLLIE_TOOLS_PATH (colon separated)
// or, when it is unset, ~/.config/ollie/tools.
func DefaultDirs(getenv func(string) string) []string {
	if p := getenv("OLLIE_TOOLS_PATH"); p != "" {
		var out []string
		for _, d := range strings.Split(p, ":") {
			if d != "" {
				out = append(out, d)
			}
		}
		return out
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return []string{filepath.Join(home, ".config", "ollie", "tools")}
}

// New returns a registry over opts.Dirs. Call Load before reading Catalog.
func New(opts Options) *Registry {
	if len(opts.Dirs) == 0 {
		opts.Dirs = DefaultDirs(os.Getenv)
	}
	for i, d := range opts.Dirs {
		opts.Dirs[i] = filepath.Clean(d) // inDir relies on it
		if abs, err := filepath.Abs(d); err == nil {
			opts.Dirs[i] = abs
		}
	}
	if opts.Host == nil {
		opts.Host = LocalHost{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Debounce == 0 {
		opts.Debounce = 100 * time.Millisecond
	}
	if opts.Rescan == 0 {
		opts.Rescan = 30 * time.Second
	}
	if opts.CompileTimeout <= 0 {
		opts.CompileTimeout = DefaultCompileTimeout
	}
	privateCaches(&opts, opts.Logger)
	r := &Registry{opts: opts, log: opts.Logger, compile: compileSchema, now: time.Now, files: map[string]*fileEntry{}, results: map[string]*result{},
		schemas: schemaCache{}, fresh: map[*compileJob]bool{}, dirty: map[string]bool{},
		present: make([]map[string]bool, len(opts.Dirs)), subs: map[*subscriber]struct{}{}}
	for i := range r.present {
		r.present[i] = map[string]bool{}
	}
	known, err := loadKnownSchemas(opts.SchemaCache)
	if err != nil {
		r.log.Warn("the known-schemas cache is unusable: every schema is compiled", "err", err)
	}
	r.known = known
	r.cur.Store(newCatalog(0, opts.Dirs, nil, nil, nil, nil))
	return r
}

// Dirs returns the tool directories, earliest first.
func (r *Registry) Dirs() []string { return append([]string(nil), r.opts.Dirs...) }

// Catalog returns the current snapshot. It never blocks on a reload.
func (r *Registry) Catalog() *Catalog { return r.cur.Load() }

// Load scans every directory from scratch (reusing parses of unchanged files)
// and publishes the result. A missing directory is not an error: it is simply
// empty until it appears.
//
// Load returns once the schemas it had to compile are compiled (or have
// missed Options.CompileTimeout) and the catalog shows them. It does not wait
// for a compile that another update (a watch event, a concurrent Load)
// started: that tool keeps its previous state until its compile ends.
func (r *Registry) Load(ctx context.Context) error {
	r.mu.Lock()
	r.openSnapshotLocked()
	p, err := r.rescanLocked(ctx, true)
	r.mu.Unlock()
	defer r.saveSnapshot()
	if err != nil {
		return err
	}
	if len(p.jobs) > 0 {
		select {
		case <-r.finish(p):
		case <-ctx.Done():
			return ctx.Err() // the compiles still finish and are published
		}
	}
	return nil
}

// Preload starts reading the catalog snapshot (Options.CatalogCache)
// that the first Load uses, so that it is read while the caller starts
// other work; Load starts it itself otherwise. Calling it first, before
// starting other goroutines, gives the read a core of its own at once.
func (r *Registry) Preload() {
	r.mu.Lock()
	r.openSnapshotLocked()
	r.mu.Unlock()
}

// openSnapshotLocked starts reading the catalog snapshot for the first
// Load, beside the listing of the directories (snapshotLocked waits for
// it).
func (r *Registry) openSnapshotLocked() {
	if r.opts.CatalogCache == "" || !r.snapSince.IsZero() { // read once
		return
	}
	r.snapSince = r.now()
	r.snapRead = make(chan snapshot, 1)
	go func() {
		s, err := readSnapshot(r.opts.CatalogCache, fileio.ExecutableID())
		if err != nil {
			r.log.Info("the catalog snapshot is unusable: every .meta file is read", "file", r.opts.CatalogCache, "err", err)
		}
		if s == nil {
			s = snapshot{}
		}
		r.snapRead <- s
	}()
}

// snapshotLocked is the catalog snapshot during the first Load (nil
// otherwise).
func (r *Registry) snapshotLocked() snapshot {
	if r.snapRead != nil {
		r.snap, r.snapRead = <-r.snapRead, nil
	}
	return r.snap
}

// saveSnapshot writes the catalog snapshot after the first Load, unless
// it holds what the file it read held, or nearly: while fewer than one
// file in snapSlack changed since it was written (read afresh, or gone),
// those few are read at each start, which costs less than rewriting (and
// syncing) the whole snapshot after every edit of one tool. A snapshot
// that cannot be written is logged: it only costs the next start time.
func (r *Registry) saveSnapshot() {
	r.mu.Lock()
	old := r.snapshotLocked()
	r.snap = nil
	if old == nil {
		r.mu.Unlock()
		return
	}
	// Counted before anything is gathered: a warm start writes nothing
	// and allocates nothing here.
	kept, fromOld := 0, 0
	for _, fe := range r.files {
		if fe.keepable(r.snapSince) {
			kept++
			if fe.snapped {
				fromOld++
			}
		}
	}
	// Files read afresh (edited or new) and entries not used (edited or
	// gone): an edit is both, so the larger of the two counts the changes.
	if changed := max(kept-fromOld, len(old)-fromOld); len(old) > 0 && changed*snapSlack < kept || changed == 0 {
		r.mu.Unlock()
		return
	}
	files := make([]snapFile, 0, kept)
	for p, fe := range r.files {
		if fe.keepable(r.snapSince) {
			files = append(files, snapFile{path: p, key: fe.key, sum: fe.sum, meta: fe.meta})
		}
	}
	r.mu.Unlock()
	if err := writeSnapshot(r.opts.CatalogCache, fileio.ExecutableID(), files); err != nil {
		r.log.Warn("cannot write the catalog snapshot; until it can be, every start reads every .meta file (is the cache directory writable?)", "file", r.opts.CatalogCache, "err", err)
	}
}

// saveKnown writes the known-schemas cache if schemas were added to it. A
// cache that cannot be written is logged: it only costs the next start
// time.
func (r *Registry) saveKnown() {
	r.mu.Lock()
	data := r.known.snapshot()
	r.mu.Unlock()
	if data == nil {
		return
	}
	if err := writeKnownSchemas(r.opts.SchemaCache, data); err != nil {
		r.log.Warn("cannot write the known-schemas cache", "file", r.opts.SchemaCache, "err", err)
	}
}

// pending is what an update left waiting for schema compiles it started:
// the jobs, and the tools that wait for them.
type pending struct {
	jobs  []*compileJob
	names map[string]bool
	// listing is the update's directory listing (see updateLocked), reused
	// when the names are resolved again.
	listing map[string]map[string]bool
}

// finish runs p's compiles off the lock and then re-resolves the tools that
// waited for them (and any tool another update found waiting for them). The
// channel is closed when the catalog shows the outcome.
func (r *Registry) finish(p pending) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(p.jobs) > 0 {
			runJobs(p.jobs, r.compile, r.opts.CompileTimeout)
			r.mu.Lock()
			r.known.add(p.jobs)
			names := p.names
			for _, j := range p.jobs {
				for n := range j.waiters {
					names[n] = true
				}
				clear(j.waiters)
			}
			p = r.updateLocked(names, p.listing, false)
			r.mu.Unlock()
		}
		r.saveKnown()
	}()
	return done
}

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

// updateLocked re-resolves the given names and publishes a new catalog if
// anything changed. listing, when not nil, holds the entries of directories
// just read. A name whose file waits for a schema compile keeps its previous
// state; the compiles this update created are returned for the caller to run
// (see finish), and when deferPublish is set and there are any, publishing is
// left to the caller too.
func (r *Registry) updateLocked(names map[string]bool, listing map[string]map[string]bool, deferPublish bool) pending {
	p := pending{names: map[string]bool{}, listing: listing}
	h := newMemoHost(r.opts.Host, listing)
	r.prefetchLocked(names)
	defer func() { r.fetched = nil }()
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	for i, o := range r.resolveAllLocked(list, h) {
		n, res, waits := list[i], o.res, o.waits
		if len(waits) > 0 {
			for _, j := range waits {
				if r.fresh[j] {
					p.names[n] = true
				} else {
					j.waiters[n] = true // its owner re-resolves n
				}
			}
			continue
		}
		old := r.results[n]
		if res == nil {
			if old != nil {
				delete(r.results, n)
				r.dirty[n] = true
			}
			continue
		}
		if old == nil || old.fp != res.fp {
			r.results[n] = res
			r.dirty[n] = true
		}
	}
	for j := range r.fresh {
		p.jobs = append(p.jobs, j)
	}
	r.fresh = map[*compileJob]bool{}
	if len(r.dirty) > 0 && !(deferPublish && len(p.jobs) > 0) {
		r.publishLocked()
	}
	return p
}

// resolution is what one name resolves to (see resolveName).
type resolution struct {
	res   *result
	waits []*compileJob
}

// resolveAllLocked resolves names. When the update read its files ahead
// (prefetchLocked), they are resolved on every core: resolving then only
// reads the registry (the update holds its lock) and asks the Host through
// h. Otherwise one by one (a file read on the way is stored).
func (r *Registry) resolveAllLocked(names []string, h *memoHost) []resolution {
	out := make([]resolution, len(names))
	resolve := func(i int) { out[i].res, out[i].waits = r.resolveName(names[i], h) }
	if r.fetched == nil {
		for i := range names {
			resolve(i)
		}
		return out
	}
	parallel.Each(len(names), resolve)
	return out
}

// resolveName decides what name means across the directories. If a file of
// the name waits for a schema compile, it returns those jobs instead.
func (r *Registry) resolveName(name string, h Host) (*result, []*compileJob) {
	res := &result{}
	var fp strings.Builder
	if err := ValidName(name); err != nil {
		for i, dir := range r.opts.Dirs {
			if r.present[i][name] {
				p := inDir(dir, name+".meta")
				res.problems = append(res.problems, Problem{Name: name, File: p, Msg: "bad tool name: " + err.Error() + "; rename the file"})
				fmt.Fprintf(&fp, "P%s\x00", p)
			}
		}
		if len(res.problems) == 0 {
			return nil, nil
		}
		res.fp = fp.String()
		return res, nil
	}
	found := false
	for i, dir := range r.opts.Dirs {
		if !r.present[i][name] {
			continue
		}
		found = true
		p := inDir(dir, name+".meta")
		fe := r.readFile(p)
		if fe == nil { // vanished between listing and reading
			continue
		}
		if waits := fe.unsettled(); len(waits) > 0 {
			return nil, waits
		}
		schemas, errs := fe.outcome()
		if len(errs) > 0 {
			res.problems = append(res.problems, problemsOf(name, p, errs, fe.meta)...)
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, errs)
			continue
		}
		t, hiddenWhy, err := resolve(name, p, dir, fe.sum, fe.meta, schemas, h)
		switch {
		case err != nil:
			res.problems = append(res.problems, problemsOf(name, p, err, fe.meta)...)
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, err)
		case t == nil:
			if res.tool == nil && res.hidden == nil {
				res.hidden = &Hidden{Name: name, File: p, Reason: hiddenWhy}
				fmt.Fprintf(&fp, "H%s\x00%s\x00", p, hiddenWhy)
			}
		case res.tool == nil:
			res.tool = t
			res.hidden = nil
			fp.WriteString("T" + t.Hash + "\x00")
		default:
			res.shadows = append(res.shadows, Shadow{Name: name, File: p, ShadowedBy: res.tool.File})
			fmt.Fprintf(&fp, "S%s\x00", p)
		}
	}
	if !found {
		return nil, nil
	}
	if res.tool != nil {
		res.hidden = nil
	}
	res.fp = fp.String()
	return res, nil
}

// problemsOf turns err into one Problem per FieldError it holds, with the
// line of the field's key filled in from m when the error lacks one.
func problemsOf(name, file string, err error, m *Meta) []Problem {
	var all FieldErrors
	var one *FieldError
	switch {
	case errors.As(err, &all):
	case errors.As(err, &one):
		all = FieldErrors{one}
	default:
		return []Problem{{Name: name, File: file, Msg: err.Error()}}
	}
	out := make([]Problem, 0, len(all))
	for _, fe := range all {
		line := fe.Line
		if line == 0 && fe.Field != "" && m != nil {
			line = m.Line(fe.Field)
		}
		out = append(out, Problem{Name: name, File: file, Field: fe.Field, Line: line, Msg: fe.Msg})
	}
	return out
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

// schemaPrep is one schema of a parsed file as its compile job needs it:
// checked against the bounds and hashed where the file is read (on every
// core, see prefetchLocked), so that attaching the job under the lock is a
// map lookup.
type schemaPrep struct {
	idx    int // -1: the top-level schema; else the variant's
	raw    json.RawMessage
	bounds string // why the schema is out of bounds ("" if it is not)
	key    [32]byte
}

// prepareSchema prepares one schema (the default when raw is empty).
func prepareSchema(idx int, raw json.RawMessage) schemaPrep {
	if len(raw) == 0 {
		raw = defaultArgs
	}
	p := schemaPrep{idx: idx, raw: raw, bounds: schemaBounds(raw)}
	if p.bounds == "" {
		p.key = sha256.Sum256(raw)
	}
	return p
}

// prepareSchemas prepares the top-level schema of m (the default when it
// sets none) and each variant's own.
func prepareSchemas(m *Meta) []schemaPrep {
	out := []schemaPrep{prepareSchema(-1, m.args())}
	for i, v := range m.Variants {
		if a := v.args(); a != nil {
			out = append(out, prepareSchema(i, a))
		}
	}
	return out
}

// addJobs attaches the compiles of a newly parsed file's schemas to fe
// (unless a schema is out of bounds: then that is one of fe's problems).
func (r *Registry) addJobs(fe *fileEntry, schemas []schemaPrep) {
	fe.jobs = map[int]*compileJob{}
	for _, p := range schemas {
		if p.bounds != "" {
			field := "args"
			if p.idx >= 0 {
				field = fmt.Sprintf("variants[%d].args", p.idx)
			}
			fe.errs = append(fe.errs, &FieldError{Field: field, Line: fe.meta.Line(field), Msg: p.bounds})
			continue
		}
		j, fresh := r.jobLocked(p.key, p.raw)
		if fresh {
			r.fresh[j] = true
		}
		fe.jobs[p.idx] = j
	}
	sortByLine(fe.errs)
}

// pathErrMsg is err without the path (a Problem names the file already).
func pathErrMsg(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// publishLocked builds the catalog from r.results and sends the change of
// every name changed since the last publish.
func (r *Registry) publishLocked() {
	changed := r.dirty
	r.dirty = map[string]bool{}
	prev := r.cur.Load()
	var tools []*Tool
	var hidden []Hidden
	var problems []Problem
	var shadows []Shadow
	for _, res := range r.results {
		if res.tool != nil {
			tools = append(tools, res.tool)
		}
		if res.hidden != nil {
			hidden = append(hidden, *res.hidden)
		}
		problems = append(problems, res.problems...)
		shadows = append(shadows, res.shadows...)
	}
	for _, p := range r.provided {
		tools = append(tools, p.tools...)
		hidden = append(hidden, p.hidden...)
		problems = append(problems, p.problems...)
	}
	r.rev++
	cat := newCatalog(r.rev, r.opts.Dirs, tools, hidden, problems, shadows)
	r.cur.Store(cat)
	ch := Change{Catalog: cat}
	for n := range changed {
		t, ok := cat.Get(n)
		old, had := prev.Get(n)
		switch {
		case ok && (!had || old.Hash != t.Hash):
			ch.Upserted = append(ch.Upserted, n)
		case !ok && had:
			ch.Removed = append(ch.Removed, n)
		}
	}
	r.log.Debug("catalog updated", "revision", cat.Revision, "tools", len(tools), "upserted", len(ch.Upserted),
		"removed", len(ch.Removed), "problems", len(problems))
	r.broadcast(ch)
}
