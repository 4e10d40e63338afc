package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/toolsrv/toolsrv/cmd/toolsrv/internal/early"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
	usagedb "github.com/toolsrv/toolsrv/usage"
)

// runCall calls one tool the way an agent would: arguments validated, JSON
// on standard input, sandboxed, with the timeout and output caps.
func runCall(ctx context.Context, env *cliEnv, args []string) int {
	// The helper this process started while it initialised (nil in tests
	// and with TOOLSRV_PRESTART=0); it goes unless the call takes it.
	pre := early.Helper()
	defer pre.Discard()
	fs, tools := newFlags(env, "call", "call [--tools DIR] [--mcp-config FILE] [--cwd DIR] [--timeout D] [--allow-unsandboxed] [--for REQUEST] [--usage-db PATH|URL] [--no-usage] [--json] [-v] NAME [JSON|-]",
		"Calls tool NAME with the JSON object JSON (\"-\": read it from standard input; absent: {}) on its\n"+
			"standard input, sandboxed with Landlock, and prints its standard output. The tool's standard\n"+
			"error goes to standard error. A failed call (invalid arguments, non-zero exit, timeout,\n"+
			"sandbox failure, refused bypass) prints the reason and exits 1; a tool that ran and failed\n"+
			"has its standard output (its last 4 KiB) and error shown before it, on standard error.\n"+
			"Bypass tools ask the broker on --bypass-socket / $OLLIE_BYPASS_SOCKET (see \"toolsrv broker\").")
	cwd := fs.String("cwd", "", "the session's working directory: read-write for the tool, its $PWD (default: the current directory)")
	timeout := fs.Duration("timeout", 0, "call timeout, e.g. 30s (default: the tool's \"timeout\", else 60s)")
	allowUnsandboxed := fs.Bool("allow-unsandboxed", false, "on a kernel without Landlock, run tools unsandboxed instead of refusing")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object {tool, ok, exitCode, output, stderr, …, error, kind} (exit status as without it)")
	socket := fs.String("bypass-socket", "", "approval broker socket for bypass tools (default $OLLIE_BYPASS_SOCKET)")
	session := fs.String("session", "", "session name (told to the broker; the exclusive class is per session and agent)")
	agent := fs.String("agent", "", "agent name (told to the broker)")
	maxOut := fs.Int("max-output", exec.DefaultOutputCap, "cap in bytes on standard output and on standard error, each")
	forReq := fs.String("for", "", "the user's request this call serves: recorded in the usage history (tool, success, time), from which ranking learns")
	sf := addSandboxFlags(fs)
	mf := addMCPFlags(fs)
	hf := addHistoryFlags(fs)
	var verbose verbosity
	fs.Var(&verbose, "v", "log what the call does on stderr (-v: Info, -v -v: Debug); without it the outcome alone is reported")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError(fs, "give a tool NAME and at most one JSON argument (got %d arguments)", fs.NArg())
	}
	if *maxOut <= 0 {
		return usageError(fs, "--max-output %d: want a positive number of bytes", *maxOut)
	}
	if *timeout < 0 {
		return usageError(fs, "--timeout %v: want a positive duration such as 30s", *timeout)
	}
	if err := sf.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	name := fs.Arg(0)
	argJSON := []byte("{}")
	if fs.NArg() == 2 {
		if fs.Arg(1) == "-" {
			b, err := io.ReadAll(io.LimitReader(env.stdin, maxArgs+1))
			if err != nil {
				fmt.Fprintln(env.stderr, "toolsrv call: reading arguments from standard input:", err)
				return 1
			}
			if len(b) > maxArgs {
				fmt.Fprintf(env.stderr, "toolsrv call: the arguments on standard input are over %d bytes; pass a path to the data instead\n", maxArgs)
				return 1
			}
			argJSON = b
		} else {
			argJSON = []byte(fs.Arg(1))
		}
	}
	workdir := *cwd
	if workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(env.stderr, "toolsrv call: no current directory; pass --cwd:", err)
			return 1
		}
		workdir = wd
	}
	if *socket == "" {
		*socket = env.getenv("OLLIE_BYPASS_SOCKET")
	}

	path := resolveToolPath(env, tools)
	dirs, err := path.existing(env, "call")
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv call:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv call: cannot find my own binary for the sandbox helper:", err)
		return 1
	}
	ropts := exec.Options{
		SelfExe: exec.DefaultHelper(self), Prestarted: pre, AllowUnsandboxed: *allowUnsandboxed, BypassSocket: *socket,
		// The runner vets the working directory (symlinks resolved) and
		// keeps toolsrv's own paths in it read-only for the tool.
		WorkDirGuard: workDirGuard(env, path.dirs, registry.DefaultAgentsDir(env.getenv), nil, *socket, ownPaths(env, mf, hf, "", "")),
		// The outcome (failure, truncation, no sandbox) is reported below,
		// once; the runner's own warnings would repeat it.
		OutputCap: *maxOut, Getenv: env.getenv, Logger: loggerAt(env, verbose.level(slog.LevelError)),
	}
	sf.apply(&ropts)
	runner, err := exec.NewRunner(ropts)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv call:", err)
		return 1
	}
	// Only the MCP server the tool comes from is started.
	var provs []engine.Provider
	if srv := providerOf(name); srv != "" {
		if provs, err = mf.providers(env, "call", runner, srv); err != nil {
			fmt.Fprintln(env.stderr, "toolsrv call:", err)
			return 1
		}
	}
	var hist usagedb.Store
	if *forReq != "" {
		hist = hf.open(ctx, env, "call")
	}
	eng, err := newEngine(ctx, env, engine.Options{Dirs: dirs, NoIndex: true, SharedRunner: runner, Providers: provs, ProviderWait: mf.wait(),
		Usage: hist, Getenv: env.getenv, Logger: logger(env)})
	if err != nil && hist != nil {
		hist.Close()
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv call:", err)
		return 1
	}
	defer eng.Close()
	cat := eng.Catalog()
	tool, err := cat.Lookup(name)
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv call: %v%s\n", err, lookupHint(err))
		if len(cat.Tools)+len(cat.Problems)+len(cat.Hidden) == 0 {
			fmt.Fprintln(env.stderr, "toolsrv call:", path.emptyCatalog(cat))
		}
		return 1
	}
	res, err := eng.Call(ctx, engine.CallRequest{Tool: name, Arguments: argJSON, Request: *forReq,
		Caller: engine.Caller{Transport: "cli", Client: "owner", Agent: *agent}, Context: exec.CallContext{
			WorkDir: workdir, Session: *session, Agent: *agent, Timeout: *timeout,
			ToolsPath: strings.Join(toolDirs(env, tools), ":"),
		}})
	if *asJSON {
		return printCallJSON(env, name, res, err)
	}
	// An MCP server's error message is in err, after toolsrv's words; a
	// process tool's standard error is its own.
	provided := tool.Provider != ""
	if res != nil {
		if err == nil {
			env.stdout.Write(res.Stdout)
		}
		switch {
		case err == nil:
			env.stderr.Write(res.Stderr)
		case !provided:
			// What the tool printed, then why it failed (toolsrv's
			// failure line follows: it starts a line).
			writeTail(env.stderr, res.Stdout, failedOutputTail)
			writeLines(env.stderr, res.Stderr)
		}
		if res.Truncated {
			fmt.Fprintln(env.stderr, truncationNote(res, *maxOut))
		}
		if res.Unsandboxed {
			fmt.Fprintln(env.stderr, "toolsrv call: this call ran UNSANDBOXED")
		}
		if res.Denied != "" {
			fmt.Fprintln(env.stderr, "toolsrv call:", res.Denied)
		}
	}
	if err != nil {
		if errors.Is(err, exec.ErrExit) && res != nil && !provided {
			// The tool's standard error is already printed in full above.
			how := fmt.Sprintf("exit status %d", res.ExitCode)
			if res.ExitCode < 0 {
				how = "killed by a signal"
			}
			fmt.Fprintf(env.stderr, "toolsrv call: tool %s failed (%s)\n", name, how)
			return 1
		}
		var ce *exec.CallError
		if errors.Is(err, exec.ErrWorkDirRefused) && errors.As(err, &ce) && ce.Err != nil {
			fmt.Fprintf(env.stderr, "toolsrv call: %v (pass it with --cwd DIR)\n", ce.Err)
			return 1
		}
		fmt.Fprintln(env.stderr, "toolsrv call:", err)
		return 1
	}
	return 0
}

