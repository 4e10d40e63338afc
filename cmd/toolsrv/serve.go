package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// listenList is the repeatable --listen flag.
type listenList []string

func (l *listenList) String() string     { return strings.Join(*l, ", ") }
func (l *listenList) Set(v string) error { *l = append(*l, v); return nil }

const serveAbout = `Serves the catalog, ranking and calls as a 9P2000.L file tree (see the ninep
package documentation for the tree). It loads the tools, builds or opens the
index, watches the tool directories, and listens on a Unix socket (mode 0600)
until SIGINT or SIGTERM:
  default  unix:$XDG_RUNTIME_DIR/toolsrv/9p.sock, or unix:~/.cache/toolsrv/9p.sock
TCP only when asked (--listen tcp:HOST:PORT), loopback unless --allow-remote.
A TCP client gets nothing until it sends the token as its attach name (aname):
diodls -a TOKEN, mount -t 9p -o aname=TOKEN; "toolsrv 9p --addr tcp:..." sends
it. The token is --token-file's, else $TOOLSRV_9P_TOKEN, else one toolsrv
makes (and reuses) in $XDG_STATE_HOME/toolsrv/9p-token (else
~/.local/state/toolsrv/9p-token); toolsrv says which file at start, never
the token. The Unix socket needs none (it serves its owner's processes only)
and ignores the attach name. Tools called through the tree get $TOOLSRV_ADDR
(the first address), $OLLIE_SESSION_ID and $OLLIE_UNAME (and $TOOLSRV_BIN when
the server has it), so a tool such as tool_load can write back to its own agent:
"toolsrv 9p write session/$OLLIE_SESSION_ID/agent/$OLLIE_UNAME/ctl ...".
Tools never get the token, so give them a unix: address first.

Remote hosts (see docs/federation.md):
  serve --stdio   one connection on standard input and output, what
                  "toolsrv 9p --addr ssh:HOST" runs there: relayed to this user's
                  server on its socket, started (with the other flags; its log in
                  $XDG_STATE_HOME/toolsrv/serve.log) if none runs
  --remote NAME=ssh:[USER@]HOST[:PORT]
                  federate that host's toolsrv: its tools join this catalog as
                  NAME:TOOL, ranked here, run there ($TOOLSRV_SSH_COMMAND replaces
                  ssh; $TOOLSRV_REMOTE_CMD or --remote-cmd replaces toolsrv there)
  --remote-tools NAME=DIR
                  send DIR's .meta files to it first (resolved on its host)
  --remote-config FILE
                  {"remotes": [{"name", "addr", "tools", "session", "agent",
                  "workdir", "remoteCmd"}]}`

