package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolsrv/toolsrv/embed"

	"golang.org/x/sync/errgroup"
)

// errDimChanged means the embedder now returns vectors of another size.
var errDimChanged = errors.New("embedding dimension changed")

// vecSet is the vectors found or made for a set of documents;
// fromLibrary of them came from the vector library (library.go).
type vecSet struct {
	store       *store
	m           map[string][]float32
	fromLibrary int
}

func (s vecSet) get(hash string) []float32 { return s.m[hash] }

// quant is the int8 row the store holds for hash (nil when none).
func (s vecSet) quant(hash string) ([]int8, float32) {
	if s.store == nil {
		return nil, 0
	}
	return s.store.quant(hash)
}

// vectors finds or computes the vector of each document: from the store
// when its hash is there, otherwise from the embedder in batches (stored as
// they arrive). It returns how many were embedded. With a nil store one is
// created at the dimension of the first vector.
func (ix *Index) vectors(ctx context.Context, emb embed.Embedder, st *store, docs []document) (vecSet, int, error) {
	out := vecSet{store: st, m: map[string][]float32{}}
	var todo []*document
	seen := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		if seen[d.hash] {
			continue
		}
		seen[d.hash] = true
		if st != nil {
			if v, ok := st.get(d.hash); ok {
				out.m[d.hash] = v
				continue
			}
		}
		todo = append(todo, d)
	}
	if len(todo) > 0 && ix.lib != nil {
		todo = ix.fromLibrary(ctx, emb, &out, todo)
	}
	if len(todo) == 0 {
		return out, 0, nil
	}
	progress := ix.opts.Progress
	if progress != nil {
		progress(0, len(todo))
	}
	start := time.Now()

	// Batches are embedded by a few workers at once (the built-in embedder
	// is CPU-bound; a server takes concurrent requests; errgroup bounds
	// them and cancels the rest on the first error); results are checked
	// and stored here, one at a time.
	type batchResult struct {
		batch []*document
		vs    [][]float32
	}
	results := make(chan batchResult)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(wctx)
	g.SetLimit(ix.opts.Workers)
	go func() {
		defer close(results)
		for i := 0; i < len(todo); i += ix.opts.BatchSize {
			batch := todo[i:min(i+ix.opts.BatchSize, len(todo))]
			g.Go(func() error {
				texts := make([]string, len(batch))
				for j, d := range batch {
					texts[j] = d.text()
				}
				vs, err := emb.EmbedDocuments(gctx, texts)
				if err == nil && len(vs) != len(batch) {
					err = fmt.Errorf("embedder %s returned %d vectors for %d texts", emb.ID(), len(vs), len(batch))
				}
				if err != nil {
					return err
				}
				select {
				case results <- batchResult{batch, vs}:
					return nil
				case <-gctx.Done():
					return gctx.Err()
				}
			})
		}
		g.Wait()
	}()

	fresh := 0
	var firstErr error
	store := func(r batchResult) error {
		if out.store == nil {
			ns, err := newStore(emb.ID(), len(r.vs[0]))
			if err != nil {
				return err
			}
			out.store = ns
		}
		put := make([]vecDoc, 0, len(r.batch))
		for j, d := range r.batch {
			if len(r.vs[j]) != out.store.dim {
				return fmt.Errorf("%w: %s gave %d dimensions, the index holds %d", errDimChanged, emb.ID(), len(r.vs[j]), out.store.dim)
			}
			if err := checkVector(r.vs[j], out.store.dim); err != nil {
				return fmt.Errorf("embedder %s, tool %s: %w", emb.ID(), d.name, err)
			}
			put = append(put, vecDoc{hash: d.hash, name: d.name, vec: r.vs[j]})
		}
		if err := out.store.put(ctx, put); err != nil {
			return err
		}
		for i, p := range put {
			out.m[p.hash], _ = out.store.get(p.hash)
			put[i].vec = out.m[p.hash]
		}
		if ix.lib != nil {
			ix.lib.add(ctx, put)
		}
		fresh += len(r.batch)
		if progress != nil {
			progress(fresh, len(todo))
		}
		return nil
	}
	// Receive until the workers are done; after an error stop storing and
	// cancel the batches not yet embedded.
	for r := range results {
		if firstErr != nil {
			continue
		}
		if err := store(r); err != nil {
			firstErr = err
			cancel()
		}
	}
	if err := g.Wait(); err != nil && firstErr == nil { // (the group is done: results is closed)
		firstErr = fmt.Errorf("embedding %d tools with %s: %w", len(todo)-fresh, emb.ID(), err)
	}
	if firstErr != nil {
		return out, fresh, firstErr
	}
	ix.log.Debug("index: embedded tools", "n", fresh, "embedder", emb.ID(), "took", time.Since(start))
	return out, fresh, nil
}

// fromLibrary stores in out the vectors the library has of todo (the
// documents neither the store nor the catalog's cache had) and returns
// the documents still to embed.
func (ix *Index) fromLibrary(ctx context.Context, emb embed.Embedder, out *vecSet, todo []*document) []*document {
	dim := emb.Dim()
	if out.store != nil {
		dim = out.store.dim
	}
	found := ix.lib.lookup(ctx, todo, dim)
	if len(found) == 0 {
		return todo
	}
	var put []vecDoc
	var rest []*document
	for _, d := range todo {
		if v, ok := found[d.hash]; ok {
			put = append(put, vecDoc{hash: d.hash, name: d.name, vec: v})
		} else {
			rest = append(rest, d)
		}
	}
	if out.store == nil {
		ns, err := newStore(emb.ID(), len(put[0].vec))
		if err != nil {
			return todo
		}
		out.store = ns
	}
	if err := out.store.put(ctx, put); err != nil {
		ix.log.Debug("index: vectors of the library not taken", "err", err)
		return todo
	}
	for _, p := range put {
		out.m[p.hash], _ = out.store.get(p.hash)
	}
	out.fromLibrary = len(put)
	ix.log.Debug("index: vectors taken from the library", "n", len(put), "embedder", emb.ID())
	return rest
}
