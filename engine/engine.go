package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
	"github.com/toolsrv/toolsrv/usage"
)

// Options configure an Engine. The zero value serves $OLLIE_TOOLS_PATH with
// the built-in embedder, the index cached under the user's cache
// directory, and the thresholds in effect for that embedder.
type Options struct {
	// Dirs are the tool directories, earliest first (registry.DefaultDirs
	// when empty); Host is what variants resolve against (this machine).
	Dirs []string
	Host registry.Host

	// Embedder, when set, is used as is (shared between engines, say);
	// otherwise EmbedderName (one of embed.Drivers(); "" is
	// embed.Default) and Embed open one.
	Embedder     embed.Embedder
	EmbedderName string
	Embed        embed.Options

	// NoIndex skips the index (and the embedder and thresholds): for front
	// ends that list, show, validate or call only.
	NoIndex bool
	// CacheDir holds the index cache (under $XDG_CACHE_HOME, else
	// ~/.cache: toolsrv/<embedder>); NoCache keeps the index in memory.
	CacheDir string
	NoCache  bool
	// LexicalWeight is the hybrid's lexical weight (0: the index default).
	LexicalWeight float64
	// NoLearned ranks with the fixed fusion (no learned last step).
	NoLearned bool
	// Progress, when set, is told how embedding goes.
	Progress func(done, total int)

	// Thresholds is a thresholds file (see thresholds.Load for where it is
	// looked for otherwise); NoThresholds offers plain rankings.
	Thresholds   string
	NoThresholds bool
	// RankTimeout bounds a ranking (2 s): past it, the answer is lexical
	// and says so.
	RankTimeout time.Duration
	// DefaultLimit is the limit of a request that gives none
	// (Request.Limit; 0: none, the thresholds alone decide).
	DefaultLimit int

	// Runner, when set, makes calls possible with these options.
	Runner *exec.Options
	// Usage, when set, is the usage history: calls linked to a request
	// (a cited answer, or CallRequest.Request) are recorded in it, and the
	// ranking learns from it (index.Index.SetUsage). The engine owns it:
	// Close closes it.
	Usage usage.Store
	// UsageLater loads the usage history (and the tools' examples) in
	// Run, in the background, instead of in New: a server starts at once
	// and ranks without its history for the moment the history takes to
	// apply (about a second at 100k events). A command that ranks once
	// leaves it unset, so that its one ranking has the history.
	UsageLater bool
	// SharedRunner, when set, is used instead of making one from Runner:
	// a runner the caller shares with providers that start processes (MCP
	// servers run under the same sandbox runner, limits and budget).
	SharedRunner *exec.Runner

	// Providers add tools defined elsewhere (MCP servers, remote
	// toolsrvs) to the catalog; New waits up to ProviderWait
	// (DefaultProviderWait) for their first tools.
	Providers    []Provider
	ProviderWait time.Duration

	// NoTools, when set, says why a catalog without a tool has none and
	// what to do about it (a server started before its tool directories
	// exist or hold a tool): an answer ranked on a catalog without tools
	// is "no tool fits" with that reason, which clients show.
	NoTools func(*registry.Catalog) string

	// Getenv reads the environment (os.Getenv); Logger gets events
	// (slog.Default()).
	Getenv func(string) string
	Logger *slog.Logger
}

// Engine is toolsrv in one value. It is safe for concurrent use.
type Engine struct {
	opts     Options
	log      *slog.Logger
	reg      *registry.Registry
	ix       *index.Index
	emb      embed.Embedder // the index's embedder (shared by sessions' indexes)
	cacheDir string         // the index cache directory ("" with NoCache)
	pol      *thresholds.Policy
	src      thresholds.Source
	runner   *exec.Runner
	warnings []string

	providers map[string]Provider
	provWG    sync.WaitGroup // the providers' Run

	mu      sync.Mutex
	changes <-chan registry.Change // subscribed in New, so Run misses nothing
	cancel  context.CancelFunc     // ends the subscription and the providers

	answers *answers // recent answers by ID (answers.go)
	// follow follows the usage history (nil without one: usageview.go);
	// usageVersion is its version the index has, examples the digest of
	// the tools' examples it has; usageMu serialises loading them.
	follow       *usage.Follower
	usageVersion atomic.Int64
	examples     atomic.Pointer[string]
	usageMu      sync.Mutex
	closeUsage   sync.Once
}

