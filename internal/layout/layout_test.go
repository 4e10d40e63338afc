package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// binaries are the commands the project ships: what they import is the
// runtime.
var binaries = []string{"cmd/toolsrv", "cmd/toolsrv-sandbox"}

// pkg is what the test reads of `go list -json`.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
}

// repo is the module as go list sees it, and its texts.
type repo struct {
	root, module string
	pkgs         map[string]*pkg   // by path inside the module ("index", "cmd/toolsrv")
	texts        map[string][]byte // every .go and .md file outside testdata, by absolute path
}

// loadRepo lists the module's packages and reads its texts. Reading go.mod,
// every directory and every Go file here also makes a cached test result
// go stale whenever an import may have changed.
func loadRepo(t *testing.T) *repo {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on $PATH")
	}
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	mod, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatalf("reading the module file: %v", err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatalf("%s names no module", gomod)
	}
	r := &repo{root: filepath.Dir(gomod), module: string(m[1]), pkgs: map[string]*pkg{}, texts: map[string][]byte{}}
	if err := r.readTexts(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "list", "-e", "-json", "./...")
	cmd.Dir = r.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		if rel, ok := r.rel(p.ImportPath); ok {
			r.pkgs[rel] = &p
		}
	}
	if len(r.pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	return r
}

// readTexts reads every .go and .md file of the repository but those of
// testdata, third_party and hidden directories.
func (r *repo) readTexts() error {
	return filepath.WalkDir(r.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != r.root && (name == "testdata" || name == "third_party" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(name); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r.texts[path] = b
		return nil
	})
}

// rel is an import path's path inside the module, if it is in it.
func (r *repo) rel(importPath string) (string, bool) {
	if importPath == r.module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, r.module+"/")
	return rel, ok
}

