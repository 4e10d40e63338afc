package index

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"

	chromem "github.com/philippgille/chromem-go"
)

// store wraps one chromem-go collection of tool vectors, keyed by document
// hash, and guards against chromem's traps (see the library notes): writes
// are serialised, zero/NaN/wrong-dimension vectors are rejected, and
// chromem's embedding function is one that refuses (so nothing can silently
// reach a network embedder).
//
// Each vector is held once. The store normalises a copy of what it is
// given and hands chromem that slice, which chromem keeps as it is (it
// copies only a vector that is not of unit length); get returns the same
// slice, so the index's rows (view.rows) alias chromem's vectors instead
// of copying them. Returned vectors are read-only.
type store struct {
	mu   sync.Mutex // serialises writes and the DB handle
	db   *chromem.DB
	col  *chromem.Collection
	name string
	dim  int
	// byHash mirrors the collection: chromem's GetByID deep-copies and it
	// has no listing, and both are needed for every tool at every start.
	byHash map[string]storedVec
	// rows: some stored vectors have their int8 row (see forgetRows).
	rows bool
}

// storedVec is one stored vector and the tool it was made for, with its
// int8 row for the index's scan when the cache file gave it (q nil
// otherwise: the view quantizes the vector itself).
type storedVec struct {
	vec    []float32
	name   string
	q      []int8
	qscale float32
}

// errNoEmbedFunc is returned if chromem ever tries to embed by itself.
var errNoEmbedFunc = errors.New("index: chromem must not embed: vectors are computed by the index")

func refuseEmbedding(context.Context, string) ([]float32, error) { return nil, errNoEmbedFunc }

// newStore makes an empty in-memory store whose collection is called name.
func newStore(name string, dim int) (*store, error) {
	db := chromem.NewDB()
	col, err := db.CreateCollection(name, nil, refuseEmbedding)
	if err != nil {
		return nil, fmt.Errorf("creating vector collection %q: %w", name, err)
	}
	return &store{db: db, col: col, name: name, dim: dim, byHash: map[string]storedVec{}}, nil
}

// checkVector validates a vector against the store's dimension.
func checkVector(v []float32, dim int) error {
	_, err := checkedSumSquares(v, dim)
	return err
}

// checkedSumSquares is checkVector that also returns Σv² (as sumSquares).
func checkedSumSquares(v []float32, dim int) (float64, error) {
	if len(v) != dim {
		return 0, fmt.Errorf("vector has %d dimensions, want %d", len(v), dim)
	}
	var sq float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0, errors.New("vector contains NaN or Inf")
		}
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0, errors.New("vector is all zeros")
	}
	return sq, nil
}

// alreadyUnit says that normalizeInto would not change a bit of a vector
// whose Σv² is sq: its scale is within 2⁻²⁵ of 1, so no element moves by
// half a float32 step (TestAlreadyUnit).
func alreadyUnit(sq float64) bool {
	return math.Abs(1/math.Sqrt(sq)-1) < 0x1p-25
}

// normalized returns a unit-length copy of v.
func normalized(v []float32) []float32 {
	out := make([]float32, len(v))
	normalizeInto(out, v)
	return out
}

// sumSquares is Σv², summed in float64 as normalizeInto does.
func sumSquares(v []float32) float64 {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	return sq
}

// normalizeInto writes v scaled to unit length into out (len(v)).
func normalizeInto(out, v []float32) {
	inv := 1 / math.Sqrt(sumSquares(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
}

// vecDoc is one vector to store (with its int8 row, when known).
type vecDoc struct {
	hash, name string
	vec        []float32
	q          []int8
	qscale     float32
}

// put stores vectors (normalised copies) under their document hashes.
func (s *store) put(ctx context.Context, docs []vecDoc) error {
	if len(docs) == 0 {
		return nil
	}
	for _, d := range docs {
		if err := checkVector(d.vec, s.dim); err != nil {
			return fmt.Errorf("tool %s: %w", d.name, err)
		}
	}
	arena := make([]float32, len(docs)*s.dim)
	for i, d := range docs {
		normalizeInto(arena[i*s.dim:(i+1)*s.dim:(i+1)*s.dim], d.vec)
	}
	return s.add(ctx, docs, arena)
}

// add stores docs whose unit vectors are the consecutive rows of arena
// (docs[i].vec is ignored): chromem and byHash share the rows.
func (s *store) add(ctx context.Context, docs []vecDoc, arena []float32) error {
	cd := make([]chromem.Document, len(docs))
	for i, d := range docs {
		// No metadata: the tool's name is in byHash (a map per document
		// was 20 MB at 100k tools).
		cd[i] = chromem.Document{ID: d.hash, Embedding: arena[i*s.dim : (i+1)*s.dim : (i+1)*s.dim]}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// One by one: AddDocuments starts a goroutine per document (10 ms of
	// a 10k start) to do what AddDocument does in a few hundred
	// nanoseconds with the vector given.
	for i := range cd {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("storing vectors: %w", err)
		}
		if err := s.col.AddDocument(ctx, cd[i]); err != nil {
			return fmt.Errorf("storing vectors: %w", err)
		}
	}
	for i, d := range docs {
		s.byHash[d.hash] = storedVec{vec: cd[i].Embedding, name: d.name, q: d.q, qscale: d.qscale}
		s.rows = s.rows || d.q != nil
	}
	return nil
}

// forgetRows drops the int8 rows the cache file gave: once the first
// update has copied them into the view they are the view's (and at
// 100,000 tools a second copy of 26 MB). export makes them again from
// the vectors.
func (s *store) forgetRows() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rows {
		return
	}
	for h, sv := range s.byHash {
		sv.q, sv.qscale = nil, 0
		s.byHash[h] = sv
	}
	s.rows = false
}

// get returns the vector stored for hash: the stored slice itself, which
// the caller must not modify.
func (s *store) get(hash string) ([]float32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, ok := s.byHash[hash]
	return sv.vec, ok
}

// quant returns the int8 row and scale stored for hash (nil when none is:
// see storedVec).
func (s *store) quant(hash string) ([]int8, float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byHash[hash]
	return sv.q, sv.qscale
}

// has says whether a vector is stored for hash.
func (s *store) has(hash string) bool {
	_, ok := s.get(hash)
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
	for _, h := range hashes {
		delete(s.byHash, h)
	}
	return nil
}

// ids lists the stored document hashes with their tool names.
func (s *store) ids() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.byHash))
	for h, sv := range s.byHash {
		out[h] = sv.name
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
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range res {
		out[i] = result{hash: r.ID, name: s.byHash[r.ID].name, similarity: r.Similarity}
	}
	return out, nil
}