// New loads the catalog and, unless NoIndex, the embedder, the index and
// the thresholds; with Options.Runner, the runner. An index that could not
// embed everything still answers (lexically, and says so); a failure to
// load the tools, the thresholds or the runner is an error.
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(o.Dirs) == 0 {
		o.Dirs = registry.DefaultDirs(o.Getenv)
	}
	if o.RankTimeout <= 0 {
		o.RankTimeout = 2 * time.Second
	}
	e := &Engine{opts: o, log: o.Logger}
	if o.Usage != nil {
		e.follow = usage.NewFollower(o.Usage)
	}
	e.answers = newAnswers(nil, e.unused)
	e.reg = registry.New(registry.Options{Dirs: o.Dirs, Host: o.Host, Logger: o.Logger, SchemaCache: e.schemaCache(),
		CatalogCache: e.catalogCache()})
	// Subscribe before the first load: Run follows from there.
	sctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.changes = e.reg.Subscribe(sctx)
	// The registry's catalog snapshot is read first (its goroutine then
	// has the second core at once), the embedder (the built-in one decodes
	// its table) and the index with its cache file are made while the
	// registry reads the tool files.
	e.reg.Preload()
	var prepared chan preparedIndex
	if !o.NoIndex {
		prepared = make(chan preparedIndex, 1)
		dirs := e.reg.Dirs()
		go func() { prepared <- e.prepareIndex(ctx, dirs) }()
	}
	// On failure New returns only once that work has ended too.
	abandon := func() {
		if prepared != nil {
			<-prepared
		}
	}
	if err := e.reg.Load(ctx); err != nil {
		abandon()
		cancel()
		return nil, fmt.Errorf("loading tools: %w", err)
	}
	if err := e.startProviders(ctx, sctx); err != nil {
		abandon()
		e.Close()
		return nil, err
	}
	if !o.NoIndex {
		p := <-prepared
		if p.err != nil {
			e.Close()
			return nil, p.err
		}
		e.emb, e.cacheDir, e.ix = p.emb, p.dir, p.ix
		if err := e.openIndex(ctx); err != nil {
			e.Close()
			return nil, err
		}
		if !o.UsageLater {
			e.loadUsage(ctx)
		}
	}
	if o.SharedRunner != nil {
		e.runner = o.SharedRunner
	} else if o.Runner != nil {
		r, err := exec.NewRunner(*o.Runner)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.runner = r
	}
	return e, nil
}

// preparedIndex is what prepareIndex made.
type preparedIndex struct {
	emb embed.Embedder
	dir string // the index cache directory
	ix  *index.Index
	err error
}

// prepareIndex opens the embedder and makes the index, reading its cache
// file for a catalog over dirs. It touches no field of e (it runs while New
// loads the registry).
func (e *Engine) prepareIndex(ctx context.Context, dirs []string) preparedIndex {
	emb, err := e.openEmbedder()
	if err != nil {
		return preparedIndex{err: err}
	}
	dir := e.opts.CacheDir
	if dir == "" && !e.opts.NoCache {
		root := e.cacheRoot()
		if root == "" {
			return preparedIndex{err: errors.New("no cache directory: set $XDG_CACHE_HOME or $HOME, or give a cache directory (--cache DIR) or none (--no-cache)")}
		}
		dir = index.CacheDirUnder(root, emb.ID())
	}
	io := e.indexOptionsIn(dir)
	io.Progress = e.opts.Progress
	// The built usage view is kept in the store's own private place, which
	// the store removes when it forgets (a session's index shares the
	// engine's view and saves none).
	if e.follow != nil && !e.opts.NoCache {
		io.UsageViewPath = e.follow.DerivedPath()
	}
	ix := index.New(emb, io)
	ix.Preload(ctx, dirs)
	return preparedIndex{emb: emb, dir: dir, ix: ix}
}

// openEmbedder returns Options.Embedder or opens the one named.
func (e *Engine) openEmbedder() (embed.Embedder, error) {
	o := e.opts
	if o.Embedder != nil {
		return o.Embedder, nil
	}
	eo := o.Embed
	if eo.Getenv == nil {
		eo.Getenv = o.Getenv
	}
	if eo.Logger == nil {
		eo.Logger = o.Logger
	}
	return embed.Open(o.EmbedderName, eo)
}

