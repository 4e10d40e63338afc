package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/registry"
)

// toolPath is the tool directories a command reads, and where they came
// from (for messages that say what to fix).
type toolPath struct {
	dirs []string
	from string // "--tools", "$OLLIE_TOOLS_PATH" or "the default"
}

// resolveToolPath is --tools, else $OLLIE_TOOLS_PATH, else the default.
func resolveToolPath(env *cliEnv, tools *dirList) toolPath {
	switch {
	case len(*tools) > 0:
		return toolPath{dirs: append([]string(nil), *tools...), from: "--tools"}
	case env.getenv("OLLIE_TOOLS_PATH") != "":
		return toolPath{dirs: registry.DefaultDirs(env.getenv), from: "$OLLIE_TOOLS_PATH"}
	}
	return toolPath{dirs: registry.DefaultDirs(env.getenv), from: "the default"}
}

// toolDirs resolves --tools, then $OLLIE_TOOLS_PATH, then the default.
func toolDirs(env *cliEnv, tools *dirList) []string { return resolveToolPath(env, tools).dirs }

// hint says how to point toolsrv at other directories.
func (p toolPath) hint() string {
	if p.from == "--tools" {
		return "check the --tools path"
	}
	return "pass --tools DIR or set $OLLIE_TOOLS_PATH (colon separated), e.g. --tools examples/tools"
}

// existing returns the directories that exist. When some do not, it warns
// about them on standard error (prefixed with the command) if others
// exist, and returns an error naming them if none does.
func (p toolPath) existing(env *cliEnv, cmd string) ([]string, error) {
	if len(p.dirs) == 0 {
		return nil, fmt.Errorf("no tool directory given (from %s); %s", p.from, p.hint())
	}
	var ok, bad []string
	for _, d := range p.dirs {
		fi, err := os.Stat(d)
		switch {
		case err == nil && fi.IsDir():
			ok = append(ok, d)
		case err == nil:
			bad = append(bad, d+" is not a directory (give the directory that holds the .meta files)")
		case errors.Is(err, fs.ErrNotExist):
			bad = append(bad, d+" does not exist")
		default:
			bad = append(bad, fmt.Sprintf("%s: %v", d, err))
		}
	}
	if len(bad) == 0 {
		return ok, nil
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("no tool directory to read: %s (from %s); %s", strings.Join(bad, "; "), p.from, p.hint())
	}
	for _, b := range bad {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: tool directory %s (from %s); reading the others\n", cmd, b, p.from)
	}
	return ok, nil
}

// emptyCatalog says what is wrong when cat has no visible tool: the
// directories hold no .meta file, or every tool is invalid or hidden on
// this host. It returns nil when there is a tool to offer.
func (p toolPath) emptyCatalog(cat *registry.Catalog) error {
	if len(cat.Tools) > 0 {
		return nil
	}
	dirs := strings.Join(cat.Dirs, ", ")
	nProb, nHid := len(cat.InvalidFiles()), len(cat.Hidden)
	switch {
	case nProb == 0 && nHid == 0:
		return fmt.Errorf("no .meta files in %s (from %s): write NAME.meta files there, or %s", dirs, p.from, p.hint())
	case nHid == 0:
		return fmt.Errorf("every tool is invalid (%d .meta file(s) in %s); run \"toolsrv validate\" to see what to fix", nProb, dirs)
	case nProb == 0:
		return fmt.Errorf("every tool is hidden on this host (%d: no variant matches); \"toolsrv show %s\" says why", nHid, cat.Hidden[0].Name)
	}
	return fmt.Errorf("no tool is usable: %d invalid (run \"toolsrv validate\" to see what to fix) and %d hidden on this host (\"toolsrv show %s\" says why)",
		nProb, nHid, cat.Hidden[0].Name)
}

// loadTools checks the tool directories (see existing) and loads a
// registry over those that exist.
func loadTools(ctx context.Context, env *cliEnv, cmd string, tools *dirList) (*registry.Registry, toolPath, error) {
	p := resolveToolPath(env, tools)
	dirs, err := p.existing(env, cmd)
	if err != nil {
		return nil, p, err
	}
	// The engine's registry, without an index: the catalog snapshot and
	// the known-schemas file in toolsrv's cache spare it what the commands
	// that rank and call are spared (at 10,000 tools, parsing every file and
	// compiling every schema again).
	eng, err := newEngine(ctx, env, engine.Options{Dirs: dirs, NoIndex: true, Getenv: env.getenv, Logger: logger(env)})
	if err != nil {
		return nil, p, err
	}
	eng.Close() // the catalog stays; nothing follows it
	return eng.Registry(), p, nil
}

// loadCatalog is loadTools with the tools of the MCP servers of
// --mcp-config, when given: the catalog, and what to call when done
// with it (it stops the servers).
func loadCatalog(ctx context.Context, env *cliEnv, cmd string, tools *dirList, mf *mcpFlags) (*registry.Catalog, toolPath, func(), error) {
	if mf.path(env) == "" {
		reg, p, err := loadTools(ctx, env, cmd, tools)
		if err != nil {
			return nil, p, nil, err
		}
		return reg.Catalog(), p, func() {}, nil
	}
	p := resolveToolPath(env, tools)
	dirs, err := p.existing(env, cmd)
	if err != nil {
		return nil, p, nil, err
	}
	provs, err := mf.providers(env, cmd, nil, "")
	if err != nil {
		return nil, p, nil, err
	}
	eng, err := newEngine(ctx, env, engine.Options{Dirs: dirs, NoIndex: true, Providers: provs, ProviderWait: mf.wait(), Getenv: env.getenv, Logger: logger(env)})
	if err != nil {
		return nil, p, nil, err
	}
	warn(env, cmd, eng)
	return eng.Catalog(), p, eng.Close, nil
}