func runServe(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "serve", "serve [--tools DIR] [--listen unix:PATH|tcp:HOST:PORT]... [--allow-remote] [--token-file FILE] [--mcp-config FILE] [flags]", serveAbout)
	var listens listenList
	fs.Var(&listens, "listen", "address to serve on, unix:PATH or tcp:HOST:PORT (repeatable; default the Unix socket above); a TCP client must send the token")
	allowRemote := fs.Bool("allow-remote", false, "allow a TCP address that is not loopback (anyone who reaches it and has the token can load and call tools; the token crosses the network in clear text)")
	tokenFile := fs.String("token-file", "", "with --listen tcp:, the file holding the token TCP clients must send as their attach name (default $"+NinePTokenEnv+", else a token toolsrv makes in $XDG_STATE_HOME/toolsrv/9p-token)")
	warm := fs.Int("warm-turns", 5, "turns a warm tool may stay unused before it is unloaded")
	limit := fs.Int("limit", 10, "the most tools a rank answer holds when the request does not say (0: the thresholds decide)")
	fs.IntVar(limit, "rank-k", 10, "the older name of --limit")
	sv := addServingFlags(fs)
	stdio := fs.Bool("stdio", false, "serve one connection on standard input and output (what ssh runs: toolsrv 9p --addr ssh:HOST), relayed to this user's running server on its Unix socket, which is started (with the other flags) if none runs")
	rf := addRemoteFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q (addresses go in --listen)", fs.Arg(0))
	}
	if *stdio {
		return runServeStdio(ctx, env, args, listens, tools)
	}
	if err := sv.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *limit < 0 {
		return usageError(fs, "--limit %d: want 0 or more", *limit)
	}

	// Addresses first: a bad one is a usage error, before any work.
	if len(listens) == 0 {
		listens = listenList{"unix:" + ninep.DefaultSocket(env.getenv)}
	}
	var addrs []ninep.Addr
	tcp := false
	for _, s := range listens {
		a, err := ninep.ParseAddr(s)
		if err != nil {
			return usageError(fs, "--listen %v", err)
		}
		if !a.Loopback() {
			if !*allowRemote {
				return usageError(fs, "--listen %s is not a loopback address; anyone who can reach it could try tokens, and the token would cross the network in clear text (9P has no encryption), so pass --allow-remote to serve it anyway", a)
			}
			fmt.Fprintf(env.stderr, "toolsrv serve: WARNING: serving on %s, which other machines may reach: the token crosses the network in clear text (9P has no encryption); anyone who learns it can load and call tools\n", a)
		}
		tcp = tcp || a.Net == "tcp"
		addrs = append(addrs, a)
	}
	if !tcp && *tokenFile != "" {
		return usageError(fs, "--token-file is for --listen tcp: only (the Unix socket takes no token)")
	}
	if *warm < 1 {
		return usageError(fs, "--warm-turns %d: must be at least 1", *warm)
	}
	first := addrs[0].String()
	var sockets []string
	for _, a := range addrs {
		if a.Net == "unix" {
			sockets = append(sockets, a.Addr)
		}
	}
	var tok listenToken
	var private []string
	if tcp {
		var err error
		if tok, err = serverToken(env, tokenSource{file: *tokenFile, envVar: NinePTokenEnv, name: ninePTokenName}); err != nil {
			fmt.Fprintln(env.stderr, "toolsrv serve:", err)
			return 1
		}
		if *tokenFile != "" {
			// Tools must not read the token: a working directory that
			// holds it is refused, as one holding the usage history is.
			abs, err := filepath.Abs(*tokenFile)
			if err != nil {
				fmt.Fprintln(env.stderr, "toolsrv serve:", err)
				return 1
			}
			private = append(private, abs)
		}
	}
	srvd, code := sv.setup(ctx, env, tools, servingSetup{cmd: "serve", limit: *limit, sockets: sockets, private: private, providers: rf.providers, own: rf.own, tune: func(o *exec.Options) {
		self := o.SelfExe
		if exe, err := os.Executable(); err == nil {
			self = exe
		}
		o.ClientBin = self // tool_load runs "$TOOLSRV_BIN 9p write …"
		o.PassEnv = []string{ninep.AddrEnv}
		getenv := o.Getenv
		o.Getenv = func(k string) string {
			if k == ninep.AddrEnv {
				return first
			}
			return getenv(k)
		}
	}})
	if srvd == nil {
		return code
	}
	eng, log := srvd.eng, srvd.log
	env = srvd.env
	defer eng.Close()
	reg := eng.Registry()
	runner := eng.Runner()
	defer runner.Close() // the helpers prepared for calls that did not come
	agents, guard := sv.agents, srvd.guard

	srv, err := ninep.New(ninep.Options{
		Source:     loggedSource{reg, log},
		Ranker:     eng,
		Caller:     eng,
		Loaded:     eng.Loaded,
		NoToolFits: eng.NoToolFits,
		Profiles: loggedProfiles(func(name string) (*registry.Profile, error) {
			return registry.LoadProfile(agents, name)
		}, log),
		WorkDir:   srvd.workdir,
		WarmTurns: *warm,
		Logger:    log,
		Access:    func(nc net.Conn) ninep.Access { return peerAccess(runner, nc) },
		CheckWorkDir: func(dir string) (string, error) {
			real, _, err := guard.Check(dir)
			return real, err
		},
		Overlays: func(session string) ninep.Overlay { return eng.NewOverlay(session) },
		Build:    buildText(),
		Token:    tok.secret,
	})
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv serve: %v\n", err)
		return 1
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if log.Enabled(ctx, slog.LevelInfo) {
		logged := reg.Subscribe(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			logChanges(logged, log)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := eng.Run(ctx); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv serve: watching the tool directories stopped: %v; restart to see changes\n", err)
		}
	}()

	errs := make(chan error, len(addrs))
	for _, a := range addrs {
		nl, err := ninep.Listen(ctx, a)
		if err != nil {
			cancel()
			fmt.Fprintf(env.stderr, "toolsrv serve: %v\n", err)
			return 1
		}
		l := net.Listener(nl)
		if log.Enabled(ctx, slog.LevelInfo) {
			l = &loggedListener{Listener: nl, log: log}
		}
		shown := a
		if a.Net == "tcp" {
			shown.Addr = nl.Addr().String() // (the port chosen for :0)
		}
		fmt.Fprintf(env.stderr, "toolsrv serve: listening on %s\n", shown)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ctx, l); err != nil {
				errs <- err
			}
		}()
	}
	srvd.warnWorkDir() // (after the socket directories are made)
	if tcp {
		fmt.Fprintf(env.stderr, "toolsrv serve: TCP clients must send the token as their attach name (aname): %s\n", tok.where)
		if addrs[0].Net == "tcp" {
			fmt.Fprintf(env.stderr, "toolsrv serve: warning: tools that talk back (tool_load) get %s=%s, where they are refused: they never get the token; put a --listen unix: address first\n", ninep.AddrEnv, first)
		}
	}
	fmt.Fprintf(env.stderr, "toolsrv serve: %d tools (revision %d); clients: %s=%s toolsrv 9p ls /\n",
		len(reg.Catalog().Tools), reg.Catalog().Revision, ninep.AddrEnv, first)
	select {
	case <-ctx.Done():
		fmt.Fprintln(env.stderr, "toolsrv serve: shutting down")
		return 0
	case err := <-errs:
		cancel()
		fmt.Fprintf(env.stderr, "toolsrv serve: %v\n", err)
		return 1
	}
}

