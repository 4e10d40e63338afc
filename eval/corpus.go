package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Query is one labelled request of a corpus.
type Query struct {
	ID       string   `json:"id"`
	Text     string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// Corpus is a labelled evaluation set.
type Corpus struct {
	Name     string // the directory's base name
	Dir      string
	ToolsDir string // Dir/tools
	Queries  []Query
}

// IsCorpus says whether dir looks like a corpus (it has queries.jsonl).
func IsCorpus(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "queries.jsonl"))
	return err == nil && st.Mode().IsRegular()
}

// FindCorpora expands dirs: a corpus stays as is; any other directory
// stands for its subdirectories that are corpora, in name order.
func FindCorpora(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if IsCorpus(d) {
			out = append(out, d)
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", d, err)
		}
		var found []string
		for _, e := range ents {
			if sub := filepath.Join(d, e.Name()); e.IsDir() && IsCorpus(sub) {
				found = append(found, sub)
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s is not a corpus (no queries.jsonl) and holds none", d)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// LoadCorpus reads dir/queries.jsonl. Every line must have an id, a query
// and a relevant list; an empty list ("relevant": []) marks a request no
// tool of the catalog serves (the right answer is "no tool fits"). Errors
// name the line.
func LoadCorpus(dir string) (*Corpus, error) {
	qf := filepath.Join(dir, "queries.jsonl")
	f, err := os.Open(qf)
	if err != nil {
		return nil, fmt.Errorf("loading corpus: %w", err)
	}
	defer f.Close()
	c := &Corpus{Name: filepath.Base(filepath.Clean(dir)), Dir: dir, ToolsDir: filepath.Join(dir, "tools")}
	if st, err := os.Stat(c.ToolsDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("corpus %s has no tools/ directory", dir)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	seen := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var q Query
		if err := json.Unmarshal([]byte(text), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", qf, line, err)
		}
		switch {
		case q.ID == "":
			return nil, fmt.Errorf("%s:%d: no id", qf, line)
		case seen[q.ID]:
			return nil, fmt.Errorf("%s:%d: duplicate id %q", qf, line, q.ID)
		case strings.TrimSpace(q.Text) == "":
			return nil, fmt.Errorf("%s:%d: empty query", qf, line)
		case q.Relevant == nil:
			return nil, fmt.Errorf("%s:%d: no \"relevant\" list (use [] for a request no tool serves)", qf, line)
		}
		seen[q.ID] = true
		c.Queries = append(c.Queries, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", qf, err)
	}
	if len(c.Queries) == 0 {
		return nil, errors.New(qf + " has no queries")
	}
	return c, nil
}

// LoadCorpora loads every corpus FindCorpora finds in dirs, in its order.
func LoadCorpora(dirs []string) ([]*Corpus, error) {
	found, err := FindCorpora(dirs)
	if err != nil {
		return nil, err
	}
	cs := make([]*Corpus, 0, len(found))
	for _, d := range found {
		c, err := LoadCorpus(d)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}
