package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"toolsrv/registry"
)

// dirList is a repeatable --tools flag; "a:b" also splits.
type dirList []string

func (d *dirList) String() string { return strings.Join(*d, ":") }
func (d *dirList) Set(v string) error {
	for _, p := range strings.Split(v, ":") {
		if p != "" {
			*d = append(*d, p)
		}
	}
	return nil
}

// newFlags makes a subcommand's flag set with the flags every subcommand
// shares. usage is the synopsis line printed by --help.
func newFlags(env *cliEnv, name, usage, about string) (*flag.FlagSet, *dirList) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	tools := &dirList{}
	fs.Var(tools, "tools", "tool directory (repeatable, or colon separated); overrides $OLLIE_TOOLS_PATH")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: toolsrv %s\n\n%s\n\nFlags:\n", usage, about)
		fs.PrintDefaults()
	}
	return fs, tools
}

// parseFlags parses args; it returns (exit status, false) when the command
// should stop (after --help, or on a bad flag).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// toolDirs resolves --tools, then $OLLIE_TOOLS_PATH, then the default.
func toolDirs(env *cliEnv, tools *dirList) []string {
	if len(*tools) > 0 {
		return append([]string(nil), *tools...)
	}
	return registry.DefaultDirs(env.getenv)
}

// logger is the CLI's logger: warnings and errors on stderr.
func logger(env *cliEnv) *slog.Logger {
	return slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// loadRegistry builds and loads a registry over the chosen directories.
func loadRegistry(ctx context.Context, env *cliEnv, tools *dirList) (*registry.Registry, error) {
	reg := registry.New(registry.Options{Dirs: toolDirs(env, tools), Logger: logger(env)})
	if err := reg.Load(ctx); err != nil {
		return nil, fmt.Errorf("loading tools: %w", err)
	}
	return reg, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func notYet(env *cliEnv, name string) int {
	fmt.Fprintf(env.stderr, "toolsrv %s: not available in this build yet\n", name)
	return 1
}

// lookupHint is what to add to a catalog lookup error on the command line:
// for a name no .meta defines, how to see what there is.
func lookupHint(err error) string {
	var le *registry.LookupError
	if errors.As(err, &le) && !le.Hidden() {
		return `; "toolsrv ls" lists the tools, "toolsrv validate" shows broken .meta files`
	}
	return ""
}
