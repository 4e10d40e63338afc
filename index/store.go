package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	chromem "github.com/philippgille/chromem-go"
)

// store wraps one chromem-go collection of tool vectors, keyed by document
// hash, and guards against chromem's traps (see the library notes): writes
// are serialised, n is clamped, zero/NaN/wrong-dimension vectors are
// rejected, vectors are copied in and out, and chromem's embedding function
// is one that refuses (so nothing can silently reach a network embedder).
type store struct {
	mu   sync.Mutex // serialises writes and the DB handle
	db   *chromem.DB
	col  *chromem.Collection
	name string
	dim  int
}

// errNoEmbedFunc is returned if chromem ever tries to embed by itself.
var errNoEmbedFunc = errors.New("index: chromem must not embed: vectors are computed by the index")

func refuseEmbedding(context.Context, string) ([]float32, error) { return nil, errNoEmbedFunc }

// metaName is the document metadata key holding the tool name.
const metaName = "name"

// newStore makes an empty in-memory store whose collection is called name.
func newStore(name string, dim int) (*store, error) {
	db := chromem.NewDB()
	col, err := db.CreateCollection(name, nil, refuseEmbedding)
	if err != nil {
		return nil, fmt.Errorf("creating vector collection %q: %w", name, err)
	}
	return &store{db: db, col: col, name: name, dim: dim}, nil
}

// checkVector validates a vector against the store's dimension.
func checkVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("vector has %d dimensions, want %d", len(v), dim)
	}
	var sq float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errors.New("vector contains NaN or Inf")
		}
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return errors.New("vector is all zeros")
	}
	return nil
}

// normalized returns a unit-length copy of v.
func normalized(v []float32) []float32 {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(sq))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

// vecDoc is one vector to store.
type vecDoc struct {
	hash, name string
	vec        []float32
}

// put stores vectors (normalised copies) under their document hashes.
func (s *store) put(ctx context.Context, docs []vecDoc) error {
	if len(docs) == 0 {
		return nil
	}
	cd := make([]chromem.Document, 0, len(docs))
	for _, d := range docs {
		if err := checkVector(d.vec, s.dim); err != nil {
			return fmt.Errorf("tool %s: %w", d.name, err)
		}
		cd = append(cd, chromem.Document{ID: d.hash, Metadata: map[string]string{metaName: d.name},
			Embedding: normalized(d.vec)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// One goroutine per document inside chromem: add in modest chunks.
	for i := 0; i < len(cd); i += 512 {
		if err := s.col.AddDocuments(ctx, cd[i:min(i+512, len(cd))], 2); err != nil {
			return fmt.Errorf("storing vectors: %w", err)
		}
	}
	return nil
}

// get returns a copy of the vector stored for hash.
func (s *store) get(ctx context.Context, hash string) ([]float32, bool) {
	s.mu.Lock()
	col := s.col
	s.mu.Unlock()
	d, err := col.GetByID(ctx, hash)
	if err != nil || checkVector(d.Embedding, s.dim) != nil {
		return nil, false
	}
	return append([]float32(nil), d.Embedding...), true
}

// has says whether a valid vector is stored for hash.
func (s *store) has(ctx context.Context, hash string) bool {
	_, ok := s.get(ctx, hash)
	return ok
}

// remove deletes documents by hash. (A nil where and whereDocument are
// essential: an empty non-nil map would delete the whole collection.)
func (s *store) remove(ctx context.Context, hashes ...string) error {
	if len(hashes) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.col.Delete(ctx, nil, nil, hashes...); err != nil {
		return fmt.Errorf("deleting vectors: %w", err)
	}
	return nil
}

// ids lists the stored document hashes with their tool names.
func (s *store) ids(ctx context.Context) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	n := s.col.Count()
	if n == 0 {
		return out
	}
	// chromem has no listing API; a query with a unit vector returns every
	// document (n clamped to Count).
	q := make([]float32, s.dim)
	q[0] = 1
	res, err := s.col.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return out
	}
	for _, r := range res {
		out[r.ID] = r.Metadata[metaName]
	}
	return out
}

// result is one nearest-neighbour answer (a copy of chromem's).
type result struct {
	hash, name string
	similarity float32
}

// query returns the n nearest documents by cosine similarity; n is clamped
// to the collection size and 0 documents give no results (chromem errors on
// both).
func (s *store) query(ctx context.Context, q []float32, n int) ([]result, error) {
	if err := checkVector(q, s.dim); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	s.mu.Lock()
	col := s.col
	s.mu.Unlock()
	n = min(n, col.Count())
	if n <= 0 {
		return nil, nil
	}
	res, err := col.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("vector query: %w", err)
	}
	out := make([]result, len(res))
	for i, r := range res {
		out[i] = result{hash: r.ID, name: r.Metadata[metaName], similarity: r.Similarity}
	}
	return out, nil
}

// count is the number of stored vectors.
func (s *store) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.col.Count()
}

// export writes the collection with chromem's Export (gob, uncompressed:
// gzip costs 10× the time for 25% less space).
func (s *store) export(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.ExportToWriter(w, false, "", s.name)
}

// importStore reads a collection exported by export and checks every vector.
func importStore(data []byte, name string, dim int) (st *store, err error) {
	defer func() {
		if r := recover(); r != nil { // a decoder panic on bad input is corruption, not a crash
			st, err = nil, fmt.Errorf("decoding vectors: %v", r)
		}
	}()
	db := chromem.NewDB()
	if err := db.ImportFromReader(bytes.NewReader(data), "", name); err != nil {
		return nil, fmt.Errorf("decoding vectors: %w", err)
	}
	// After an import the collection has no embedding function: fetch it
	// again with ours (a nil one panics on Query).
	col := db.GetCollection(name, refuseEmbedding)
	if col == nil {
		return nil, fmt.Errorf("vector file has no collection %q", name)
	}
	return &store{db: db, col: col, name: name, dim: dim}, nil
}