// peerAccess decides what a 9P connection may do from who is connecting:
// a tool call of this server (or a process it started) gets its own agent
// only; a tool of another toolsrv, or of a call that ended, nothing; a
// process of another user nothing; the socket owner's other processes
// everything. TCP connections cannot be identified: once they sent the
// token (ninep.Options.Token) they get everything but sending tool
// definitions (TCP is loopback-only unless --allow-remote).
func peerAccess(r *exec.Runner, nc net.Conn) ninep.Access {
	p, err := r.Identify(nc)
	switch {
	case errors.Is(err, exec.ErrNotUnix):
		host := nc.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return ninep.Access{Unauthenticated: "this is a TCP connection, whose peer the operating system cannot identify", Host: "tcp:" + host}
	case err != nil:
		return ninep.Access{Denied: "refused: the connecting process could not be identified: " + err.Error()}
	case p.UID != os.Getuid() && p.UID != 0:
		return ninep.Access{Denied: fmt.Sprintf("refused: the connecting process runs as uid %d; this server serves uid %d only", p.UID, os.Getuid())}
	case !p.Tool:
		return ninep.Access{Host: sshHost(p.PID)}
	case p.Call != nil && p.Call.Session != "" && p.Call.Agent != "":
		return ninep.Access{Session: p.Call.Session, Agent: p.Call.Agent}
	case p.Call != nil:
		return ninep.Access{Denied: "refused: this connection comes from a tool called without a session and agent; it may do nothing here"}
	}
	return ninep.Access{Denied: "refused: this connection comes from a sandboxed tool that is not a running call of this server (a call of another toolsrv, or of a call that has ended); it may do nothing here"}
}

