// Command toolsrv is the tool-discovery engine: it reads .meta tool
// definitions, ranks tools for a message, serves them over 9P and runs them
// sandboxed. Run "toolsrv help" for the subcommands.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"

	"github.com/toolsrv/toolsrv/exec"

	_ "github.com/toolsrv/toolsrv/usage/postgres" // the postgres:// usage stores (usage.Register)
)

// command is one subcommand. run returns the process exit status.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) int
	// screen says which of its outputs are for people (a terminal) and
	// may carry others' text: written through termSafe. Not a tool's
	// output (call, 9p cat) nor a protocol's (mcp's standard output).
	screen screen
}

// screen is the outputs a command writes through termSafe.
type screen int

const (
	rawOutput    screen = iota
	safeStderr          // standard error only
	safeBothOuts        // standard output and standard error
)

// cliEnv is what a subcommand may touch of the outside world.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// log, when set, is the logger every package the command uses gets
	// (see logger); serve -v sets it.
	log *slog.Logger
	// startupGC: engines open under the start-up garbage-collection
	// regime (newEngine). Set by main only: the regime changes process-wide
	// settings, which in-process tests opening engines at once must not.
	startupGC bool
}

func commands() map[string]command {
	return map[string]command{
		"ls":       {"list the visible tools", runLs, safeBothOuts},
		"show":     {"show one tool: resolved command, variant, tier, schema, source", runShow, safeBothOuts},
		"validate": {"check .meta files and list every problem", runValidate, safeBothOuts},
		"approve":  {"approve imported MCP tools held because their definition changed", runApprove, safeBothOuts},
		"rank":     {"rank the catalog's tools for a message", runRank, safeBothOuts},
		"eval":     {"measure ranking quality on labelled corpora", runEval, safeStderr},
		"call":     {"call a tool (sandboxed) with JSON arguments", runCall, rawOutput},
		"broker":   {"a bypass approval broker that asks on this terminal", runBroker, safeBothOuts},
		"serve":    {"serve the catalog, ranking and calls over 9P", runServe, safeStderr},
		"mcp":      {"serve the catalog to MCP clients: find_tools, call_tool, hot tools", runMCP, safeStderr},
		"9p":       {"a small 9P client: ls, cat, write, mkdir, rm", run9P, rawOutput},
		"tune":     {"sweep ranking thresholds on labelled queries", runTune, safeStderr},
		"bench":    {"benchmark index build, ranking and live updates", runBench, safeStderr},
		"usage":    {"the usage history (which tool was called for which request): ls, stats, export, import, forget", runUsage, safeBothOuts},
		"version":  {"print the version (module version and VCS revision)", runVersion, rawOutput},
	}
}

func main() {
	// The sandbox helper runs before anything else: it restricts this very
	// process and then executes the tool (see package exec).
	if len(os.Args) > 1 && os.Args[1] == sandboxHelperArg {
		os.Exit(runSandboxHelper(os.Args[2:]))
	}
	// Descriptors this process inherited (a shell's "5</root/secret") must
	// not reach any program it starts; the sandbox helper closes them too.
	if err := exec.CloseInherited(3); err != nil {
		fmt.Fprintln(os.Stderr, "toolsrv:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, startupGC: true}
	stopProfile := startProfile(env)
	code := dispatch(ctx, env, os.Args[1:])
	stopProfile()
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole run to $TOOLSRV_CPUPROFILE
// when it is set (a development aid: go tool pprof reads it).
func startProfile(env *cliEnv) (stop func()) {
	path := env.getenv("TOOLSRV_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv: TOOLSRV_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// dispatch runs the subcommand args[0]. Usage errors print on standard
// error and return 2; "toolsrv help [COMMAND]" prints on standard output.
func dispatch(ctx context.Context, env *cliEnv, args []string) int {
	cmds := commands()
	if len(args) == 0 {
		usage(env.stderr, cmds)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 || (len(args) == 2 && isHelpFlag(args[1])) {
			usage(env.stdout, cmds)
			return 0
		}
		if c, ok := cmds[args[1]]; ok && len(args) == 2 {
			return c.run(ctx, env, []string{"--help"})
		}
		fmt.Fprintf(env.stderr, "toolsrv help: unknown command %q; run \"toolsrv help\" for the list\n", strings.Join(args[1:], " "))
		return 2
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "toolsrv: unknown command %q; run \"toolsrv help\" for the list\n", args[0])
		return 2
	}
	if c.screen != rawOutput {
		safe := *env
		safe.stderr = termSafe{env.stderr}
		if c.screen == safeBothOuts {
			safe.stdout = termSafe{env.stdout}
		}
		env = &safe
	}
	return c.run(ctx, env, args[1:])
}

// isHelpFlag says whether arg asks for help ("toolsrv help --help").
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "toolsrv: decides which tools an LLM agent should see, and runs them sandboxed.")
	fmt.Fprintln(w, "\nUsage: toolsrv COMMAND [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nEvery command takes --tools DIR (repeatable; default $OLLIE_TOOLS_PATH or ~/.config/ollie/tools) and --help;")
	fmt.Fprintln(w, "flags go anywhere among the arguments, and -- ends them. \"toolsrv help COMMAND\" is COMMAND --help.")
}
