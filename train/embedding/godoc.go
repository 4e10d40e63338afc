package embedding

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// goDocPairs reads the Go standard library's doc comments: the first
// sentence of an exported declaration's doc (without its leading name) →
// package, receiver and name as words, plus the rest of the doc. Names are
// what tool names look like (ReadFile, parse_json); their docs say what a
// request for them would say.
func goDocPairs(ctx context.Context, goroot string) ([]Pair, error) {
	src := filepath.Join(goroot, "src")
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "internal", "vendor", "cmd":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Go sources under %s (install golang-go or set -goroot): %v", src, err)
	}
	sort.Strings(files)
	seen := map[string]bool{}
	var out []Pair
	fset := token.NewFileSet()
	for i, p := range files {
		if i%200 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		pkg := f.Name.Name
		add := func(recv, name string, doc *ast.CommentGroup) {
			if doc == nil || !ast.IsExported(name) {
				return
			}
			text := strings.Join(strings.Fields(doc.Text()), " ")
			first, rest, _ := strings.Cut(text, ". ")
			first = strings.TrimPrefix(strings.TrimPrefix(first, name+" "), "A "+name+" ")
			if len(strings.Fields(first)) < 3 || strings.HasPrefix(first, "Deprecated") {
				return
			}
			key := pkg + "." + recv + "." + name
			if seen[key] {
				return
			}
			seen[key] = true
			d := pkg + " " + recv + " " + name
			if rest != "" {
				d += ". " + firstWords(rest, 120)
			}
			out = append(out, Pair{Query: first, Doc: d, Source: "godoc"})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				recv := ""
				if d.Recv != nil && len(d.Recv.List) > 0 {
					recv = typeName(d.Recv.List[0].Type)
				}
				add(recv, d.Name.Name, d.Doc)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						doc := ts.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						add("", ts.Name.Name, doc)
					}
				}
			}
		}
	}
	return out, nil
}

func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	}
	return ""
}
