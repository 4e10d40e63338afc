package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// servingFlags are the flags of the commands that serve an engine to
// clients and run its tools: serve (9P) and mcp (MCP).
type servingFlags struct {
	agents, workdir, thrFile, socket string
	noThr, allowUnsandboxed          bool
	rankTimeout                      time.Duration
	ef                               *engineFlags
	sf                               *sandboxFlags
	mf                               *mcpFlags
	hf                               *historyFlags
	verbose                          verbosity
}

func addServingFlags(fs *flag.FlagSet) *servingFlags {
	f := &servingFlags{}
	fs.StringVar(&f.agents, "agents", "", "agent profiles directory (default ~/.config/ollie/agents)")
	fs.StringVar(&f.workdir, "workdir", "", "the working directory of calls (default: the current directory)")
	fs.StringVar(&f.thrFile, "thresholds", "", "thresholds file (default $TOOLSRV_THRESHOLDS, then $XDG_CONFIG_HOME/toolsrv/thresholds/EMBEDDER.json (else ~/.config/toolsrv/…), then the shipped defaults)")
	fs.BoolVar(&f.noThr, "no-thresholds", false, "answer plain rankings without the thresholds cut")
	fs.DurationVar(&f.rankTimeout, "rank-timeout", 2*time.Second, "deadline of one ranking; past it the ranking is lexical and says so")
	fs.BoolVar(&f.allowUnsandboxed, "allow-unsandboxed", false, "on a kernel without Landlock, run tools unsandboxed instead of refusing calls")
	fs.StringVar(&f.socket, "bypass-socket", "", "approval broker socket for bypass tools (default $OLLIE_BYPASS_SOCKET)")
	f.ef = addEngineFlags(fs)
	f.sf = addSandboxFlags(fs)
	f.mf = addMCPFlags(fs)
	f.hf = addHistoryFlags(fs)
	fs.Var(&f.verbose, "v", "log what the server does on stderr: -v requests, calls, agent profiles and catalog changes (Info); -v -v also the packages' Debug records")
	return f
}

// check reports a bad flag value (a usage error).
func (f *servingFlags) check() error {
	if err := f.ef.check(); err != nil {
		return err
	}
	if f.rankTimeout <= 0 {
		return fmt.Errorf("--rank-timeout %v: want a positive duration such as 2s", f.rankTimeout)
	}
	return f.sf.check()
}

// serving is an engine set up to serve clients and run tools.
type serving struct {
	env     *cliEnv
	log     *slog.Logger
	eng     *engine.Engine
	path    toolPath
	dirs    []string
	workdir string
	guard   *exec.WorkDirGuard
	self    string
	cmd     string
}

// servingSetup says what a command adds to the shared setup.
type servingSetup struct {
	// cmd names the command in messages.
	cmd string
	// limit is the most tools an answer holds when the request does not
	// say (engine.Options.DefaultLimit: the command's --limit).
	limit int
	// sockets are the Unix sockets serve listens on: their directories
	// are toolsrv's own.
	sockets []string
	// tune changes the runner's options (serve's TOOLSRV_ADDR).
	tune func(*exec.Options)
	// providers, when set, adds tool providers (serve's remotes).
	providers func(env *cliEnv, log *slog.Logger) ([]engine.Provider, error)
	// own, when set, are more paths of toolsrv's own (see ownPaths),
	// known once providers has run (serve's remotes file and the tools
	// it sends).
	own func() []string
	// failed, when set, is told why setup failed (once it is printed).
	failed func(reason string)
	// private are more paths tools may not read (mcp --listen's
	// --token-file): no working directory may hold them.
	private []string
}

