package laststep

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoRequests is ExportCorpus's error when no request is to be written
// (the corpus is not written).
var ErrNoRequests = errors.New("no requests to write")

// ExportCorpus writes a catalog as a labelled corpus (DIR/tools/*.meta,
// DIR/queries.jsonl; a request no tool serves gets "relevant": []) so that
// toolsrv eval and toolsrv tune can read it. Only the requests keep says
// yes to are written (nil: all).
func ExportCorpus(dir string, c *Catalog, keep func(LQuery) bool) error {
	tools := filepath.Join(dir, "tools")
	var err error
	if c.Dir != "" {
		err = linkCatalog(tools, c.Dir, c.Keep)
	} else {
		err = writeCatalog(tools, c.Tools)
	}
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	n := 0
	for _, q := range c.Queries {
		if keep != nil && !keep(q) {
			continue
		}
		rel := q.Relevant
		if rel == nil {
			rel = []string{}
		}
		if err := enc.Encode(map[string]any{"id": q.ID, "query": q.Text, "relevant": rel}); err != nil {
			f.Close()
			return err
		}
		n++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if n == 0 {
		f.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("corpus %s: %w", c.Name, ErrNoRequests)
	}
	return f.Close()
}