// openIndex brings the prepared index in line with the loaded catalog and
// loads the thresholds.
func (e *Engine) openIndex(ctx context.Context) error {
	o := e.opts
	if err := e.ix.Sync(ctx, e.reg.Catalog()); err != nil {
		if e.ix.Stats().Tools == 0 && len(e.reg.Catalog().Tools) > 0 {
			return fmt.Errorf("building the index: %w", err)
		}
		// The index answers lexically; Rank says it is degraded.
		e.warnings = append(e.warnings, err.Error())
	}
	if o.NoThresholds {
		return nil
	}
	pol, src, err := thresholds.Load(e.ix.Stats().Embedder, thresholds.LoadOptions{Path: o.Thresholds, Getenv: o.Getenv})
	if err != nil {
		return fmt.Errorf("thresholds: %w", err)
	}
	e.pol, e.src = &pol, src
	w := o.LexicalWeight
	if w == 0 {
		w = index.DefaultLexicalWeight
	}
	for _, s := range []string{src.Warning, src.LexicalWeightWarning(w), src.ScoresWarning(e.ix.LearnedID())} {
		if s != "" {
			e.warnings = append(e.warnings, s)
		}
	}
	return nil
}

// indexOptions are the options of the engine's index, and of a session's
// (Overlay).
func (e *Engine) indexOptions() index.Options { return e.indexOptionsIn(e.cacheDir) }

// indexOptionsIn are the index options with the cache in dir.
func (e *Engine) indexOptionsIn(dir string) index.Options {
	o := e.opts
	io := index.Options{CacheDir: dir, NoCache: o.NoCache, Logger: o.Logger,
		LexicalWeight: o.LexicalWeight, NoLastStep: o.NoLearned}
	io.UsageEmbedder = usageEmbedder()
	return io
}

// cacheRoot is the user's cache directory ($XDG_CACHE_HOME, else
// ~/.cache), or "" when there is none.
func (e *Engine) cacheRoot() string {
	root := e.opts.Getenv("XDG_CACHE_HOME")
	if root == "" && e.opts.Getenv("HOME") != "" {
		root = filepath.Join(e.opts.Getenv("HOME"), ".cache")
	}
	return root
}

// schemaCache is the registry's known-schemas file: in the index cache
// directory when one is given, else under the user's cache directory;
// none with NoCache.
func (e *Engine) schemaCache() string {
	switch {
	case e.opts.NoCache:
		return ""
	case e.opts.CacheDir != "":
		return filepath.Join(e.opts.CacheDir, "schemas.known")
	case e.cacheRoot() != "":
		return filepath.Join(e.cacheRoot(), "toolsrv", "schemas.known")
	}
	return ""
}

// catalogCache is the registry's catalog snapshot file (see
// registry.Options.CatalogCache), beside the known-schemas file.
func (e *Engine) catalogCache() string {
	if known := e.schemaCache(); known != "" {
		return registry.CatalogCacheFile(filepath.Dir(known), e.opts.Dirs)
	}
	return ""
}

// Run keeps the engine live until ctx ends: it watches the tool
// directories and brings the index up to date with every change (the
// catalog itself is always current). It returns when ctx ends, or with
// the watcher's error.
func (e *Engine) Run(ctx context.Context) error {
	e.mu.Lock()
	changes := e.changes
	e.changes = nil
	e.mu.Unlock()
	if changes == nil {
		return errors.New("engine: Run called twice")
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if e.ix != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.ix.Follow(ctx, changes)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.followUsage(ctx)
		}()
	}
	err := e.reg.Watch(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Close releases what New subscribed to and stops the providers (waiting
// for them). An engine that is Run is closed by cancelling Run's context
// and then calling Close.
func (e *Engine) Close() {
	e.cancel()
	e.provWG.Wait()
	e.answers.close()
	if e.ix != nil {
		e.ix.WaitSaves()
	}
	if e.opts.Usage != nil {
		e.closeUsage.Do(func() { e.opts.Usage.Close() })
	}
}

// Registry is the live catalog.
func (e *Engine) Registry() *registry.Registry { return e.reg }

// Catalog is the current catalog snapshot.
func (e *Engine) Catalog() *registry.Catalog { return e.reg.Catalog() }

// Index is the ranking index (nil with NoIndex).
func (e *Engine) Index() *index.Index { return e.ix }

// Runner runs calls (nil without Options.Runner).
func (e *Engine) Runner() *exec.Runner { return e.runner }

// Policy is the thresholds in effect (nil with NoThresholds or NoIndex),
// and where they came from.
func (e *Engine) Policy() (*thresholds.Policy, thresholds.Source) { return e.pol, e.src }

// Warnings are what New found usable but not right: thresholds tuned for
// another model, an index that could not embed everything, ...
func (e *Engine) Warnings() []string { return append([]string(nil), e.warnings...) }
