package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/mcp"
)

const mcpLoginAbout = `Logs toolsrv in to the MCP server NAME of --mcp-config, an http server that asks
for OAuth authorization, once, as you: toolsrv finds the server's authorization
server (its protected resource metadata), registers there if it must (a client
ID metadata document, the entry's pre-registered "clientId", or dynamic
registration), and prints the address to open in a browser (and starts one:
$BROWSER, else xdg-open on a desktop; --no-browser only prints it). Once you
allow it, the browser comes back to toolsrv on 127.0.0.1 and the login is
saved, mode 0600, in $XDG_STATE_HOME/toolsrv/mcp-tokens/NAME.json (else
~/.local/state/toolsrv/mcp-tokens/): every toolsrv command that imports the
server uses it from then on, refreshing its token, a running one at its next
try. "toolsrv mcp logout NAME" forgets it. A server whose entry has
"oauth": {"grant": "client_credentials", ...} needs no login: this only checks
that toolsrv gets a token. See docs/mcp.md.`

const mcpLogoutAbout = `Forgets the saved OAuth login of MCP server NAME: removes
$XDG_STATE_HOME/toolsrv/mcp-tokens/NAME.json (else
~/.local/state/toolsrv/mcp-tokens/NAME.json). The tokens stay valid at the
authorization server until they expire: revoke toolsrv's access there too
(the service's settings) if they may have been seen.`

// mcpSubcommands are the subcommands of "toolsrv mcp" (which serves
// without one): they come first.
var mcpSubcommands = map[string]func(ctx context.Context, env *cliEnv, args []string) int{
	"login":  runMCPLogin,
	"logout": runMCPLogout,
}

func runMCPLogin(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "mcp login", "mcp login [--mcp-config FILE] [--no-browser] [--timeout D] NAME", mcpLoginAbout)
	mf := addMCPFlags(fs)
	noBrowser := fs.Bool("no-browser", false, "only print the address to open; start no browser")
	timeout := fs.Duration("timeout", mcp.DefaultLoginTimeout, "how long the login may take, your time in the browser included")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "give the NAME of one server of the mcp config")
	}
	if *timeout <= 0 {
		return usageError(fs, "--timeout %v: want a positive duration such as 5m", *timeout)
	}
	name := fs.Arg(0)
	sc, err := configuredServer(env, mf, "mcp login", name)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv mcp login:", err)
		return 1
	}
	res, err := mcp.Login(ctx, *sc, mcp.LoginOptions{TokenDir: mcp.DefaultTokenDir(env.getenv), Timeout: *timeout,
		Open: browserOpener(env, name, *noBrowser), Version: moduleVersion(), Logger: logger(env)})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv mcp login:", err)
		return 1
	}
	switch {
	case res.Saved:
		fmt.Fprintf(env.stdout, "logged in to mcp server %s (%d tools); the login is saved in %s (toolsrv mcp logout %s forgets it)\n", name, res.Tools, res.File, name)
		if !res.Expiry.IsZero() {
			how := "it is refreshed without you"
			if !res.Refresh {
				how = "no refresh token was given: log in again then"
			}
			fmt.Fprintf(env.stdout, "the access token expires at %s; %s\n", res.Expiry.Local().Format(time.DateTime), how)
		}
	case res.Authorized:
		fmt.Fprintf(env.stdout, "mcp server %s: authorized with the client credentials grant (%d tools); nothing is saved: toolsrv gets a token itself whenever the server asks\n", name, res.Tools)
	default:
		fmt.Fprintf(env.stdout, "mcp server %s did not ask for authorization (%d tools): nothing to log in to, nothing saved\n", name, res.Tools)
	}
	return 0
}

func runMCPLogout(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "mcp logout", "mcp logout NAME", mcpLogoutAbout)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "give the NAME of the server whose login to forget")
	}
	name, dir := fs.Arg(0), mcp.DefaultTokenDir(env.getenv)
	gone, err := mcp.Logout(dir, name)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv mcp logout:", err)
		return 1
	}
	if !gone {
		fmt.Fprintf(env.stdout, "no saved login of mcp server %s (%s)\n", name, mcp.LoginFile(dir, name))
		return 0
	}
	fmt.Fprintf(env.stdout, "forgot the saved login of mcp server %s (removed %s)\n", name, mcp.LoginFile(dir, name))
	return 0
}

// configuredServer is the entry name of the mcp config, or why it cannot
// be used.
func configuredServer(env *cliEnv, mf *mcpFlags, cmd, name string) (*mcp.ServerConfig, error) {
	cfg, err := mf.load(env, cmd)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, errors.New("no mcp config: pass --mcp-config FILE (or set $TOOLSRV_MCP_CONFIG)")
	}
	var names []string
	for _, s := range cfg.Servers {
		if s.Name == name {
			return &s, nil
		}
		names = append(names, s.Name)
	}
	for _, p := range cfg.Problems {
		if p.Server == name && !p.Warning {
			return nil, fmt.Errorf("%v; fix its entry in %s", p, cfg.File)
		}
	}
	return nil, fmt.Errorf("no usable server %q in %s (servers: %s)", name, cfg.File, strings.Join(names, ", "))
}

// browserOpener shows the authorization address on standard error (its
// text is the authorization server's: written through termSafe) and
// starts a browser on it: $BROWSER (a command; %s in it is the address,
// else the address is its last argument), else xdg-open where there is a
// display. The browser gets the address as one argument, never through a
// shell.
func browserOpener(env *cliEnv, server string, noBrowser bool) func(context.Context, string) error {
	return func(ctx context.Context, addr string) error {
		fmt.Fprintf(env.stderr, "toolsrv mcp login: to let toolsrv reach mcp server %s, open this address in a browser and allow it:\n\n  %s\n\n", server, addr)
		if noBrowser {
			return nil
		}
		argv := browserCommand(env.getenv, addr)
		if argv == nil {
			fmt.Fprintln(env.stderr, "toolsrv mcp login: no browser to start ($BROWSER is not set, and there is no display): open the address yourself; toolsrv waits for it")
			return nil
		}
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv mcp login: starting %s: %v: open the address yourself; toolsrv waits for it\n", argv[0], err)
			return nil
		}
		go cmd.Wait()
		return nil
	}
}

// browserCommand is the command that opens addr in a browser, or nil.
func browserCommand(getenv func(string) string, addr string) []string {
	b, _, _ := strings.Cut(getenv("BROWSER"), ":")
	if f := strings.Fields(b); len(f) > 0 {
		has := false
		for i, a := range f {
			if strings.Contains(a, "%s") {
				f[i], has = strings.ReplaceAll(a, "%s", addr), true
			}
		}
		if !has {
			f = append(f, addr)
		}
		return f
	}
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return nil
	}
	if _, err := osexec.LookPath("xdg-open"); err != nil {
		return nil
	}
	return []string{"xdg-open", addr}
}
