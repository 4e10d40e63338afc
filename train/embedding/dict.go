package embedding

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// dictFiles are the dictd databases read, each from a Debian package:
// dict-foldoc (computing terms, GFDL), dict-jargon (hacker jargon, public
// domain), dict-vera (computing acronyms, GFDL).
var dictFiles = []string{"foldoc", "jargon", "vera"}

var (
	dictBraces = regexp.MustCompile(`[{}]`)
	dictTags   = regexp.MustCompile(`<[^>]*>|\(\d{4}-\d\d-\d\d\)|\(https?://[^)]*\)`)
)

// dictPairs reads dictd databases: headword → definition (first 120 words).
func dictPairs(ctx context.Context, dir string) ([]Pair, error) {
	var out []Pair
	for _, name := range dictFiles {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		idx, err := os.ReadFile(filepath.Join(dir, name+".index"))
		if err != nil {
			return nil, fmt.Errorf("dictd database %s missing (apt-get install dict-%s): %w", name, name, err)
		}
		body, err := catFile(ctx, filepath.Join(dir, name+".dict.dz"))
		if err != nil {
			return nil, fmt.Errorf("dictd database %s: %w", name, err)
		}
		for _, line := range strings.Split(string(idx), "\n") {
			f := strings.Split(line, "\t")
			if len(f) < 3 || strings.HasPrefix(f[0], "00-database") || strings.HasPrefix(f[0], "00database") {
				continue
			}
			off, ok1 := dictB64(f[1])
			n, ok2 := dictB64(f[2])
			if !ok1 || !ok2 || off+n > len(body) {
				continue
			}
			def := string(body[off : off+n])
			// The entry repeats its headword on the first line(s); drop it.
			if i := strings.Index(def, "\n\n"); i >= 0 && i < 200 {
				def = def[i+2:]
			}
			def = dictTags.ReplaceAllString(dictBraces.ReplaceAllString(def, ""), " ")
			def = firstWords(def, 120)
			if len(strings.Fields(def)) < 2 {
				continue
			}
			out = append(out, Pair{Query: f[0], Doc: def, Source: "dict-" + name})
		}
	}
	return out, nil
}

// dictB64 decodes dictd's base64 numbers.
func dictB64(s string) (int, bool) {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	v := 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(digits, s[i])
		if d < 0 {
			return 0, false
		}
		v = v*64 + d
	}
	return v, true
}
