package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/registry"
)

const mcpAbout = `Serves the catalog to MCP clients (Claude Code, Claude Desktop, Cursor, VS Code,
the MCP Inspector) over standard input and output, or over streamable HTTP with
--listen HOST:PORT (loopback unless --allow-remote). Over HTTP every request
must carry "Authorization: Bearer TOKEN": the token is --token-file's, else
$TOOLSRV_MCP_TOKEN, else one toolsrv makes (and reuses) in
$XDG_STATE_HOME/toolsrv/mcp-token (else ~/.local/state/toolsrv/mcp-token);
toolsrv says which file at start, never the token. HTTP sessions idle past
--session-timeout end, and past --max-sessions the one idle longest ends.
Clients of the 2026-07-28 revision are served without sessions. Its tools:
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
	fs, tools := newFlags(env, "mcp", "mcp [--tools DIR] [--mcp-config FILE] [--agent NAME] [--native [--native-cap N]] [--listen HOST:PORT [--allow-remote] [--token-file FILE] [--session-timeout D] [--max-sessions N]] [--workdir DIR] [flags]", mcpAbout)
	listen := fs.String("listen", "", "serve streamable HTTP on HOST:PORT (at /mcp) instead of standard input and output; every request needs the bearer token")
	allowRemote := fs.Bool("allow-remote", false, "allow a --listen address that is not loopback (anyone who reaches it and has the token can find and call tools; the token crosses the network in clear text)")
	tokenFile := fs.String("token-file", "", "with --listen, the file holding the bearer token clients must send (default $"+mcp.TokenEnv+", else a token toolsrv makes in $XDG_STATE_HOME/toolsrv/mcp-token)")
	sessionTimeout := fs.Duration("session-timeout", mcp.DefaultSessionTimeout, "with --listen, end an HTTP session no request has been open on for this long (0: never)")
	maxSessions := fs.Int("max-sessions", mcp.DefaultMaxSessions, "with --listen, the most HTTP sessions at once; past it a new one ends the one idle longest, or is refused (503) when all are in use")
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
	var token listenToken
	if *listen != "" {
		host, _, err := net.SplitHostPort(*listen)
		if err != nil {
			return usageError(fs, "--listen %q: want HOST:PORT, e.g. 127.0.0.1:8765", *listen)
		}
		if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
			if !*allowRemote {
				return usageError(fs, "--listen %s is not a loopback address; anyone who can reach it could try tokens, and the token would cross the network in clear text (no TLS here), so pass --allow-remote to serve it anyway", *listen)
			}
			fmt.Fprintf(env.stderr, "toolsrv mcp: WARNING: serving on %s, which other machines may reach: the bearer token crosses the network in clear text (no TLS here); anyone who learns it can find and call tools\n", *listen)
		}
		if *sessionTimeout < 0 {
			return usageError(fs, "--session-timeout %v: want 0 (never) or a positive duration such as 30m", *sessionTimeout)
		}
		if *maxSessions < 1 {
			return usageError(fs, "--max-sessions %d: want 1 or more", *maxSessions)
		}
		if token, err = mcpListenToken(env, *tokenFile); err != nil {
			fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
			return 1
		}
	} else {
		for _, name := range []string{"token-file", "session-timeout", "max-sessions", "allow-remote"} {
			if flagSet(fs, name) {
				return usageError(fs, "--%s is for --listen (HTTP) only", name)
			}
		}
	}
	// On standard input and output, what keeps it from serving as asked
	// is served instead (mcpFailure): the client shows it.
	var failure string
	setup := servingSetup{cmd: "mcp", limit: *limit, failed: func(r string) { failure = r }}
	if *tokenFile != "" {
		// Tools must not read the token: a working directory that holds
		// it is refused, as one holding the usage history is.
		abs, err := filepath.Abs(*tokenFile)
		if err != nil {
			fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
			return 1
		}
		setup.private = append(setup.private, abs)
	}
	srvd, code := sv.setup(ctx, env, tools, setup)
	if srvd == nil {
		if *listen == "" && failure != "" {
			return serveMCPFailure(ctx, env, failure, loggerAt(env, sv.verbose.level(slog.LevelWarn)))
		}
		return code
	}
	eng, log := srvd.eng, srvd.log
	env = srvd.env
	defer eng.Runner().Close() // the helpers prepared for calls that did not come
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
	h, err := srv.HTTPHandler(mcp.HTTPOptions{Tokens: []mcp.Token{{Secret: token.secret, Principal: mcp.OwnerPrincipal}},
		SessionTimeout: orNever(*sessionTimeout), MaxSessions: *maxSessions, Logger: log})
	if err != nil {
		ln.Close()
		fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
		return 1
	}
	// A connection that sends nothing more after its answer is closed
	// after a while (an open event stream is a response, not idle).
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	hs.RegisterOnShutdown(h.Close) // (the event streams end with their sessions)
	fmt.Fprintf(env.stderr, "toolsrv mcp: clients must send \"Authorization: Bearer TOKEN\": %s\n", token.where)
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

// mcpListenToken is the token clients of mcp --listen must send:
// --token-file's, else $TOOLSRV_MCP_TOKEN, else the one in toolsrv's
// private state directory (beside the usage history), mcp-token, made
// there at the first start.
func mcpListenToken(env *cliEnv, file string) (listenToken, error) {
	return serverToken(env, tokenSource{file: file, envVar: mcp.TokenEnv, name: "mcp-token"})
}

// orNever is a --session-timeout: 0 is never (a negative timeout for the
// handler).
func orNever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
