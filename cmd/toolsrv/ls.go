package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/toolsrv/toolsrv/registry"
)

func runLs(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "ls", "ls [--tools DIR] [--mcp-config FILE] [--json]",
		"Lists the visible tools: name, tier and description. Invalid and hidden tools are summarised on stderr (see validate and show).")
	asJSON := fs.Bool("json", false, "print the full catalog as JSON (schemas, commands, variants resolved)")
	mf := addMCPFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q (to see one tool: toolsrv show NAME)", fs.Arg(0))
	}
	cat, path, done, err := loadCatalog(ctx, env, "ls", tools, mf)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv ls:", err)
		return 1
	}
	defer done()
	// An empty catalog is an error, not an empty listing; --json still
	// prints the catalog (its problems and hidden tools say why).
	empty := path.emptyCatalog(cat)
	if *asJSON {
		if err := writeJSON(env.stdout, catalogJSON(cat)); err != nil {
			return 1
		}
		if empty != nil {
			fmt.Fprintln(env.stderr, "toolsrv ls:", empty)
			return 1
		}
		return 0
	}
	if empty != nil {
		fmt.Fprintln(env.stderr, "toolsrv ls:", empty)
		return 1
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	for _, t := range cat.Tools {
		// One line each: a description's line feeds (an imported
		// tool's may have any) must not start lines of the listing.
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Tier, strings.Join(strings.Fields(t.Description), " "))
	}
	tw.Flush()
	if n := len(cat.InvalidFiles()); n > 0 {
		fmt.Fprintf(env.stderr, "%d invalid tool file(s) or MCP server(s) left out; run \"toolsrv validate\" for details\n", n)
	}
	held := heldNames(mf)
	if n := len(cat.Hidden) - len(held); n > 0 {
		fmt.Fprintf(env.stderr, "%d tool(s) hidden on this host (no variant matches); \"toolsrv show NAME\" says why\n", n)
	}
	for _, note := range mf.notes() {
		fmt.Fprintln(env.stderr, "warning:", note)
	}
	mf.printHeld(env.stderr)
	return 0
}

// catalogView is the JSON shape of a catalog for ls --json.
type catalogView struct {
	Revision uint64             `json:"revision"`
	Dirs     []string           `json:"dirs"`
	Tools    []*registry.Tool   `json:"tools"`
	Hidden   []registry.Hidden  `json:"hidden"`
	Problems []registry.Problem `json:"problems"`
	Shadowed []registry.Shadow  `json:"shadowed"`
}

func catalogJSON(c *registry.Catalog) catalogView {
	v := catalogView{Revision: c.Revision, Dirs: c.Dirs, Tools: c.Tools, Hidden: c.Hidden, Problems: c.Problems, Shadowed: c.Shadowed}
	if v.Tools == nil {
		v.Tools = []*registry.Tool{}
	}
	if v.Hidden == nil {
		v.Hidden = []registry.Hidden{}
	}
	if v.Problems == nil {
		v.Problems = []registry.Problem{}
	}
	if v.Shadowed == nil {
		v.Shadowed = []registry.Shadow{}
	}
	return v
}
