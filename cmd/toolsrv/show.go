package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	fmt.Fprintf(w, "name:        %s\n", t.Name)
	fmt.Fprintf(w, "file:        %s\n", t.File)
	fmt.Fprintf(w, "description: %s\n", t.Description)
	fmt.Fprintf(w, "tier:        %s\n", t.Tier)
	if t.Variant >= 0 {
		fmt.Fprintf(w, "variant:     %d (first that matches this host)\n", t.Variant)
	} else {
		fmt.Fprintf(w, "variant:     none (no variants)\n")
	}
	fmt.Fprintf(w, "command:     %s: %s\n", t.Command.Kind, strings.Join(quoteArgs(t.Command.Argv), " "))
	fmt.Fprintf(w, "concurrency: %s\n", t.Concurrency)
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{t.ReadOnly, "readOnly"}, {t.Network, "network"}, {t.Bypass, "bypass"}, {t.ResetsCounter, "resetsCounter"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		fmt.Fprintf(w, "flags:       %s\n", strings.Join(flags, ", "))
	}
	if t.Scope != "" {
		fmt.Fprintf(w, "scope:       %s\n", t.Scope)
	}
	if t.OutputFormat != "" {
		fmt.Fprintf(w, "output:      %s (outputFormat)\n", t.OutputFormat)
	}
	if t.Timeout > 0 {
		fmt.Fprintf(w, "timeout:     %s\n", t.Timeout)
	}
	if len(t.Keywords) > 0 {
		fmt.Fprintf(w, "keywords:    %s\n", strings.Join(t.Keywords, ", "))
	}
	for _, warn := range t.Warnings {
		fmt.Fprintf(w, "warning:     %s\n", warn)
	}
	var pretty any
	if json.Unmarshal(t.Args, &pretty) == nil {
		b, _ := json.MarshalIndent(pretty, "             ", "  ")
		fmt.Fprintf(w, "args:        %s\n", b)
	}
	if t.Prompt != "" {
		fmt.Fprintf(w, "prompt:\n%s\n", indent(t.Prompt, "  "))
	}
	for _, s := range cat.Shadowed {
		if s.Name == name {
			fmt.Fprintf(w, "shadows:     %s\n", s.File)
		}
	}
	return 0
}

func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.ContainsAny(a, " \t\n'\"$;|&") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}
