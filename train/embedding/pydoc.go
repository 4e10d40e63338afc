package embedding

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var pyDef = regexp.MustCompile(`(?ms)^[ \t]*(def|class)[ \t]+([A-Za-z]\w*)[ \t]*(\([^)]*\))?[^:\n]*:[ \t]*\n[ \t]*[rRuU]?(?:"""(.*?)"""|'''(.*?)''')`)

// pyDocPairs reads the Python standard library's docstrings (PSF licence,
// package libpython3.X-stdlib): first sentence → module, name and argument
// names as words, plus the rest of the docstring. Python names are
// snake_case, like most tool names.
func pyDocPairs(ctx context.Context, dir string) ([]Pair, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__", "turtledemo":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".py") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Python standard library under %s (apt-get install libpython3-stdlib or set -python): %v", dir, err)
	}
	sort.Strings(files)
	seen := map[string]bool{}
	var out []Pair
	for i, f := range files {
		if i%100 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		mod := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(f, dir), "/"), ".py")
		mod = strings.TrimSuffix(strings.ReplaceAll(mod, "/", " "), " __init__")
		for _, m := range pyDef.FindAllStringSubmatch(string(raw), -1) {
			name, args, doc := m[2], m[3], m[4]+m[5]
			doc = strings.Join(strings.Fields(doc), " ")
			first, rest, _ := strings.Cut(doc, ". ")
			if len(strings.Fields(first)) < 3 || seen[mod+"."+name] {
				continue
			}
			seen[mod+"."+name] = true
			var argNames []string
			for _, a := range strings.Split(strings.Trim(args, "()"), ",") {
				a = strings.TrimSpace(strings.SplitN(strings.SplitN(a, "=", 2)[0], ":", 2)[0])
				a = strings.TrimLeft(a, "*")
				if a != "" && a != "self" && a != "cls" && a != "/" {
					argNames = append(argNames, a)
				}
			}
			d := mod + " " + splitName(name)
			if len(argNames) > 0 {
				d += " " + splitName(strings.Join(argNames, " "))
			}
			if rest != "" {
				d += ". " + firstWords(rest, 120)
			}
			out = append(out, Pair{Query: first, Doc: d, Source: "pydoc"})
		}
	}
	return out, nil
}