// writeLines writes b, ending its last line if it does not: what toolsrv
// says next starts on a line of its own.
func writeLines(w io.Writer, b []byte) {
	if len(b) == 0 {
		return
	}
	w.Write(b)
	if b[len(b)-1] != '\n' {
		io.WriteString(w, "\n")
	}
}

// failedOutputTail bounds the standard output a failed call shows: its
// end, where a tool that fails usually says what it got to.
const failedOutputTail = 4 << 10

// writeTail writes b as writeLines does, or, past n bytes, its last n
// (from a line's start when there is one), after a line that says so.
func writeTail(w io.Writer, b []byte, n int) {
	if len(b) > n {
		tail := b[len(b)-n:]
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:]
		}
		fmt.Fprintf(w, "toolsrv call: the tool's standard output, its last %d of %d bytes (--json has all of it):\n", len(tail), len(b))
		b = tail
	}
	writeLines(w, b)
}

// truncationNote is the one line that says a call's output was cut.
func truncationNote(res *exec.Result, limit int) string {
	return fmt.Sprintf("toolsrv call: output truncated: the tool wrote %d bytes of standard output and %d of standard error; the first %d of each are kept (--max-output)",
		res.StdoutBytes, res.StderrBytes, limit)
}

// printCallJSON prints the call's outcome as engine.CallResult, the form
// every front end uses (the exit status is as without --json).
func printCallJSON(env *cliEnv, name string, res *exec.Result, err error) int {
	if werr := writeJSON(env.stdout, engine.Outcome(name, res, err)); werr != nil || err != nil {
		return 1
	}
	return 0
}

// maxArgs bounds the arguments read from standard input (as a 9P call's).
const maxArgs = 4 << 20
