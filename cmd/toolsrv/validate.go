package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolsrv/toolsrv/mcp"
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
	held := mf.held()
	if *asJSON {
		if rep.Problems == nil {
			rep.Problems = []registry.ProfileProblem{}
		}
		_ = writeJSON(env.stdout, validateView{catalogJSON(cat), rep, append(mf.warnings(), mf.notes()...), heldJSON(mf, held), textWarnings(cat, held)})
	} else {
		for _, w := range append(mf.warnings(), mf.notes()...) {
			fmt.Fprintln(env.stdout, "warning:", w)
		}
		printReport(env, cat, mf)
		printProfiles(env, rep)
	}
	if len(cat.Problems) > 0 || rep.invalid() > 0 || badConfig || len(held) > 0 {
		return 1
	}
	return 0
}

// heldView is a held tool in validate --json.
type heldView struct {
	Name string `json:"name"`
	// New: a tool its server added (else its definition changed).
	New    bool     `json:"new"`
	SHA256 string   `json:"sha256"`
	Diff   []string `json:"diff"`
	// Approve is the command that approves it.
	Approve string `json:"approve"`
}

func heldJSON(mf *mcpFlags, held []*mcp.Held) []heldView {
	out := []heldView{}
	for _, h := range held {
		out = append(out, heldView{Name: h.Server + registry.ProviderSep + h.Tool, New: h.New, SHA256: h.Hash, Diff: h.Diff(), Approve: mf.approveCommand(h)})
	}
	return out
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
	// disabled server, a package runner without network) and its
	// servers' (tools dropped past a bound, pins not kept).
	MCPWarnings []string `json:"mcpWarnings,omitempty"`
	// Held are the imported tools held until approved.
	Held []heldView `json:"held"`
	// TextWarnings are the descriptions that address the model.
	TextWarnings []textWarning `json:"textWarnings"`
}

func printReport(env *cliEnv, cat *registry.Catalog, mf *mcpFlags) {
	w := env.stdout
	for _, p := range cat.Problems {
		fmt.Fprintf(w, "error: %s\n", p.Error())
	}
	for _, t := range cat.Tools {
		for _, warn := range t.Warnings {
			fmt.Fprintf(w, "warning: %s: %s\n", t.File, warn)
		}
	}
	for _, tw := range textWarnings(cat, mf.held()) {
		fmt.Fprintf(w, "warning: %s: %s\n", tw.File, tw.Msg)
	}
	for _, s := range cat.Shadowed {
		fmt.Fprintf(w, "shadowed: %s is overridden by %s\n", s.File, s.ShadowedBy)
	}
	held := heldNames(mf)
	for _, h := range cat.Hidden {
		if !held[h.Name] {
			fmt.Fprintf(w, "hidden: %s: %s\n", h.File, h.Reason)
		}
	}
	mf.printHeld(w)
	fmt.Fprintf(w, "%d valid, %d invalid, %d hidden, %d shadowed", len(cat.Tools), len(cat.InvalidFiles()), len(cat.Hidden)-len(held), len(cat.Shadowed))
	if len(held) > 0 {
		fmt.Fprintf(w, ", %d held", len(held))
	}
	fmt.Fprintln(w)
}

// heldNames are the catalog names of the tools mf's servers hold.
func heldNames(mf *mcpFlags) map[string]bool {
	out := map[string]bool{}
	for _, h := range mf.held() {
		out[h.Server+registry.ProviderSep+h.Tool] = true
	}
	return out
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