// count is the number of stored vectors.
func (s *store) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byHash)
}

// export writes every stored vector: per vector the hash and the tool name
// (each a uvarint length and the bytes), dim little-endian float32s, and
// the vector's int8 row (dim bytes) and its scale (a float32), in hash
// order (so equal stores write equal bytes). The row is what quantizeRow
// makes of the vector, so that a start need not quantize again. chromem-go's own Export
// (gob) took 3 s to read back at 100,000 tools and a copy of every vector
// to get them out again; this is read into one block that the collection
// and the index share.
func (s *store) export(w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	bw := bufio.NewWriter(w)
	var buf []byte
	q := make([]int8, s.dim)
	for _, h := range slices.Sorted(maps.Keys(s.byHash)) {
		sv := s.byHash[h]
		buf = binary.AppendUvarint(buf[:0], uint64(len(h)))
		buf = append(buf, h...)
		buf = binary.AppendUvarint(buf, uint64(len(sv.name)))
		buf = append(buf, sv.name...)
		for _, x := range sv.vec {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		scale := quantizeRow(q, sv.vec)
		for _, x := range q {
			buf = append(buf, byte(x))
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(scale))
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// importStore reads what export wrote, checks every vector (dimension,
// NaN, zero) and stores them under name.
func importStore(ctx context.Context, data []byte, name string, dim int) (*store, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("vector file: dimension %d", dim)
	}
	// The number of vectors first, so the block is allocated once, exactly.
	n, err := countRecords(data, dim)
	if err != nil {
		return nil, err
	}
	docs := make([]vecDoc, 0, n)
	arena := make([]float32, 0, n*dim)
	qarena := make([]int8, n*dim)
	field := func() (string, error) {
		n, k := binary.Uvarint(data)
		if k <= 0 || n > uint64(len(data)-k) || n > 4096 {
			return "", errors.New("truncated or corrupt vector file")
		}
		s := string(data[k : k+int(n)])
		data = data[k+int(n):]
		return s, nil
	}
	for len(data) > 0 {
		hash, err := field()
		if err != nil {
			return nil, err
		}
		tool, err := field()
		if err != nil {
			return nil, err
		}
		if len(data) < recordRest(dim) {
			return nil, errors.New("truncated vector file")
		}
		row := len(arena)
		if row+dim > cap(arena) { // countRecords counted fewer
			return nil, errors.New("corrupt vector file")
		}
		arena = arena[:row+dim]
		dst, src := arena[row:], data[:4*dim]
		for i := range dst { // one bounds check a row, not one append a number
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i : 4*i+4]))
		}
		q := qarena[row : row+dim : row+dim]
		for i, b := range data[4*dim : 5*dim] {
			q[i] = int8(b)
		}
		qscale := math.Float32frombits(binary.LittleEndian.Uint32(data[5*dim:]))
		data = data[recordRest(dim):]
		vec := arena[row:]
		sq, err := checkedSumSquares(vec, dim)
		if err != nil {
			return nil, fmt.Errorf("vector of %s: %w", tool, err)
		}
		// Stored vectors are unit vectors; normalising again in place keeps
		// chromem from copying one whose length drifted in the last bit.
		// Where that cannot change a bit (nearly every vector) the pass is
		// skipped (6 ms of CPU at 10k tools), and the stored int8 row is
		// the one quantizing the vector gives (17 ms). A vector normalised
		// again is quantized by the view, as it was before.
		if !alreadyUnit(sq) {
			normalizeInto(vec, vec)
			q, qscale = nil, 0
		}
		docs = append(docs, vecDoc{hash: hash, name: tool, q: q, qscale: qscale})
	}
	st, err := newStore(name, dim)
	if err != nil {
		return nil, err
	}
	if err := st.add(ctx, docs, arena); err != nil {
		return nil, err
	}
	return st, nil
}

// recordRest is the size of a vector file's record after its hash and
// tool name: dim float32s, the int8 row (dim bytes) and its scale.
func recordRest(dim int) int { return 5*dim + 4 }

// countRecords counts the vectors of an export body, checking only its
// framing (importStore checks the rest).
func countRecords(data []byte, dim int) (int, error) {
	n := 0
	for len(data) > 0 {
		for range 2 { // hash, tool
			l, k := binary.Uvarint(data)
			if k <= 0 || l > uint64(len(data)-k) || l > 4096 {
				return 0, errors.New("truncated or corrupt vector file")
			}
			data = data[k+int(l):]
		}
		if len(data) < recordRest(dim) {
			return 0, errors.New("truncated vector file")
		}
		data = data[recordRest(dim):]
		n++
	}
	return n, nil
}