// room is a package's top-level directory.
func room(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// edges are the imports between rooms: from → to → "pkg imports pkg" lines.
type edges map[string]map[string][]string

func (r *repo) edges() edges {
	g := edges{}
	for rel, p := range r.pkgs {
		from := room(rel)
		if g[from] == nil {
			g[from] = map[string][]string{}
		}
		for _, imp := range p.Imports {
			irel, ok := r.rel(imp)
			if !ok || room(irel) == from {
				continue
			}
			g[from][room(irel)] = append(g[from][room(irel)], rel+" imports "+irel)
		}
	}
	return g
}

// components are the strongly connected components of g (Tarjan), each
// sorted, in the order Tarjan closes them: a component comes after every
// component it reaches, so the list runs bottom-up.
func components(g edges) [][]string {
	nodes := slices.Sorted(maps.Keys(g))
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(n string)
	visit = func(n string) {
		index[n], low[n] = len(index), len(index)
		stack = append(stack, n)
		onStack[n] = true
		for _, m := range slices.Sorted(maps.Keys(g[n])) {
			if _, seen := index[m]; !seen {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] != index[n] {
			return
		}
		var c []string
		for {
			m := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[m] = false
			c = append(c, m)
			if m == n {
				break
			}
		}
		slices.Sort(c)
		out = append(out, c)
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return out
}

// layers puts each component on the lowest layer above everything it
// imports: 0 for those that import no other room.
func layers(g edges, comps [][]string) [][]string {
	compOf := map[string]int{}
	for i, c := range comps {
		for _, n := range c {
			compOf[n] = i
		}
	}
	level := make([]int, len(comps))
	for i, c := range comps { // bottom-up: every successor has its level
		for _, n := range c {
			for m := range g[n] {
				if j := compOf[m]; j != i {
					level[i] = max(level[i], level[j]+1)
				}
			}
		}
	}
	var out [][]string
	for i, c := range comps {
		for len(out) <= level[i] {
			out = append(out, nil)
		}
		name := c[0]
		if len(c) > 1 {
			name = "{" + strings.Join(c, " ") + "}"
		}
		out[level[i]] = append(out[level[i]], name)
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out
}

// backUp lists the imports that run back up: those between two rooms of
// one component (a cycle between top-level directories), one line per pair
// of rooms with the package imports that make it.
func backUp(g edges, comps [][]string) []string {
	var out []string
	for _, c := range comps {
		for _, from := range c {
			for _, to := range c {
				if imps := g[from][to]; len(imps) > 0 {
					slices.Sort(imps)
					out = append(out, fmt.Sprintf("%s → %s (%s)", from, to, strings.Join(imps, "; ")))
				}
			}
		}
	}
	return out
}

func TestLayers(t *testing.T) {
	r := loadRepo(t)
	g := r.edges()
	comps := components(g)
	for i, l := range layers(g, comps) {
		t.Logf("layer %d: %s", i, strings.Join(l, " "))
	}
	if up := backUp(g, comps); len(up) > 0 {
		t.Errorf("%d imports between top-level directories run back up (each is an edge of a cycle between directories; move the code that needs the higher directory up, or what it needs down):\n\t%s",
			len(up), strings.Join(up, "\n\t"))
	}
}

func TestComponentsAndLayers(t *testing.T) {
	g := edges{
		"cmd":   {"index": {"x"}, "eval": {"x"}},
		"index": {"embed": {"x"}, "learn": {"x"}},
		"embed": {"learn": {"x"}},
		"learn": {"embed": {"x"}},
		"eval":  {},
	}
	comps := components(g)
	got := fmt.Sprint(layers(g, comps))
	if want := "[[eval {embed learn}] [index] [cmd]]"; got != want {
		t.Errorf("layers %s, want %s", got, want)
	}
	up := backUp(g, comps)
	if len(up) != 2 || !strings.HasPrefix(up[0], "embed → learn") || !strings.HasPrefix(up[1], "learn → embed") {
		t.Errorf("back up %q, want embed → learn and learn → embed", up)
	}
}

// runtime is every package the binaries import, themselves included.
func (r *repo) runtime(t *testing.T) []string {
	seen := map[string]bool{}
	var visit func(rel string)
	visit = func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		for _, imp := range r.pkgs[rel].Imports {
			if irel, ok := r.rel(imp); ok && r.pkgs[irel] != nil {
				visit(irel)
			}
		}
	}
	for _, b := range binaries {
		if r.pkgs[b] == nil {
			t.Fatalf("no package %s: the binaries moved? (update binaries)", b)
		}
		visit(b)
	}
	return slices.Sorted(maps.Keys(seen))
}

var (
	// beside names the directory of evaluation corpora and training data
	// that sat beside the repository where it was developed.
	beside = regexp.MustCompile(`\.\./shared\b|\bshared/(eval|train)\b`)
	// specCite is a citation of a section of the specification.
	specCite = "SPEC " + "\u00a7"
)

// TestClonesCanFollow: the runtime's code names nothing outside the
// repository, and no Go or Markdown file cites the specification.
func TestClonesCanFollow(t *testing.T) {
	r := loadRepo(t)
	rt := r.runtime(t)
	t.Logf("runtime packages: %s", strings.Join(rt, " "))
	for _, rel := range rt {
		p := r.pkgs[rel]
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles) {
			b, ok := r.texts[filepath.Join(p.Dir, f)]
			if !ok {
				t.Fatalf("%s: not read", filepath.Join(rel, f))
			}
			if loc := beside.FindIndex(b); loc != nil {
				t.Errorf("%s:%d names %q, a directory beside the repository that a clone does not have", filepath.Join(rel, f), 1+bytes.Count(b[:loc[0]], []byte("\n")), b[loc[0]:loc[1]])
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(r.texts)) {
		b := r.texts[path]
		if i := bytes.Index(b, []byte(specCite)); i >= 0 {
			rel, _ := filepath.Rel(r.root, path)
			t.Errorf("%s:%d cites the specification (%s…), which the repository does not carry: say the thing itself", rel, 1+bytes.Count(b[:i], []byte("\n")), specCite)
		}
	}
}
