package embedding

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// wordnetPairs reads WordNet's data.{noun,verb,adj,adv}: synset lemmas →
// gloss, and first lemma → the other lemmas (synonyms).
func wordnetPairs(ctx context.Context, dir string) ([]Pair, error) {
	var out []Pair
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		path := filepath.Join(dir, "data."+pos)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("WordNet data missing (apt-get install wordnet-base): %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "  ") {
				continue // licence header
			}
			head, gloss, ok := strings.Cut(line, " | ")
			if !ok {
				continue
			}
			f := strings.Fields(head)
			if len(f) < 4 {
				continue
			}
			n, err := strconv.ParseInt(f[3], 16, 32)
			if err != nil || len(f) < 4+2*int(n) {
				continue
			}
			var lemmas []string
			for i := 0; i < int(n); i++ {
				w := f[4+2*i]
				if j := strings.IndexByte(w, '('); j > 0 {
					w = w[:j] // adjective markers like "(a)"
				}
				lemmas = append(lemmas, strings.ReplaceAll(w, "_", " "))
			}
			gloss = strings.TrimSpace(gloss)
			out = append(out, Pair{Query: strings.Join(lemmas, ", "), Doc: gloss, Source: "wordnet-gloss"})
			if len(lemmas) > 1 {
				out = append(out, Pair{Query: lemmas[0], Doc: strings.Join(lemmas[1:], ", "), Source: "wordnet-syn"})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return out, nil
}
