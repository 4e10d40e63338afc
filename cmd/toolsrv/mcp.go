package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/registry"
)

const mcpAbout = `Serves the catalog to MCP clients (Claude Code, Claude Desktop, Cursor, VS Code,
the MCP Inspector) over standard input and output, or over streamable HTTP with
--listen HOST:PORT (loopback unless --allow-remote: MCP over HTTP has no
authentication here). Its tools:
  find_tools {query, context?, limit?, explain?}
                                        the tools that fit a request (thresholds applied),
                                        with schema and score, or "no tool fits"; with
                                        explain, why (signals, matched words, rules)
  call_tool {name, arguments}           runs one, sandboxed, as "toolsrv call" does
  and the hot tools of --agent's profile, listed directly.
With --native, the tools find_tools finds are added to the tool list too, under
their own names (SERVER__TOOL for an imported SERVER:TOOL), so that the model
calls them directly; past --native-cap the least recently used leave it.
With --mcp-config FILE, the tools of other MCP servers join the catalog as
SERVER:TOOL. The catalog is live: clients get notifications/tools/list_changed
when the listed tools change. Nothing but MCP messages goes to standard output;
logs go to standard error. On standard input and output, a line that is not
JSON-RPC gets a JSON-RPC error and the session goes on; closing standard input
ends the server within a second, calls still running included.
"toolsrv mcp login NAME" logs toolsrv in to an imported http server that asks for
OAuth, "toolsrv mcp logout NAME" forgets that login (each explains itself with -h).`

func runMCP(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) > 0 {
		if sub, ok := mcpSubcommands[args[0]]; ok { // login, logout (mcplogin.go)
			return sub(ctx, env, args[1:])
		}
	}
	fs, tools := newFlags(env, "mcp", "mcp [--tools DIR] [--mcp-config FILE] [--agent NAME] [--native [--native-cap N]] [--listen HOST:PORT [--allow-remote]] [--workdir DIR] [flags]", mcpAbout)
	listen := fs.String("listen", "", "serve streamable HTTP on HOST:PORT (at /mcp) instead of standard input and output")
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback (anyone who reaches it can find and call tools)")
	agent := fs.String("agent", "", "agent profile NAME (in --agents): its hot tools are listed directly, and only the tools it allows are found and called")
	native := fs.Bool("native", false, "add the tools find_tools finds to tools/list under their own names (SERVER__TOOL for SERVER:TOOL), with their schemas, so that the model calls them directly")
	nativeCap := fs.Int("native-cap", mcp.DefaultNativeCap, "with --native, the most found tools listed; past it the least recently found or called leave the list")
	limit := fs.Int("limit", 0, "the most tools find_tools returns when the request does not say (0: the thresholds decide)")
	sv := addServingFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := sv.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *nativeCap < 1 {
		return usageError(fs, "--native-cap %d: want 1 or more", *nativeCap)
	}
	if *limit < 0 {
		return usageError(fs, "--limit %d: want 0 or more", *limit)
	}
	if *agent != "" {
		if err := registry.ValidName(*agent); err != nil {
			return usageError(fs, "--agent %q: %v", *agent, err)
		}
	}
	if *listen != "" {
		host, _, err := net.SplitHostPort(*listen)
		if err != nil {
			return usageError(fs, "--listen %q: want HOST:PORT, e.g. 127.0.0.1:8765", *listen)
		}
		if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
			if !*allowRemote {
				return usageError(fs, "--listen %s is not a loopback address; MCP over HTTP has no authentication here, so pass --allow-remote to serve it anyway", *listen)
			}
			fmt.Fprintf(env.stderr, "toolsrv mcp: WARNING: serving on %s without authentication: anyone who can reach it can find and call tools\n", *listen)
		}
	}
	// On standard input and output, what keeps it from serving as asked
	// is served instead (mcpFailure): the client shows it.
	var failure string
	srvd, code := sv.setup(ctx, env, tools, servingSetup{cmd: "mcp", limit: *limit, failed: func(r string) { failure = r }})
	if srvd == nil {
		if *listen == "" && failure != "" {
			return serveMCPFailure(ctx, env, failure, loggerAt(env, sv.verbose.level(slog.LevelWarn)))
		}
		return code
	}
	eng, log := srvd.eng, srvd.log
	env = srvd.env
	srvd.warnWorkDir()
	var profile *registry.Profile
	if *agent != "" {
		p, err := agentProfile(sv.agents, *agent)
		if err != nil {
			eng.Close()
			fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
			if *listen == "" {
				return serveMCPFailure(ctx, env, err.Error(), log)
			}
			return 1
		}
		profile = p
	}
	srv := mcp.NewServer(mcp.ServerOptions{Engine: eng, Profile: profile, Native: *native, NativeCap: *nativeCap, Version: moduleVersion(), Logger: log,
		Call: exec.CallContext{WorkDir: srvd.workdir, Agent: *agent, ToolsPath: joinDirs(srvd.dirs)}})

	ctx, cancel := context.WithCancel(ctx)
	bg := &background{eng: eng, cancel: cancel}
	bg.start(func() {
		if err := eng.Run(ctx); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv mcp: watching the tool directories stopped: %v; restart to see changes\n", err)
		}
	})
	bg.start(func() { srv.Follow(ctx) })
	cat := eng.Catalog()
	if *listen == "" {
		fmt.Fprintf(env.stderr, "toolsrv mcp: %d tools (revision %d); serving MCP on standard input and output\n", len(cat.Tools), cat.Revision)
		return serveMCPStdio(ctx, env, srv, log, bg)
	}
	defer bg.stop(time.Time{})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
		return 1
	}
	// The SDK refuses a loopback request naming another host (DNS
	// rebinding); cross-origin protection refuses a browser's request
	// sent from another site's page (by Sec-Fetch-Site, else Origin):
	// any web page could otherwise try to reach a server on loopback
	// and call tools. Clients that are not browsers send neither header.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv.MCP() }, &sdk.StreamableHTTPOptions{Logger: log})
	hs := &http.Server{Handler: http.NewCrossOriginProtection().Handler(h), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.stderr, "toolsrv mcp: %d tools (revision %d); serving MCP on http://%s/mcp\n", len(cat.Tools), cat.Revision, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		hs.Shutdown(sctx)
		return 0
	case err := <-errc:
		fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
		return 1
	}
}

func joinDirs(dirs []string) string { return strings.Join(dirs, ":") }
