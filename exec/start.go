package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// ProcessSpec describes a long-running process started by Runner.Start (an
// MCP server speaking over its standard input and output): the same
// helper, sandbox, limits and environment rules as a call, without a
// timeout, with its standard streams left open to the caller.
type ProcessSpec struct {
	// Name says who it is, in logs, errors and the bypass request
	// ("mcp server fs").
	Name string
	// Argv is the command; Argv[0] must be an absolute path.
	Argv []string
	// Env are KEY=VALUE entries added to the process's environment (after
	// the base environment of a tool, so they override it).
	Env []string
	// Dir is its working directory, which it may read ("": its private
	// temporary directory). It may write only its temporary directory
	// and Write.
	Dir string
	// Network lets it use the network (as a tool's "network": true).
	Network bool
	// Read and Write are extra readable and writable paths (absolute,
	// existing), beside the system directories and Options.ReadPaths.
	Read, Write []string
	// Unconfined asks to run outside the sandbox: allowed only when the
	// bypass broker approves (each start asks), as for "bypass" tools.
	Unconfined bool
	// Description is told to the broker.
	Description string
	// Limits are its resource limits (zero fields: the runner's defaults),
	// within the runner's caps.
	Limits Limits
	// Stderr, when set, gets a copy of its standard error (Process.Stderr
	// keeps the last StderrTail bytes either way).
	Stderr io.Writer
}

// StderrTail is how much of a started process's standard error
// Process.Stderr keeps.
const StderrTail = 16 << 10

// Process is a process started by Runner.Start. Write to Stdin and read
// Stdout; Done is closed when it has ended and everything it started is
// gone.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.ReadCloser

	spec        ProcessSpec
	r           *Runner
	pid         int
	unsandboxed bool
	stderr      *tailBuffer
	done        chan struct{}
	stopOnce    sync.Once
	// stopping: Stop was called (a helper that ends without a report was
	// then ended by it).
	stopping atomic.Bool

	// set before done is closed
	err error
}

// Start starts spec's command through the sandbox helper and returns at
// once; the process runs until it exits, Stop is called, or the server
// ends (the helper's parent-death signal takes it along). Its processes
// count against the runner's process budget while it runs.
func (r *Runner) Start(ctx context.Context, spec ProcessSpec) (*Process, error) {
	if len(spec.Argv) == 0 || !filepath.IsAbs(spec.Argv[0]) {
		return nil, &CallError{Tool: spec.Name, Kind: ErrStart, Msg: "the command must be an absolute path", Err: fmt.Errorf("%q", spec.Argv)}
	}
	fail := func(kind error, msg string, err error) (*Process, error) {
		return nil, &CallError{Tool: spec.Name, Kind: kind, Msg: msg, Err: err}
	}
	paths, err := r.resolveProcessPaths(spec)
	if err != nil {
		return fail(ErrBadCallContext, "", err)
	}
	sandboxed := true
	switch {
	case spec.Unconfined:
		err := askBroker(ctx, r.opts.BypassSocket, r.opts.BypassTimeout, BypassRequest{
			Tool: spec.Name, Arguments: []byte("{}"), Command: spec.Argv, Description: spec.Description,
		})
		if err != nil {
			return fail(ErrBypassRefused, "it asks to run outside the sandbox and was not approved", err)
		}
		r.log.Info("bypass approved", "process", spec.Name)
		sandboxed = false
	case r.abiErr != nil:
		if !r.opts.AllowUnsandboxed {
			return fail(ErrNoSandbox, "refusing to run it unsandboxed; restart with --allow-unsandboxed to accept that", r.abiErr)
		}
		sandboxed = false
	}
	lim := spec.Limits.within(r.opts.Limits, r.opts.MaxLimits)
	leave, err := r.admit(ctx, lim)
	if err != nil {
		return fail(ErrCanceled, "", err)
	}
	tmp, err := r.temp.make()
	if err != nil {
		leave()
		return fail(ErrStart, "cannot make its temporary directory", err)
	}
	dir := paths.dir
	if dir == "" {
		dir = tmp
	}
	read := append(r.readPaths(dir), paths.read...)
	if dir != tmp {
		read = append(read, dir)
	}
	pol := sandbox.Policy{Unconfined: !sandboxed, Network: spec.Network, WorkDir: tmp, TempDir: tmp,
		Exec: processExecPaths(spec.Argv[0]), Read: read, Write: paths.write, Protect: paths.protect,
		Processes: lim.Processes, Memory: lim.Memory, FileSize: lim.FileSize, TempSize: lim.TempSize}
	env := r.processEnv(spec, dir, tmp, sandboxed)

	ns := r.iso.namespaces()
	if !ns && r.iso.root {
		pol.Processes = 0 // root is exempt from RLIMIT_NPROC: only a PID namespace limits it
	}
	hp, err := r.forkHelper(spec.Argv, env, dir, pol, ns, false, CallContext{WorkDir: dir})
	if ns && r.iso.mode == IsolationAuto && err != nil && nsStartError(err) {
		r.iso.disable(err)
		r.log.Warn("the kernel refused namespaces for tool calls; calls run without them (see the threat model: weaker process limits and lifetime)", "err", err)
		if r.iso.root {
			pol.Processes = 0
		}
		hp, err = r.forkHelper(spec.Argv, env, dir, pol, false, false, CallContext{WorkDir: dir})
	}
	if err != nil {
		os.RemoveAll(tmp)
		leave()
		return fail(ErrStart, "starting the sandbox helper", err)
	}
	p := &Process{Stdin: hp.Stdin, Stdout: hp.Stdout, spec: spec, r: r, pid: hp.Pid, unsandboxed: !sandboxed,
		stderr: &tailBuffer{max: StderrTail}, done: make(chan struct{})}
	var errCopy sync.WaitGroup
	errCopy.Add(1)
	go func() {
		defer errCopy.Done()
		var w io.Writer = p.stderr
		if spec.Stderr != nil {
			w = io.MultiWriter(p.stderr, spec.Stderr)
		}
		io.Copy(w, hp.Stderr)
	}()
	go func() {
		defer close(p.done)
		defer leave()
		defer os.RemoveAll(tmp)
		defer hp.forget()
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(hp.Pid, &ws, 0, nil)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		// Whatever is left of the group ends with it.
		syscall.Kill(-hp.Pid, syscall.SIGKILL)
		st, ok, serr := sandbox.ReadStatus(hp.Status)
		hp.Status.Close()
		if ok {
			r.noteSharedProc(st)
		}
		waitTimeout(&errCopy, drainDelay)
		hp.Stderr.Close()
		switch {
		case serr != nil:
			p.err = serr
		case !ok:
			if u := unreported(ws, p.stopping.Load(), hp.pidNS); u.Error != "" {
				p.err = &CallError{Tool: spec.Name, Kind: ErrSandbox, Msg: u.Error}
			} else {
				p.err = fmt.Errorf("killed (%v)", ws)
			}
		case st.Error != "":
			p.err = &CallError{Tool: spec.Name, Kind: ErrSandbox, Msg: st.Error}
		case st.Killed:
			p.err = errors.New("stopped")
		case st.Signal != 0:
			p.err = fmt.Errorf("killed by signal %s", syscall.Signal(st.Signal))
		default:
			p.err = fmt.Errorf("exit status %d", st.Exit)
		}
	}()
	return p, nil
}

