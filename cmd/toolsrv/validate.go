package main

import (
	"context"
	"fmt"

	"toolsrv/registry"
)

func runValidate(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "validate", "validate [--tools DIR] [--json] [DIR...]",
		"Checks every .meta file and lists every problem (file, line or field, and what to do),\n"+
			"then warnings, shadowed definitions and hidden tools. Exits 1 when any tool is invalid.\n"+
			"Directories given as arguments are checked instead of the tool path.")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	for _, d := range fs.Args() {
		_ = tools.Set(d)
	}
	reg, err := loadRegistry(ctx, env, tools)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv validate:", err)
		return 1
	}
	cat := reg.Catalog()
	if *asJSON {
		_ = writeJSON(env.stdout, catalogJSON(cat))
	} else {
		printReport(env, cat)
	}
	if len(cat.Problems) > 0 {
		return 1
	}
	return 0
}

func printReport(env *cliEnv, cat *registry.Catalog) {
	w := env.stdout
	for _, p := range cat.Problems {
		fmt.Fprintf(w, "error: %s\n", p.Error())
	}
	for _, t := range cat.Tools {
		for _, warn := range t.Warnings {
			fmt.Fprintf(w, "warning: %s: %s\n", t.File, warn)
		}
	}
	for _, s := range cat.Shadowed {
		fmt.Fprintf(w, "shadowed: %s is overridden by %s\n", s.File, s.ShadowedBy)
	}
	for _, h := range cat.Hidden {
		fmt.Fprintf(w, "hidden: %s: %s\n", h.File, h.Reason)
	}
	fmt.Fprintf(w, "%d valid, %d invalid, %d hidden, %d shadowed\n", len(cat.Tools), len(cat.Problems), len(cat.Hidden), len(cat.Shadowed))
}
