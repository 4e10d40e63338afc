package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	chromem "github.com/philippgille/chromem-go"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The vector library is chromem-go's work in the index: the persisted
// store of an embedder's document vectors, shared by every catalog the
// embedder indexes.
//
// An embedder whose vectors depend on the text and the model alone (one
// that is not CatalogAware: the Ollama embedder, whose every vector is a
// request to a server) keeps each document vector it made in one
// chromem-go collection per embedder, keyed by the document hash (the
// SHA-256 of the embedded text), persisted with chromem's own export
// (gob) in the cache directory: library-EMBEDDER.chromem, 0600. An update
// looks a document up there before embedding it (vectors, embedding.go)
// and adds what it embedded; the library is saved with the index's cache
// (saveLocked). So a start re-embeds only the tools whose text or
// embedder changed, whatever catalog they are in: another set of tool
// directories (a new project, OLLIE_TOOLS_PATH reordered), a catalog
// cache file lost or rebuilt, eval's corpora sharing tools.
//
// Which part of the index it holds: the float vectors, by text, for as
// long as any catalog may want them (at most libraryCap; those the last
// index used are kept first). What it does not hold: the index's own
// rows. A catalog's cache file (cache.go, a binary layout of our own)
// stays the start-up path, read in one block that the view's rows alias,
// with each vector's int8 row; chromem's gob import of the same vectors
// takes several times as long (3 s at 100,000) and a copy of each, so the
// library is read only when a document misses the catalog's cache, and
// written only when something was embedded. Ranking never queries the
// collection: the index scans its int8 rows and re-scores exactly those
// that can reach the top k (quant.go), which returns what a float32 scan
// returns at a fraction of the cost of chromem's QueryEmbedding (which
// walks a map of documents and takes a lock per candidate: 7.6 against
// 0.38 ms per ranking at 10,000 tools, bench/RESULTS.md). The built-in
// embedder is CatalogAware (its vectors depend on its fit to the catalog)
// and embeds a document in microseconds: it keeps no library.
type vecLibrary struct {
	path     string
	name     string // the collection: the embedder's ID
	readOnly bool   // looked up, never written (an index with ReadOnlyCache)
	log      *slog.Logger

	mu  sync.Mutex
	db  *chromem.DB
	col *chromem.Collection // nil until read
	// read is the file as it was read (nil: none), so that a save merges
	// what another process added since.
	read fs.FileInfo
	// used are the documents this index looked up or added: kept first
	// when the library is cut to libraryCap. added counts those added
	// since the last save; dim is the vectors' dimension (0: none seen).
	used  map[string]bool
	added int
	dim   int
	// cap is the most vectors kept (libraryCap; tests make it small).
	cap int
}

// libraryCap is the most vectors a library keeps: 20,000 is a large
// catalog twice over, about 60 MB at 768 dimensions.
const libraryCap = 20_000

// maxLibraryFile bounds the library file read.
const maxLibraryFile = 1 << 30

// newLibrary is the library of embedder id in the cache directory dir
// (nothing is read yet).
func newLibrary(dir, id string, readOnly bool, log *slog.Logger) *vecLibrary {
	return &vecLibrary{path: filepath.Join(dir, "library-"+safeName(id)+".chromem"), name: id, readOnly: readOnly, log: log,
		used: map[string]bool{}, cap: libraryCap}
}

// loadLocked reads the library file once (a missing, foreign or damaged
// one is an empty library, rewritten at the next save).
func (l *vecLibrary) loadLocked() {
	if l.col != nil {
		return
	}
	l.db, l.read = chromem.NewDB(), nil
	b, fi, err := fileio.ReadRegularInfo(l.path, maxLibraryFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		l.log.Warn("index: the vector library is unreadable; embedding what the catalog cache lacks", "file", l.path, "err", err)
	default:
		db := chromem.NewDB()
		if err := db.ImportFromReader(bytes.NewReader(b), "", l.name); err != nil {
			l.log.Warn("index: the vector library does not decode; starting a new one", "file", l.path, "err", err)
		} else {
			l.db, l.read = db, fi
		}
	}
	// After an import a collection has no embedding function: chromem
	// would panic on a text query. Fetched again with one that refuses.
	if l.col = l.db.GetCollection(l.name, refuseEmbedding); l.col == nil {
		l.col, _ = l.db.CreateCollection(l.name, nil, refuseEmbedding)
	}
}

