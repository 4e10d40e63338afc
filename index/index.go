package index

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/learn"
)

// DefaultLexicalWeight is the hybrid's lexical weight unless
// Options.LexicalWeight says otherwise.
const DefaultLexicalWeight = 0.5

// Options configure an Index. The zero value is usable.
type Options struct {
	// CacheDir holds the persisted index files of this embedder; ""
	// means DefaultCacheDir(emb.ID()). NoCache keeps everything in memory.
	// The directory is made private (fileio.PrivateDir: 0700; another
	// user's or a shared one is refused and the index keeps no cache), its
	// files are 0600, and at the first load the temporary files of writers
	// that were killed are removed (fileio.RemoveStaleTemps).
	CacheDir string
	NoCache  bool
	// ReadOnlyCache reads the cache file but never writes it: an index
	// over another catalog's tools plus a few of its own (a session's
	// tools, engine.Overlay) starts from the vectors that catalog's index
	// saved, and leaves its file alone.
	ReadOnlyCache bool
	// Logger receives rebuild, cache and embedder events (slog.Default()).
	Logger *slog.Logger
	// LexicalWeight is α in hybrid = α·lexical + (1−α)·dense; 0 means 0.5.
	LexicalWeight float64
	// ContextWeight is how much the conversation context counts next to the
	// message itself, lexically and densely; 0 means 0.3.
	ContextWeight float64
	// RefitShare: a CatalogAware embedder is fitted again when more than
	// this share of the catalog was embedded since the last fit; 0 means 0.25.
	RefitShare float64
	// BatchSize is the number of documents per EmbedDocuments call (64);
	// Workers is how many calls run at once (GOMAXPROCS, at most 4).
	BatchSize int
	Workers   int
	// Progress, if set, is called while documents are embedded.
	Progress func(done, total int)
	// SaveDelay is how long Follow waits for quiet before saving (2 s).
	SaveDelay time.Duration
	// RetryEvery is how often Follow retries documents left without a
	// vector because the embedder failed (30 s).
	RetryEvery time.Duration
	// LastStep is the learned last step (nil: learn.Default()); NoLastStep
	// turns it off (rankings are the fixed fusion). See laststep.go.
	LastStep   *learn.Model
	NoLastStep bool
	// UsageEmbedder embeds the requests of the usage history and the
	// message for the usage signal (usage.go): the built-in embedder in
	// toolsrv. nil: the usage signal is lexical only.
	UsageEmbedder embed.Embedder
	// UsageViewPath, if set, is the file the built usage view and its
	// weight are saved in between runs (usagesaved.go): a private place
	// of the usage store's (usage.Derived). "": built at every start.
	// The requests' vectors are cached beside it (PATH.EMBEDDER.vec;
	// without it, in the cache directory): what the store removes when it
	// forgets, it removes with them.
	UsageViewPath string
}

// Index ranks the tools of a catalog. It is safe for concurrent use: Rank
// may run while Sync or Follow update the index.
type Index struct {
	usage usageSignal // the usage history (usage.go)
	base  embed.Embedder
	aware embed.CatalogAware // base, if it adapts to the catalog
	opts  Options
	log   *slog.Logger

	upd    sync.Mutex // serialises updates and saves; guards the fields below
	loaded bool       // the cache was looked at
	// preloaded are the tool directories Preload read the cache for.
	preloaded []string
	path      string // the cache file ("" without a cache)
	// lib is the embedder's vector library (library.go; nil for a
	// CatalogAware embedder, or without a cache).
	lib     *vecLibrary
	state   []byte // fitted embedder state
	fitDocs int
	drift   int
	dirty   bool
	// lexc is the lexical cache file read with the cache (lexcache.go),
	// until the first update takes it; lexDirty: documents were tokenized
	// since the file was last written; tokenized counts the documents
	// tokenized by this index.
	lexc      *lexCache
	lexDirty  bool
	tokenized int
	// program is fileio.ExecutableID ("" until the cache is read or written);
	// recalled counts the documents recalled from the document memo.
	program  string
	recalled int
	// pre is the view Preload filled from the caches, until the first
	// update adopts or drops it (prefill.go); prefilled counts adoptions.
	pre       *view
	prefilled int

	mu sync.RWMutex // guards v
	v  *view

	cachePath atomic.Pointer[string] // ix.path, readable without upd

	// The answerability's calibration (probes.go): probes is read by Rank;
	// probeDrift (tools changed since the probes were ranked) and
	// cachedProbes (what the cache file held) are guarded by upd.
	probes       atomic.Pointer[probeState]
	probeDrift   int
	cachedProbes *probeState

	brk breaker

	scratch sync.Pool // *rankScratch
}

// New makes an empty index over emb. Call Sync to build it.
func New(emb embed.Embedder, opts Options) *Index {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LexicalWeight <= 0 || opts.LexicalWeight > 1 {
		opts.LexicalWeight = DefaultLexicalWeight
	}
	if opts.ContextWeight <= 0 {
		opts.ContextWeight = 0.3
	}
	if opts.RefitShare <= 0 {
		opts.RefitShare = 0.25
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 64
	}
	if opts.Workers <= 0 {
		opts.Workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if opts.SaveDelay <= 0 {
		opts.SaveDelay = 2 * time.Second
	}
	if opts.RetryEvery <= 0 {
		opts.RetryEvery = 30 * time.Second
	}
	ix := &Index{base: emb, opts: opts, log: opts.Logger}
	ix.aware, _ = emb.(embed.CatalogAware)
	return ix
}

func (ix *Index) missing() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.v == nil {
		return 0
	}
	return ix.v.missing
}

// Stats describes the index.
type Stats struct {
	Tools   int `json:"tools"`
	Vectors int `json:"vectors"`
	Missing int `json:"missing"`
	Dim     int `json:"dim"`
	// Embedder is the embedder's own ID (what thresholds are calibrated
	// for); Model is the ID of the embedder that made the vectors, which for
	// a CatalogAware embedder includes the digest of its fit.
	Embedder string `json:"embedder"`
	Model    string `json:"model"`
	Revision uint64 `json:"revision"`
	Cache    string `json:"cache,omitempty"`
}

// Stats reports the index size and state.
func (ix *Index) Stats() Stats {
	s := Stats{Embedder: ix.base.ID()}
	if p := ix.cachePath.Load(); p != nil {
		s.Cache = *p
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if v := ix.v; v != nil {
		s.Tools, s.Missing, s.Dim, s.Revision, s.Model = len(v.byName), v.missing, v.dim, v.rev, v.emb.ID()
		if v.st != nil {
			s.Vectors = v.st.count()
		}
	}
	return s
}
