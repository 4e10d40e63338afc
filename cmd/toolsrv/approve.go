package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/registry"
)

const approveAbout = `Approves imported tools that toolsrv holds: a tool of an MCP server (--mcp-config)
whose definition (name, title, description, input schema, annotations) changed since
you approved it, or that the server added since (unless its entry says
"trustNewTools": true). toolsrv validate and ls show each held tool, what changed,
and the command that approves it: SERVER:TOOL@SHA256, the hash of the definition
shown, so that what is approved is what you read (a definition that changed again
since is refused). Without @SHA256 the definition toolsrv last saw is approved.
The approval is kept in toolsrv's private state ($XDG_STATE_HOME/toolsrv/mcp-pins.json,
else ~/.local/state/toolsrv/mcp-pins.json); a running serve or mcp takes the tool
back within seconds, the others at their next start.`

func runApprove(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "approve", "approve [--mcp-config FILE] SERVER:TOOL[@SHA256]...", approveAbout)
	mf := addMCPFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(fs, "name the held tools to approve (toolsrv validate --mcp-config FILE lists them)")
	}
	cfg, err := mf.load(env, "approve")
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv approve:", err)
		return 1
	}
	if cfg == nil {
		return usageError(fs, "no MCP configuration: give --mcp-config FILE (or $TOOLSRV_MCP_CONFIG), the file that names the tools' servers")
	}
	pins := mcp.OpenPins(pinsPath(env), logger(env))
	code := 0
	for _, arg := range fs.Args() {
		name, hash, _ := strings.Cut(arg, "@")
		server, tool, ok := strings.Cut(name, registry.ProviderSep)
		if !ok || server == "" || tool == "" {
			return usageError(fs, "%q: want SERVER:TOOL or SERVER:TOOL@SHA256", arg)
		}
		known := false
		for _, s := range cfg.Servers {
			known = known || s.Name == server
		}
		if !known {
			fmt.Fprintf(env.stderr, "toolsrv approve: %s: %s names no server %q\n", arg, cfg.File, server)
			code = 1
			continue
		}
		sum, err := pins.Approve(ctx, cfg.File, server, tool, hash)
		if err != nil {
			fmt.Fprintln(env.stderr, "toolsrv approve:", err)
			code = 1
			continue
		}
		fmt.Fprintf(env.stdout, "approved %s (sha256 %s)\n", name, sum[:16])
	}
	return code
}
