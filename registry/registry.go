package registry

import (
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