// setup checks the working directory and the tool path, makes the
// sandbox runner (shared by calls and the MCP servers of --mcp-config)
// and the engine. On failure it has printed why and returns the exit
// status.
func (f *servingFlags) setup(ctx context.Context, env *cliEnv, tools *dirList, s servingSetup) (*serving, int) {
	log := loggerAt(env, f.verbose.level(slog.LevelWarn))
	env = &cliEnv{stdin: env.stdin, stdout: env.stdout, stderr: env.stderr, getenv: env.getenv, log: log}
	fail := func(format string, a ...any) (*serving, int) {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(env.stderr, "toolsrv %s: %s\n", s.cmd, msg)
		if s.failed != nil {
			s.failed(msg)
		}
		return nil, 1
	}
	if f.socket == "" {
		f.socket = env.getenv("OLLIE_BYPASS_SOCKET")
	}
	if f.agents == "" {
		f.agents = registry.DefaultAgentsDir(env.getenv)
	}
	if f.workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fail("no current directory for calls: %v; pass --workdir", err)
		}
		f.workdir = wd
	}
	// Every directory is watched, even one that does not exist yet (it is
	// picked up when it appears). With none there, the server starts all
	// the same and tells its clients why it has no tool (Options.NoTools):
	// an MCP server that exited now would only show its client "connection
	// closed", its reason in a log the person looking at the client does
	// not see.
	path := resolveToolPath(env, tools)
	if _, bad, err := path.check(); err != nil {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: %v; serving anyway (the answers say so): the directories are watched, and tools written there appear\n", s.cmd, err)
	} else {
		for _, b := range bad {
			fmt.Fprintf(env.stderr, "toolsrv %s: warning: tool directory %s (from %s); reading the others\n", s.cmd, b, path.from)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fail("cannot find my own binary for the sandbox helper: %v", err)
	}
	ropts := exec.Options{SelfExe: exec.DefaultHelper(self), AllowUnsandboxed: f.allowUnsandboxed, BypassSocket: f.socket,
		Getenv: env.getenv, Logger: logger(env)}
	if s.tune != nil {
		s.tune(&ropts)
	}
	f.sf.apply(&ropts)
	// A working directory is vetted at every call (see warnWorkDir): the
	// server starts whatever it is.
	own := ownPaths(env, f.mf, f.hf, f.thrFile, f.ef.cacheDir)
	own.private = append(own.private, s.private...)
	guard := workDirGuard(env, path.dirs, f.agents, s.sockets, f.socket, own)
	ropts.WorkDirGuard = guard
	runner, err := exec.NewRunner(ropts)
	if err != nil {
		return fail("%v", err)
	}
	p := newIndexProgress(env)
	opts := f.ef.options(env, path.dirs, p)
	opts.Logger = log
	opts.Thresholds, opts.NoThresholds, opts.RankTimeout = f.thrFile, f.noThr, f.rankTimeout
	opts.DefaultLimit = s.limit
	opts.SharedRunner = runner
	opts.NoTools = path.problem
	opts.Usage = f.hf.open(ctx, env, s.cmd)
	opts.UsageLater = true // serving starts at once; the history applies meanwhile
	if opts.Providers, err = f.mf.providers(env, s.cmd, runner, ""); err != nil {
		return fail("%v", err)
	}
	if s.providers != nil {
		more, err := s.providers(env, log)
		if err != nil {
			return fail("%v", err)
		}
		opts.Providers = append(opts.Providers, more...)
	}
	if s.own != nil {
		// (before any call: the guard is read at every call)
		guard.Protected = append(guard.Protected, s.own()...)
	}
	eng, err := newEngine(ctx, env, opts)
	p.finish()
	if err != nil {
		if opts.Usage != nil {
			opts.Usage.Close()
		}
		if strings.HasPrefix(err.Error(), "thresholds:") {
			return fail("%v (pass --no-thresholds to serve plain rankings)", err)
		}
		return fail("%v", err)
	}
	cat := eng.Catalog()
	log.Info("tools loaded", "dirs", path.dirs, "revision", cat.Revision, "tools", len(cat.Tools), "invalid", len(cat.InvalidFiles()), "problems", len(cat.Problems), "hidden", len(cat.Hidden))
	if _, _, err := path.check(); err == nil {
		if err := path.emptyCatalog(cat); err != nil {
			fmt.Fprintf(env.stderr, "toolsrv %s: warning: %v; serving it anyway (the answers say so): the directories are watched, and tools written there appear\n", s.cmd, err)
		}
	}
	warn(env, s.cmd, eng)
	if n := len(cat.Problems); n > 0 {
		log.Info("catalog problems", "count", n, "see", "toolsrv validate")
	}
	if ix := eng.Index(); ix != nil {
		log.Info("index ready", "embedder", ix.Stats().Embedder, "tools", ix.Stats().Tools)
	}
	if ok, _ := runner.Sandboxed(); !ok {
		if f.allowUnsandboxed {
			fmt.Fprintf(env.stderr, "toolsrv %s: WARNING: this kernel has no Landlock: calls run UNSANDBOXED (--allow-unsandboxed)\n", s.cmd)
		} else {
			fmt.Fprintf(env.stderr, "toolsrv %s: this kernel has no Landlock: calls will be refused (pass --allow-unsandboxed to run them unsandboxed)\n", s.cmd)
		}
	}
	return &serving{env: env, log: log, eng: eng, path: path, dirs: path.dirs, workdir: f.workdir, guard: guard, self: self, cmd: s.cmd}, 0
}

// warnWorkDir says, once the server's own directories exist, when the
// calls' working directory will be refused (each call is refused, with
// the reason; the server serves everything else), and otherwise makes it
// the resolved directory.
func (s *serving) warnWorkDir() {
	real, _, err := s.guard.Check(s.workdir)
	if err != nil {
		fmt.Fprintf(s.env.stderr, "toolsrv %s: warning: every call will be refused: %v (pass it with --workdir DIR)\n", s.cmd, err)
		return
	}
	s.workdir = real
}
