package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

func runShow(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "show", "show [--tools DIR] [--json] NAME",
		"Shows one tool: source file, matched variant, resolved command, tier, flags and argument schema.\nFor a hidden or invalid tool it says why.")
	asJSON := fs.Bool("json", false, "print the tool as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "give exactly one tool NAME (got %d arguments)", fs.NArg())
	}
	name := fs.Arg(0)
	reg, path, err := loadTools(ctx, env, "show", tools)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv show:", err)
		return 1
	}
	cat := reg.Catalog()
	t, err := cat.Lookup(name)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv show: %v%s\n", err, lookupHint(err))
		if len(cat.Tools)+len(cat.Problems)+len(cat.Hidden) == 0 {
			fmt.Fprintln(env.stderr, "toolsrv show:", path.emptyCatalog(cat))
		}
		return 1
	}
	if *asJSON {
		if err := writeJSON(env.stdout, t); err != nil {
			return 1
		}
		return 0
	}
	w := env.stdout
	line := func(label, text string) {
		fmt.Fprintf(w, "%-*s%s\n", registry.ShownColumn, label+":", text)
	}
	line("name", t.Name)
	line("file", t.File)
	if t.Variant >= 0 {
		line("variant", fmt.Sprintf("%d (first that matches this host)", t.Variant))
	} else {
		line("variant", "none (no variants)")
	}
	printFields(w, t.Shown(), line)
	for _, warn := range t.Warnings {
		line("warning", warn)
	}
	for _, s := range cat.Shadowed {
		if s.Name == name {
			line("shadows", s.File)
		}
	}
	return 0
}

// printFields prints a tool's definition fields: those that share a label
// on one line, a block field below its label, indented; fields without
// text are left out.
func printFields(w io.Writer, fields []registry.ShownField, line func(label, text string)) {
	for i := 0; i < len(fields); {
		f := fields[i]
		var texts []string
		for ; i < len(fields) && fields[i].Label == f.Label; i++ {
			if fields[i].Text != "" {
				texts = append(texts, fields[i].Text)
			}
		}
		switch {
		case len(texts) == 0:
		case f.Block:
			fmt.Fprintf(w, "%s:\n%s\n", f.Label, indent(strings.Join(texts, "\n"), "  "))
		default:
			line(f.Label, strings.Join(texts, ", "))
		}
	}
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}