// processPaths are a started process's own paths, resolved (symlinks):
// its working directory ("": its temporary directory), what it may read
// and write besides the system directories, and toolsrv's own paths
// inside what it may write (Options.WorkDirGuard), kept read-only.
type processPaths struct {
	dir                  string
	read, write, protect []string
}

// resolveProcessPaths resolves spec's paths; the sandbox is given the
// resolved ones.
func (r *Runner) resolveProcessPaths(spec ProcessSpec) (processPaths, error) {
	var out processPaths
	resolve := func(paths []string) ([]string, error) {
		var res []string
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("path %q is not absolute", p)
			}
			real, err := resolvePath(p)
			if err != nil {
				return nil, fmt.Errorf("a path it is granted: %w", err)
			}
			res = append(res, real)
		}
		return res, nil
	}
	var err error
	if out.read, err = resolve(spec.Read); err != nil {
		return out, err
	}
	if out.write, err = resolve(spec.Write); err != nil {
		return out, err
	}
	if spec.Dir != "" {
		if out.dir, err = checkWorkDir(spec.Dir); err != nil {
			return out, err
		}
	}
	if g := r.opts.WorkDirGuard; g != nil {
		for _, w := range out.write {
			for _, p := range g.protectIn(w) {
				out.protect = appendNew(out.protect, p)
			}
		}
	}
	return out, nil
}

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(d):
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err says how the process ended ("exit status 1", "killed by signal
// SIGSEGV", a sandbox failure as a *CallError); nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stderr is the last StderrTail bytes of its standard error.
func (p *Process) Stderr() []byte { return p.stderr.bytes() }

// PID is the sandbox helper's process ID (the process's parent).
func (p *Process) PID() int { return p.pid }

// Unsandboxed reports whether it runs outside the sandbox.
func (p *Process) Unsandboxed() bool { return p.unsandboxed }

// Stop ends the process: its standard input is closed, and if it has not
// exited after grace, it gets SIGTERM, then (after the runner's KillGrace)
// everything it started is killed. Stop returns when it is gone.
func (p *Process) Stop(grace time.Duration) {
	p.stopping.Store(true)
	p.stopOnce.Do(func() {
		p.Stdin.Close()
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		syscall.Kill(-p.pid, syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(p.r.opts.KillGrace):
		}
		syscall.Kill(p.pid, sandbox.KillSignal)
		select {
		case <-p.done:
			return
		case <-time.After(helperGrace):
		}
		syscall.Kill(-p.pid, syscall.SIGKILL)
	})
	<-p.done
	p.Stdout.Close()
}

// processEnv is a started process's whole environment: a tool's base
// environment (PATH, HOME and TMPDIR its temporary directory, PWD, the
// locale) and then spec.Env.
func (r *Runner) processEnv(spec ProcessSpec, dir, tmp string, sandboxed bool) []string {
	return append(r.baseEnv(dir, tmp, sandboxed), spec.Env...)
}

// processExecPaths are the read+execute paths of a started process
// besides the system directories: its executable and, for a symlink, the
// file it points to.
func processExecPaths(exe string) []string {
	var out []string
	if !sandbox.Under(exe, sandbox.SystemReadOnly) {
		out = append(out, exe)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil && real != exe && !sandbox.Under(real, out) && !sandbox.Under(real, sandbox.SystemReadOnly) {
		out = append(out, real)
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
