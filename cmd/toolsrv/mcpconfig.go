package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/registry"
)

// mcpFlags is --mcp-config: MCP servers as a tool source (ls, rank, call,
// validate, serve, mcp).
type mcpFlags struct {
	config string
	// ownWarnings: the command reports the configuration's warnings
	// itself (validate), load does not print them.
	ownWarnings bool

	loaded bool // load ran: cfg and err are its answer
	cfg    *mcp.Config
	err    error

	// provs are the providers made (providers), for what validate and
	// ls say beyond the catalog: tools held, tools dropped.
	provs []*mcp.Provider
}

func addMCPFlags(fs *flag.FlagSet) *mcpFlags {
	f := &mcpFlags{}
	fs.StringVar(&f.config, "mcp-config", "", "an MCP client configuration file ({\"mcpServers\": {NAME: {\"command\", \"args\", \"env\"} | {\"url\", \"headers\"}}});\n"+
		"its servers' tools join the catalog as NAME:TOOL (default $TOOLSRV_MCP_CONFIG)")
	return f
}

// path is --mcp-config, else $TOOLSRV_MCP_CONFIG.
func (f *mcpFlags) path(env *cliEnv) string {
	if f.config != "" {
		return f.config
	}
	return env.getenv("TOOLSRV_MCP_CONFIG")
}

// load reads the configuration (nil without one) and prints its warnings,
// once.
func (f *mcpFlags) load(env *cliEnv, cmd string) (*mcp.Config, error) {
	if f.loaded {
		return f.cfg, f.err
	}
	f.loaded = true
	p := f.path(env)
	if p == "" {
		return nil, nil
	}
	cfg, err := mcp.LoadConfig(p, env.getenv, nil)
	f.cfg, f.err = cfg, err
	if err != nil {
		return nil, err
	}
	for _, pr := range cfg.Problems {
		if pr.Warning && !f.ownWarnings {
			fmt.Fprintf(env.stderr, "toolsrv %s: warning: %s (%s)\n", cmd, pr.Error(), cfg.File)
		}
	}
	return cfg, nil
}

// warnings are the loaded configuration's warnings, each naming its
// server and the file.
func (f *mcpFlags) warnings() []string {
	if f.cfg == nil {
		return nil
	}
	var out []string
	for _, pr := range f.cfg.Problems {
		if pr.Warning {
			out = append(out, fmt.Sprintf("%s (%s)", pr.Error(), f.cfg.File))
		}
	}
	return out
}

// providers are the engine providers of the configuration's servers
// (only the one named only, when set). A configuration that cannot be
// read is a warning: the .meta tools are served without its servers.
// runner starts the stdio servers; nil makes one with the defaults.
func (f *mcpFlags) providers(env *cliEnv, cmd string, runner *exec.Runner, only string) ([]engine.Provider, error) {
	cfg, err := f.load(env, cmd)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: %v; no MCP server is imported\n", cmd, err)
		return nil, nil
	}
	if cfg == nil {
		return nil, nil
	}
	if runner == nil {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cannot find my own binary for the sandbox helper: %w", err)
		}
		if runner, err = exec.NewRunner(exec.Options{SelfExe: exec.DefaultHelper(self), Getenv: env.getenv, Logger: logger(env)}); err != nil {
			return nil, err
		}
	}
	if only != "" {
		kept := &mcp.Config{File: cfg.File}
		for _, s := range cfg.Servers {
			if s.Name == only {
				kept.Servers = append(kept.Servers, s)
			}
		}
		for _, p := range cfg.Problems {
			if p.Server == only {
				kept.Problems = append(kept.Problems, p)
			}
		}
		cfg = kept
	}
	out := mcp.Providers(cfg, mcp.ProviderOptions{Runner: runner, Logger: logger(env), Version: moduleVersion(),
		TokenDir: mcp.DefaultTokenDir(env.getenv), Pins: mcp.OpenPins(pinsPath(env), logger(env))})
	for _, p := range out {
		if mp, ok := p.(*mcp.Provider); ok {
			f.provs = append(f.provs, mp)
		}
	}
	return out, nil
}

// pinsPath is where the imported tools' definitions are pinned: beside the
// default usage store, in toolsrv's private state directory
// ($XDG_STATE_HOME/toolsrv, else ~/.local/state/toolsrv), which workDirGuard
// keeps from tools.
func pinsPath(env *cliEnv) string {
	return filepath.Join(stateDir(env), mcp.PinsFile)
}

// held are the imported tools held back from the catalog, by server.
func (f *mcpFlags) held() []*mcp.Held {
	var out []*mcp.Held
	for _, p := range f.provs {
		out = append(out, p.Held()...)
	}
	return out
}

// notes are the servers' warnings beyond the catalog (tools dropped past
// a bound, pins that could not be kept).
func (f *mcpFlags) notes() []string {
	var out []string
	for _, p := range f.provs {
		out = append(out, p.Notes()...)
	}
	return out
}

// approveCommand is the command that approves h, as validate and ls
// print it.
func (f *mcpFlags) approveCommand(h *mcp.Held) string {
	cmd := "toolsrv approve"
	if f.cfg != nil {
		cmd += " --mcp-config " + registry.QuoteArgv([]string{f.cfg.File})
	}
	return cmd + " " + h.Server + registry.ProviderSep + h.Tool + "@" + h.Hash[:16]
}

// printHeld writes, for each held tool, that it is held, what changed
// (its diff, escaped and indented: no line of it starts a line of the
// report) and the one command that approves it.
func (f *mcpFlags) printHeld(w io.Writer) {
	for _, h := range f.held() {
		full := h.Server + registry.ProviderSep + h.Tool
		switch {
		case h.New:
			fmt.Fprintf(w, "held: %s: a tool mcp server %s added since you approved the server (set \"trustNewTools\": true in its entry to take its new tools):\n", full, h.Server)
		case h.Unreadable:
			fmt.Fprintf(w, "held: %s: toolsrv cannot read its pins file (see the warning above)\n", full)
			continue
		default:
			fmt.Fprintf(w, "held: %s: its definition changed since you approved it:\n", full)
		}
		for _, l := range h.Diff() {
			fmt.Fprintf(w, "    %s\n", l)
		}
		fmt.Fprintf(w, "  to approve it: %s\n", f.approveCommand(h))
	}
}

// wait is how long a command that lists or calls once (ls, rank, call,
// validate) waits for the servers' first tools: the longest start timeout
// of a server, and a little more.
func (f *mcpFlags) wait() time.Duration {
	w := mcp.DefaultStartTimeout
	if f.cfg != nil {
		for _, s := range f.cfg.Servers {
			w = max(w, s.StartTimeout)
		}
	}
	return w + 2*time.Second
}

// providerOf is the provider part of a tool name ("fs" of "fs:read"), or "".
func providerOf(name string) string {
	p, _, ok := strings.Cut(name, registry.ProviderSep)
	if !ok {
		return ""
	}
	return p
}

// moduleVersion is the module version this binary was built from.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
