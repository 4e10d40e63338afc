package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/registry"
)

// toolPath is the tool directories a command reads, and where they came
// from (for messages that say what to fix).
type toolPath struct {
	dirs []string
	from string // "--tools", "$OLLIE_TOOLS_PATH" or "the default"
	// cwd is the current directory, where hint looks for a project's own
	// tool directory ("" when unknown).
	cwd string
}

// resolveToolPath is --tools, else $OLLIE_TOOLS_PATH, else the default.
func resolveToolPath(env *cliEnv, tools *dirList) toolPath {
	cwd, _ := os.Getwd()
	switch {
	case len(*tools) > 0:
		return toolPath{dirs: append([]string(nil), *tools...), from: "--tools", cwd: cwd}
	case env.getenv("OLLIE_TOOLS_PATH") != "":
		return toolPath{dirs: registry.DefaultDirs(env.getenv), from: "$OLLIE_TOOLS_PATH", cwd: cwd}
	}
	return toolPath{dirs: registry.DefaultDirs(env.getenv), from: "the default", cwd: cwd}
}

// toolDirs resolves --tools, then $OLLIE_TOOLS_PATH, then the default.
func toolDirs(env *cliEnv, tools *dirList) []string { return resolveToolPath(env, tools).dirs }

// hint says how to point toolsrv at other directories, naming the
// project's own tool directory when the current directory has one.
func (p toolPath) hint() string {
	local, n := p.local()
	holds := fmt.Sprintf("%d .meta file", n)
	if n != 1 {
		holds += "s"
	}
	switch {
	case local != "" && p.from == "--tools":
		return fmt.Sprintf("check the --tools path (%s holds %s: --tools %s)", local, holds, local)
	case local != "":
		return fmt.Sprintf("pass --tools %s (it holds %s), or set $OLLIE_TOOLS_PATH (colon separated)", local, holds)
	case p.from == "--tools":
		return "check the --tools path"
	}
	return "pass --tools DIR or set $OLLIE_TOOLS_PATH (colon separated)"
}

// local finds where a project keeps its tools: ./tools, else
// ./examples/tools (a clone of toolsrv), in the current directory, when
// it holds .meta files and is not on the tool path already. It returns
// the directory as the user would type it and how many .meta files it
// holds, or "".
func (p toolPath) local() (string, int) {
	if p.cwd == "" {
		return "", 0
	}
	for _, rel := range []string{"tools", filepath.Join("examples", "tools")} {
		dir := filepath.Join(p.cwd, rel)
		if p.holds(dir) {
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".meta") && !e.IsDir() {
				n++
			}
		}
		if n > 0 {
			return "./" + rel, n
		}
	}
	return "", 0
}

// holds reports whether dir is on the tool path (symlinks resolved).
func (p toolPath) holds(dir string) bool {
	want := resolvedDir(dir)
	for _, d := range p.dirs {
		if resolvedDir(d) == want {
			return true
		}
	}
	return false
}

// resolvedDir is dir made absolute, its symlinks resolved where it exists.
func resolvedDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

// existing returns the directories that exist. When some do not, it warns
// about them on standard error (prefixed with the command) if others
// exist, and returns an error naming them if none does.
func (p toolPath) existing(env *cliEnv, cmd string) ([]string, error) {
	ok, bad, err := p.check()
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: tool directory %s (from %s); reading the others\n", cmd, b, p.from)
	}
	return ok, nil
}

// check sorts the directories into those that exist and what is wrong
// with the others; it fails when none exists.
func (p toolPath) check() (ok, bad []string, err error) {
	if len(p.dirs) == 0 {
		return nil, nil, fmt.Errorf("no tool directory given (from %s); %s", p.from, p.hint())
	}
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
	if len(ok) == 0 {
		return nil, nil, fmt.Errorf("no tool directory to read: %s (from %s); %s", strings.Join(bad, "; "), p.from, p.hint())
	}
	return ok, bad, nil
}

// problem says why cat has no tool to offer and what to do about it, or ""
// when it has one: no tool directory exists (yet), or emptyCatalog's
// reasons. A server asks again at each answer: the directories are
// watched, and the problem goes when tools appear.
func (p toolPath) problem(cat *registry.Catalog) string {
	if len(cat.Tools) > 0 {
		return ""
	}
	if _, _, err := p.check(); err != nil {
		return err.Error()
	}
	if err := p.emptyCatalog(cat); err != nil {
		return err.Error()
	}
	return ""
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
