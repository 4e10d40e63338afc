package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolsrv/toolsrv/registry"
)

func runValidate(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "validate", "validate [--tools DIR] [--agents DIR] [--mcp-config FILE] [--json] [DIR...]",
		"Checks every .meta file and lists every problem (file, line or field, and what to do),\n"+
			"then warnings, shadowed definitions and hidden tools, then the agent profiles: keys,\n"+
			"and tool names that are not tools of this catalog. Exits 1 when any tool or profile\n"+
			"is invalid.\n"+
			"Directories given as arguments are checked instead of the tool path; profiles are then\n"+
			"checked only when --agents is given. With --mcp-config, the servers are started and\n"+
			"their problems listed too (a server that cannot start, a tool it offers that is unusable).")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	agents := fs.String("agents", "", "agent profiles directory (default ~/.config/ollie/agents, as for serve)")
	mf := addMCPFlags(fs)
	mf.ownWarnings = true
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	agentsSet := false
	fs.Visit(func(f *flag.Flag) { agentsSet = agentsSet || f.Name == "agents" })
	for _, d := range fs.Args() {
		_ = tools.Set(d)
	}
	// A directory that does not exist is an error, not "0 valid".
	// A configuration that cannot be read is an error here.
	badConfig := false
	if _, err := mf.load(env, "validate"); err != nil {
		fmt.Fprintln(env.stdout, "error:", err)
		badConfig = true
	}
	cat, _, done, err := loadCatalog(ctx, env, "validate", tools, mf)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv validate:", err)
		return 1
	}
	defer done()
	var rep profileReport
	if agentsSet || fs.NArg() == 0 {
		if *agents == "" {
			*agents = registry.DefaultAgentsDir(env.getenv)
		}
		rep.Dir = *agents
		rep.Checked, rep.Problems, err = registry.CheckProfiles(*agents, cat)
		if err != nil {
			fmt.Fprintln(env.stderr, "toolsrv validate:", err)
			return 1
		}
	}
	if *asJSON {
		if rep.Problems == nil {
			rep.Problems = []registry.ProfileProblem{}
		}
		_ = writeJSON(env.stdout, validateView{catalogJSON(cat), rep, mf.warnings()})
	} else {
		for _, w := range mf.warnings() {
			fmt.Fprintln(env.stdout, "warning:", w)
		}
		printReport(env, cat)
		printProfiles(env, rep)
	}
	if len(cat.Problems) > 0 || rep.invalid() > 0 || badConfig {
		return 1
	}
	return 0
}

// profileReport is what validate found in the agent profiles directory.
type profileReport struct {
	Dir      string                    `json:"dir,omitempty"`
	Checked  int                       `json:"checked"`
	Problems []registry.ProfileProblem `json:"problems"`
}

// invalid counts the profiles with at least one error.
func (r profileReport) invalid() int {
	bad := map[string]bool{}
	for _, p := range r.Problems {
		if !p.Warning {
			bad[p.File] = true
		}
	}
	return len(bad)
}

// validateView is validate --json: the catalog as ls --json shows it, and
// the profiles.
type validateView struct {
	catalogView
	Profiles profileReport `json:"profiles"`
	// MCPWarnings are the --mcp-config file's warnings (an unknown key, a
	// disabled server, a package runner without network).
	MCPWarnings []string `json:"mcpWarnings,omitempty"`
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
	fmt.Fprintf(w, "%d valid, %d invalid, %d hidden, %d shadowed\n", len(cat.Tools), len(cat.InvalidFiles()), len(cat.Hidden), len(cat.Shadowed))
}

func printProfiles(env *cliEnv, rep profileReport) {
	if rep.Checked == 0 {
		return
	}
	w := env.stdout
	for _, p := range rep.Problems {
		kind := "error"
		if p.Warning {
			kind = "warning"
		}
		fmt.Fprintf(w, "%s: agent %s: %s\n", kind, p.Agent, p.Error())
	}
	fmt.Fprintf(w, "agent profiles in %s: %d checked, %d invalid\n", rep.Dir, rep.Checked, rep.invalid())
}