// sshHost is the remote host a process of this user serves under ssh (a
// "toolsrv serve --stdio" relay, a shell of a remote login): "ssh:ADDR"
// from its SSH_CONNECTION, which sshd sets; "" for a local process (or one
// whose environment cannot be read). The usage history records its 9P
// agents as that host's.
func sshHost(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("SSH_CONNECTION=")); ok {
			if f := strings.Fields(string(v)); len(f) > 0 {
				return "ssh:" + f[0]
			}
		}
	}
	return ""
}

// workDirGuard protects the home directory and toolsrv's own files from
// becoming a session's working directory (see exec.WorkDirGuard): the
// tool directories dirs, the agent profiles, the directories of the Unix
// sockets the server listens on (sockets; the default socket and
// $TOOLSRV_ADDR's are added, since a call or an MCP server's tools may
// talk to a server they do not know), the bypass broker's directory,
// toolsrv's cache and configuration, the usage history (private: tools
// may not read it either), and what the command was pointed at (see
// ownPaths). The guard resolves symlinks in all of them at every check.
func workDirGuard(env *cliEnv, dirs []string, agents string, sockets []string, bypassSocket string, own guardPaths) *exec.WorkDirGuard {
	g := &exec.WorkDirGuard{Home: env.getenv("HOME")}
	if g.Home == "" {
		g.Home, _ = os.UserHomeDir()
	}
	g.Protected = append(g.Protected, dirs...)
	g.Protected = append(g.Protected, agents)
	g.Protected = append(g.Protected, own.protected...)
	g.Private = append(g.Private, own.private...)
	sockets = append(sockets, ninep.DefaultSocket(env.getenv))
	if a, err := ninep.ParseAddr(env.getenv(ninep.AddrEnv)); err == nil && a.Net == "unix" {
		sockets = append(sockets, a.Addr)
	}
	for _, s := range sockets {
		g.Trees = append(g.Trees, filepath.Dir(s))
	}
	if bypassSocket != "" {
		g.Protected = append(g.Protected, filepath.Dir(bypassSocket))
	}
	if d := env.getenv("XDG_CACHE_HOME"); d != "" {
		g.Trees = append(g.Trees, filepath.Join(d, "toolsrv"))
	}
	if d := env.getenv("XDG_CONFIG_HOME"); d != "" {
		g.Trees = append(g.Trees, filepath.Join(d, "toolsrv"))
	}
	// The usage history (and serve --stdio's log): a tool that could write
	// there could make toolsrv rank its way, one that could read it would
	// learn the users' requests.
	g.Private = append(g.Private, stateDir(env))
	// The saved OAuth logins of MCP servers: their tokens.
	g.Private = append(g.Private, mcp.DefaultTokenDir(env.getenv))
	return g
}

// guardPaths are paths of toolsrv's own beyond those workDirGuard knows:
// protected (kept read-only in a working directory that holds them) and
// private (no working directory may hold them).
type guardPaths struct {
	protected, private []string
}

// ownPaths are the files and directories given on the command line (or by
// the environment) that toolsrv reads as its own, beyond the defaults
// workDirGuard knows: a tool that could write one could grant itself more
// at the next start (an MCP server's sandbox in the --mcp-config file, a
// remote's command), or make toolsrv rank and offer its way (thresholds,
// the index cache). Each is kept read-only for a call whose working
// directory holds it, and refused as a working directory itself. The
// embedded usage store's directory (the store, its log, its saved view,
// damaged copies set aside) is private: tools may not read the users'
// requests either.
func ownPaths(env *cliEnv, mf *mcpFlags, hf *historyFlags, thresholdsFile, cacheDir string) guardPaths {
	var own guardPaths
	if mf != nil {
		own.protected = append(own.protected, mf.path(env))
	}
	if thresholdsFile == "" {
		thresholdsFile = env.getenv(thresholds.EnvPath)
	}
	own.protected = append(own.protected, thresholdsFile, cacheDir)
	own.protected = slices.DeleteFunc(own.protected, func(p string) bool { return p == "" })
	// (a database URL names no directory)
	if hf != nil && hf.target.db != "" && !strings.Contains(hf.target.db, "://") {
		own.private = append(own.private, filepath.Dir(hf.target.db))
	}
	return own
}