// lookup returns the library's vectors of docs (by hash): unit vectors of
// dim components (dim 0: of the first vector found), each checked as a
// stored vector is (a file that says otherwise is ignored for it).
func (l *vecLibrary) lookup(ctx context.Context, docs []*document, dim int) map[string][]float32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loadLocked()
	found := map[string][]float32{}
	if l.col.Count() == 0 {
		return found
	}
	for _, d := range docs {
		doc, err := l.col.GetByID(ctx, d.hash) // a copy
		if err != nil {
			continue // not there
		}
		v := doc.Embedding
		if dim == 0 {
			dim = len(v)
		}
		if checkVector(v, dim) != nil {
			continue
		}
		normalizeInto(v, v)
		found[d.hash] = v
		l.used[d.hash] = true
		l.dim = dim
	}
	return found
}

// add keeps the unit vectors of docs (shared with the store that holds
// them: neither changes a vector).
func (l *vecLibrary) add(ctx context.Context, docs []vecDoc) {
	if l.readOnly || len(docs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loadLocked()
	for _, d := range docs {
		if err := l.col.AddDocument(ctx, chromem.Document{ID: d.hash, Embedding: d.vec}); err != nil {
			l.log.Debug("index: a vector not kept in the library", "err", err)
			continue
		}
		l.used[d.hash] = true
		l.added++
		l.dim = len(d.vec)
	}
}

// save writes the library when vectors were added since it was read
// (with what another process added to the file meanwhile), cut to
// libraryCap, and lets go of it: it is read again at the next miss.
func (l *vecLibrary) save(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readOnly || l.col == nil || l.added == 0 {
		return nil
	}
	if fi, err := os.Stat(l.path); err == nil && (l.read == nil || !os.SameFile(fi, l.read) || fi.Size() != l.read.Size() || !fi.ModTime().Equal(l.read.ModTime())) {
		if b, err := fileio.ReadRegular(l.path, maxLibraryFile); err == nil {
			other := chromem.NewDB()
			if other.ImportFromReader(bytes.NewReader(b), "", l.name) == nil {
				if oc := other.GetCollection(l.name, refuseEmbedding); oc != nil {
					for _, d := range l.list(ctx, oc) {
						if _, err := l.col.GetByID(ctx, d.ID); err != nil {
							l.col.AddDocument(ctx, d)
						}
					}
				}
			}
		}
	}
	l.cutLocked(ctx)
	err := fileio.WriteAtomic(l.path, 0o600, func(w io.Writer) error { return l.db.ExportToWriter(w, false, "", l.name) })
	if err != nil {
		return fmt.Errorf("writing the vector library: %w", err)
	}
	l.db, l.col, l.read, l.added = nil, nil, nil, 0
	return nil
}

// list is every document of c whose vector has the library's dimension
// (nil when c holds any other: a file some other embedder, or someone,
// wrote). chromem has no listing but a query of the whole collection.
func (l *vecLibrary) list(ctx context.Context, c *chromem.Collection) []chromem.Document {
	n := c.Count()
	if n == 0 || l.dim == 0 {
		return nil
	}
	probe := make([]float32, l.dim)
	probe[0] = 1
	res, err := c.QueryEmbedding(ctx, probe, n, nil, nil)
	if err != nil {
		return nil
	}
	out := make([]chromem.Document, 0, len(res))
	for _, r := range res {
		if checkVector(r.Embedding, l.dim) == nil {
			out = append(out, chromem.Document{ID: r.ID, Embedding: r.Embedding})
		}
	}
	return out
}

// cutLocked keeps at most cap vectors, those this index used
// first; a collection that cannot be listed (vectors of another
// dimension in it) keeps those only.
func (l *vecLibrary) cutLocked(ctx context.Context) {
	n := l.col.Count()
	all := l.list(ctx, l.col)
	if len(all) == n && n <= l.cap {
		return
	}
	if len(all) != n {
		all = all[:0]
		for id := range l.used {
			if d, err := l.col.GetByID(ctx, id); err == nil && checkVector(d.Embedding, l.dim) == nil {
				all = append(all, chromem.Document{ID: id, Embedding: d.Embedding})
			}
		}
	}
	keep := make([]chromem.Document, 0, min(len(all), l.cap))
	for _, d := range all {
		if l.used[d.ID] && len(keep) < l.cap {
			keep = append(keep, d)
		}
	}
	for _, d := range all {
		if !l.used[d.ID] && len(keep) < l.cap {
			keep = append(keep, d)
		}
	}
	l.db = chromem.NewDB()
	l.col, _ = l.db.CreateCollection(l.name, nil, refuseEmbedding)
	for _, d := range keep {
		l.col.AddDocument(ctx, d)
	}
}
