package registry

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
}

// Registry holds the current Catalog and keeps it up to date.
type Registry struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex              // guards the fields below and serialises updates
	files   map[string]*fileEntry   // .meta path → parsed contents
	results map[string]*result      // tool name → resolution
	present []map[string]bool       // per dir: names with a .meta there
	schemas schemaCache             // compiled schemas by content
	rev     uint64                  // revision of the last published catalog
	cur     atomic.Pointer[Catalog] // readable without mu

	subMu sync.Mutex
	subs  map[*subscriber]struct{}
}

// fileEntry caches one parsed .meta file.
type fileEntry struct {
	size    int64
	mtime   time.Time
	sum     [32]byte
	raw     []byte
	meta    *Meta
	schemas map[int]*jsonschema.Schema
	err     error
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
	r := &Registry{opts: opts, log: opts.Logger, files: map[string]*fileEntry{}, results: map[string]*result{}, schemas: schemaCache{},
		present: make([]map[string]bool, len(opts.Dirs)), subs: map[*subscriber]struct{}{}}
	for i := range r.present {
		r.present[i] = map[string]bool{}
	}
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
func (r *Registry) Load(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rescanLocked(ctx)
}

func (r *Registry) rescanLocked(ctx context.Context) error {
	names := map[string]bool{}
	for n := range r.results {
		names[n] = true
	}
	seenFiles := map[string]bool{}
	listing := map[string]map[string]bool{}
	for i, dir := range r.opts.Dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.present[i] = map[string]bool{}
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("cannot read tool directory", "dir", dir, "err", err)
		}
		listing[dir] = make(map[string]bool, len(ents))
		for _, e := range ents {
			listing[dir][e.Name()] = true
			n, ok := metaName(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			r.present[i][n] = true
			names[n] = true
			seenFiles[filepath.Join(dir, e.Name())] = true
		}
	}
	for p := range r.files {
		if !seenFiles[p] {
			delete(r.files, p)
		}
	}
	if len(r.schemas) > 2*len(r.files)+64 { // edits left stale schemas behind
		r.schemas = schemaCache{}
	}
	return r.updateLocked(names, listing)
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
// just read.
func (r *Registry) updateLocked(names map[string]bool, listing map[string]map[string]bool) error {
	changed := map[string]bool{}
	h := newMemoHost(r.opts.Host, listing)
	for n := range names {
		res := r.resolveName(n, h)
		old := r.results[n]
		if res == nil {
			if old != nil {
				delete(r.results, n)
				changed[n] = true
			}
			continue
		}
		if old == nil || old.fp != res.fp {
			r.results[n] = res
			changed[n] = true
		}
	}
	if len(changed) == 0 {
		return nil
	}
	r.publishLocked(changed)
	return nil
}

// resolveName decides what name means across the directories.
func (r *Registry) resolveName(name string, h Host) *result {
	res := &result{}
	var fp strings.Builder
	if err := ValidName(name); err != nil {
		for i, dir := range r.opts.Dirs {
			if r.present[i][name] {
				p := filepath.Join(dir, name+".meta")
				res.problems = append(res.problems, Problem{Name: name, File: p, Msg: "bad tool name: " + err.Error() + "; rename the file"})
				fmt.Fprintf(&fp, "P%s\x00", p)
			}
		}
		if len(res.problems) == 0 {
			return nil
		}
		res.fp = fp.String()
		return res
	}
	found := false
	for i, dir := range r.opts.Dirs {
		if !r.present[i][name] {
			continue
		}
		found = true
		p := filepath.Join(dir, name+".meta")
		fe := r.readFile(p)
		if fe == nil { // vanished between listing and reading
			continue
		}
		if fe.err != nil {
			res.problems = append(res.problems, problemOf(name, p, fe.err))
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, fe.err)
			continue
		}
		t, hiddenWhy, err := resolve(name, p, fe.sum, fe.meta, fe.schemas, h)
		switch {
		case err != nil:
			res.problems = append(res.problems, problemOf(name, p, err))
			fmt.Fprintf(&fp, "P%s\x00%s\x00", p, err)
		case t == nil:
			if res.tool == nil && res.hidden == nil {
				res.hidden = &Hidden{Name: name, File: p, Reason: hiddenWhy}
				fmt.Fprintf(&fp, "H%s\x00%s\x00", p, hiddenWhy)
			}
		case res.tool == nil:
			res.tool = t
			res.hidden = nil
			fmt.Fprintf(&fp, "T%s\x00", t.Hash)
		default:
			res.shadows = append(res.shadows, Shadow{Name: name, File: p, ShadowedBy: res.tool.File})
			fmt.Fprintf(&fp, "S%s\x00", p)
		}
	}
	if !found {
		return nil
	}
	if res.tool != nil {
		res.hidden = nil
	}
	res.fp = fp.String()
	return res
}

func problemOf(name, file string, err error) Problem {
	var fe *fieldError
	if errors.As(err, &fe) {
		return Problem{Name: name, File: file, Field: fe.Field, Line: fe.Line, Msg: fe.Msg}
	}
	return Problem{Name: name, File: file, Msg: err.Error()}
}

// readFile returns the parsed file at p, re-reading it only when its size,
// time or contents changed. It returns nil if p does not exist.
func (r *Registry) readFile(p string) *fileEntry {
	fi, err := os.Stat(p)
	if err != nil {
		delete(r.files, p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return &fileEntry{err: fmt.Errorf("cannot read: %w", err)}
	}
	if old := r.files[p]; old != nil && old.size == fi.Size() && old.mtime.Equal(fi.ModTime()) {
		return old
	}
	if !fi.Mode().IsRegular() {
		return &fileEntry{err: errors.New("not a regular file; a .meta must be a JSON file")}
	}
	if fi.Size() > MaxMetaSize {
		return &fileEntry{err: fmt.Errorf("file is %d bytes; the limit is %d: shorten the prompt", fi.Size(), MaxMetaSize)}
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return &fileEntry{err: fmt.Errorf("cannot read: %w", err)}
	}
	sum := sha256.Sum256(raw)
	if old := r.files[p]; old != nil && old.sum == sum {
		old.size, old.mtime = fi.Size(), fi.ModTime()
		return old
	}
	fe := &fileEntry{size: fi.Size(), mtime: fi.ModTime(), sum: sum, raw: raw}
	name := strings.TrimSuffix(filepath.Base(p), ".meta")
	fe.meta, fe.err = ParseMeta(raw)
	if fe.err == nil {
		fe.schemas, fe.err = compileSchemas(name, fe.meta, r.schemas)
	}
	if fe.err != nil {
		fe.meta, fe.raw = nil, nil
	}
	r.files[p] = fe
	return fe
}

// publishLocked builds the catalog from r.results and sends the change.
func (r *Registry) publishLocked(changed map[string]bool) {
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
