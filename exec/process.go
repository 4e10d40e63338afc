package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// drainDelay bounds the wait for the output pipes after the helper is gone
// (nothing of the call should hold them then; this is a safety net).
const drainDelay = 2 * time.Second

// helperGrace is how long the helper gets to kill the call's processes
// after KillSignal before the server kills its process group itself.
const helperGrace = time.Second

// run starts the tool through the sandbox helper, feeds it stdin, enforces
// the timeout and collects the capped output. Every call goes through the
// helper, sandboxed or not: it applies the limits, closes inherited
// descriptors and ends everything the tool started.
func (r *Runner) run(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, protect []string, sandboxed bool, timeout time.Duration, lim Limits) (*Result, error) {
	fail := func(kind error, msg string, err error, res *Result) (*Result, error) {
		return res, &CallError{Tool: t.Name, Kind: kind, Msg: msg, Err: err, Result: res}
	}
	pol, res, st, err := r.runHelper(ctx, t, stdin, cc, protect, sandboxed, timeout, lim)
	if err != nil {
		return fail(ErrStart, "starting the sandbox helper", err, nil)
	}
	switch {
	case st.Error != "":
		return fail(ErrSandbox, st.Error, nil, res)
	case st.timedOut:
		return fail(ErrTimeout, fmt.Sprintf("killed after %s with every process it started (set \"timeout\" in the .meta or a per-call timeout if it needs longer)", timeout), nil, res)
	case ctx.Err() != nil:
		return fail(ErrCanceled, "killed with every process it started", ctx.Err(), res)
	case res.ExitCode != 0 || st.Signal != 0:
		res.Denied = denialHint(res.Stderr, pol)
		return fail(ErrExit, r.exitMessage(st.Status, res), nil, res)
	}
	r.log.Debug("tool call", "tool", t.Name, "sandboxed", sandboxed, "duration", res.Duration, "stdout", res.StdoutBytes, "stderr", res.StderrBytes)
	res.Content = parseContent(res.Stdout)
	if res.Truncated {
		r.log.Warn("tool output truncated", "tool", t.Name, "stdout", res.StdoutBytes, "stderr", res.StderrBytes, "cap", r.opts.OutputCap)
	}
	return res, nil
}

// runHelper runs a call of t through a sandbox helper: one prepared for it
// (Options.Prepare, prepared.go) when the runner has one that fits, else
// one started for it. It returns the call's policy.
func (r *Runner) runHelper(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, protect []string, sandboxed bool, timeout time.Duration, lim Limits) (sandbox.Policy, *Result, outcome, error) {
	pol := r.callPolicy(t, cc.WorkDir, "", protect, sandboxed, lim)
	ns, host := r.namespacesFor(t, pol)
	if r.prep != nil && sandboxed && r.preparable(ns) {
		pp := pol
		if !ns && r.iso.root {
			pp.Processes = 0 // root is exempt from RLIMIT_NPROC: only a PID namespace limits it
		}
		spec := r.callSpec(t.Command.Argv, cc.WorkDir, pp, ns, host)
		if ph := r.takePrepared(ctx, spec); ph != nil {
			pp.TempDir = ph.tmp
			if res, st, err := r.goPrepared(ctx, t, stdin, cc, pp, ph.h, timeout, func() { r.prepareNext(spec) }); !errors.Is(err, errHelperGone) {
				return pp, res, st, err
			}
		}
		r.prepareNext(spec)
	}
	tmp, err := r.temp.make()
	if err != nil {
		return sandbox.Policy{}, nil, outcome{}, fmt.Errorf("making the call's temporary directory: %w", err)
	}
	defer r.removeTemp(tmp)
	pol.TempDir = tmp
	res, st, err := r.start(ctx, t, stdin, cc, pol, timeout, ns, host)
	return pol, res, st, err
}

// errHelperGone is goPrepared's error when its helper is gone before the
// call started on it (the caller starts another).
var errHelperGone = errors.New("the prepared sandbox helper is gone")

// goPrepared starts the call on h, a helper prepared for it with the
// temporary directory pol.TempDir (removed after the call), then (if not
// nil) calls started, and supervises the call.
func (r *Runner) goPrepared(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, pol sandbox.Policy, h *sandbox.Helper, timeout time.Duration, started func()) (*Result, outcome, error) {
	defer r.removeTemp(pol.TempDir)
	if err := h.Go(r.toolEnv(t, cc, pol.TempDir, true)); err != nil {
		r.log.Debug("the prepared sandbox helper is gone; starting another", "err", err)
		return nil, outcome{}, errHelperGone
	}
	hp := r.liveHelper(h, cc)
	if started != nil {
		started()
	}
	return r.supervise(ctx, t.Name, stdin, hp, pol.Unconfined, timeout)
}

// preparable says whether calls (with namespaces: ns) may run on prepared
// helpers. A prepared helper waits, up to preparedIdle, beside the calls
// of other tools: in a PID namespace of its own where calls have
// namespaces, else seen by every tool, which Landlock keeps from
// signalling it only from ABI 6 (its signal scoping). Below that, without
// namespaces, a tool could stop the helper prepared for another's call,
// so every call starts its own, as without Options.Prepare.
func (r *Runner) preparable(ns bool) bool {
	return ns || r.abi >= scopedSignalsABI
}

// callPolicy is the sandbox policy of a call of t in workdir (resolved)
// with the temporary directory tmp; protect are toolsrv's own paths in
// workdir (see WorkDirGuard), kept read-only unless the tool writes
// nothing anyway.
func (r *Runner) callPolicy(t *registry.Tool, workdir, tmp string, protect []string, sandboxed bool, lim Limits) sandbox.Policy {
	pol := sandbox.Policy{Unconfined: !sandboxed, ReadOnly: t.ReadOnly, Network: t.Network, WorkDir: workdir,
		TempDir: tmp, Exec: r.execPaths(t), Read: r.readPaths(workdir),
		Processes: lim.Processes, Memory: lim.Memory, FileSize: lim.FileSize, TempSize: lim.TempSize,
		Ptrace: t.Ptrace}
	if !t.ReadOnly {
		pol.Protect = protect
	}
	return pol
}

// outcome is how the helper ended.
type outcome struct {
	sandbox.Status
	timedOut bool
}

// start runs the helper for one call (ns and host from namespacesFor) and
// waits for it. With IsolationAuto,
// a kernel that refuses the namespaces gets the call retried without them
// (and every later call goes without).
func (r *Runner) start(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, pol sandbox.Policy, timeout time.Duration, ns, host bool) (*Result, outcome, error) {
	if !ns && r.iso.root {
		pol.Processes = 0 // root is exempt from RLIMIT_NPROC: only a PID namespace limits it
	}
	res, st, err := r.startHelper(ctx, t, stdin, cc, pol, timeout, ns, host)
	if ns && r.iso.mode == IsolationAuto && err != nil && nsStartError(err) {
		r.iso.disable(err)
		r.log.Warn("the kernel refused namespaces for tool calls; calls run without them (see the threat model: weaker process limits and lifetime)", "err", err)
		if r.iso.root {
			pol.Processes = 0
		}
		return r.startHelper(ctx, t, stdin, cc, pol, timeout, false, host)
	}
	return res, st, err
}

// namespacesFor says whether a call of t under pol gets namespaces, and
// whether it sees the host's processes (warning once when t asks to and
// cannot).
func (r *Runner) namespacesFor(t *registry.Tool, pol sandbox.Policy) (ns, host bool) {
	ns = r.iso.namespaces()
	host, ok := r.hostProcesses(t, pol)
	if !ok && ns { // (without namespaces every call sees the host's processes)
		r.warnOnce("hostProcesses "+t.Name, "the tool asks to see the host's processes, but this kernel's Landlock cannot keep it from signalling them (ABI 6, Linux 6.12, can): it sees only its own call's processes",
			"tool", t.Name, "landlockABI", r.abi)
	}
	return ns, host
}

// startHelper starts one call's helper (with namespaces when ns, without
// the PID namespace when host: the tool sees the host's processes) and
// waits for the call.
func (r *Runner) startHelper(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, pol sandbox.Policy, timeout time.Duration, ns, host bool) (*Result, outcome, error) {
	hp, err := r.forkHelper(t.Command.Argv, r.toolEnv(t, cc, pol.TempDir, !pol.Unconfined), cc.WorkDir, pol, ns, host, cc)
	if err != nil {
		return nil, outcome{}, err
	}
	return r.supervise(ctx, t.Name, stdin, hp, pol.Unconfined, timeout)
}

// supervise feeds a started helper's tool stdin, enforces the timeout and
// collects the capped output and how the tool ended.
func (r *Runner) supervise(ctx context.Context, name string, stdin []byte, hp *helperProc, unconfined bool, timeout time.Duration) (*Result, outcome, error) {
	pid, startAt := hp.Pid, hp.StartAt
	pipes := [3][2]*os.File{{nil, hp.Stdin}, {hp.Stdout, nil}, {hp.Stderr, nil}}
	statusR := hp.Status
	defer statusR.Close()
	defer hp.forget()

	stdout := &capBuffer{max: r.opts.OutputCap}
	stderr := &capBuffer{max: r.opts.OutputCap}
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, pipes[1][0]) }()
	go func() { defer copies.Done(); io.Copy(stderr, pipes[2][0]) }()
	go func() {
		// A tool that does not read its input gets EPIPE here; fine.
		pipes[0][1].Write(stdin)
		pipes[0][1].Close()
	}()
	var status sandbox.Status
	var statusOK bool
	var statusErr error
	statusDone := make(chan struct{})
	reported := make(chan struct{}) // closed when the helper reported a status
	go func() {
		status, statusOK, statusErr = sandbox.ReadStatus(statusR)
		if statusOK {
			close(reported)
		}
		close(statusDone)
	}()
	// The helper's end: its wait status (reaped here, by PID).
	waitErr := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		waitErr <- ws
	}()

	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out outcome
	var hws syscall.WaitStatus
	select {
	case hws = <-waitErr:
	case <-reported:
		// The helper has ended everything of the call and reported: the
		// call is over, whether or not the helper has finished exiting
		// (it is reaped in the background: waitErr has room).
	case <-tctx.Done():
		out.timedOut = ctx.Err() == nil
		// The tool gets SIGTERM (the helper passes it by), then the helper
		// is told to end everything, then the group is killed outright.
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case hws = <-waitErr:
		case <-time.After(r.opts.KillGrace):
			syscall.Kill(pid, sandbox.KillSignal)
			select {
			case hws = <-waitErr:
			case <-time.After(helperGrace):
				syscall.Kill(-pid, syscall.SIGKILL)
				hws = <-waitErr
			}
		}
	}
	dur := time.Since(startAt)
	// Whatever is left of the group ends with the call (the helper has
	// killed the rest already).
	syscall.Kill(-pid, syscall.SIGKILL)

	copied := make(chan struct{})
	go func() { copies.Wait(); <-statusDone; close(copied) }()
	select {
	case <-copied:
	case <-time.After(drainDelay):
		r.log.Warn("a process of the call still holds its output open after the call ended; closing", "tool", name)
		pipes[1][0].Close()
		pipes[2][0].Close()
		statusR.Close()
		<-copied
	}
	pipes[0][1].Close() // unblocks the input writer if nobody read it
	pipes[1][0].Close()
	pipes[2][0].Close()

	res := &Result{Unsandboxed: unconfined, Duration: dur}
	var outTrunc, errTrunc bool
	res.Stdout, outTrunc, res.StdoutBytes = stdout.bytes()
	res.Stderr, errTrunc, res.StderrBytes = stderr.bytes()
	res.Truncated = outTrunc || errTrunc
	switch {
	case statusErr != nil:
		return res, out, statusErr
	case statusOK:
		out.Status = status
		r.noteSharedProc(status)
	default:
		out.Status = unreported(hws, out.timedOut || ctx.Err() != nil, hp.pidNS)
	}
	res.ExitCode = out.Exit
	if out.Signal != 0 {
		res.ExitCode = -1
	}
	return res, out, nil
}

// unreported is how a call ended whose helper ended with ws without a
// report. The helper was killed before it could report (a timeout after
// its grace, an outside SIGKILL), or the call was being ended (ending)
// while the helper was starting: the tool was killed or never ran. A
// helper that ended on its own failed itself (a Go runtime's fatal error,
// printed to /dev/null once the tool runs): its exit status is not the
// tool's, and the call is a sandbox error. pidNS: the helper was the init
// of the call's PID namespace.
func unreported(ws syscall.WaitStatus, ending, pidNS bool) sandbox.Status {
	if ws.Signaled() || ending {
		return sandbox.Status{Exit: -1, Signal: int(syscall.SIGKILL)}
	}
	fate := "the tool and everything it started were killed with it (the helper was the init of the call's PID namespace)"
	if !pidNS {
		fate = "the call's process group was killed with it"
	}
	return sandbox.Status{Exit: ExitSandbox, Error: fmt.Sprintf("the sandbox helper ended with exit status %d without reporting how the tool ended; %s; this is a toolsrv bug, please report it", ws.ExitStatus(), fate)}
}

// helperProc is a started sandbox helper, registered as a live call of
// the runner r until forget.
type helperProc struct {
	*sandbox.Helper
	r *Runner
	// pidNS: the helper is the init of the call's PID namespace.
	pidNS bool
}

// forkHelper starts the sandbox helper for argv under pol, in dir, with
// env, and registers it as a live call of cc (so that Identify finds its
// processes). ns gives it namespaces, hostProcs all of them but the PID
// namespace. A prestarted helper of the same binary and namespaces
// (Options.Prestarted) is used once, instead of starting one. The caller
// owns the returned ends and calls forget when the helper is gone.
func (r *Runner) forkHelper(argv, env []string, dir string, pol sandbox.Policy, ns, hostProcs bool, cc CallContext) (*helperProc, error) {
	var nsc sandbox.Namespaces
	if ns {
		nsc = r.iso.apply(&pol, hostProcs)
	}
	pj, err := json.Marshal(pol)
	if err != nil {
		return nil, err
	}
	var h *sandbox.Helper
	if pre := r.opts.Prestarted; pre != nil && pre.Exe == r.opts.SelfExe && pre.NS == nsc {
		switch err := pre.Use(sandbox.Order{Policy: pj, Argv: argv, Env: env, Dir: dir}); {
		case err == nil:
			h = pre
		case !errors.Is(err, sandbox.ErrTaken):
			r.log.Debug("the prestarted sandbox helper is gone; starting another", "err", err)
		}
	}
	prestarted := h != nil
	if h == nil {
		if h, err = sandbox.StartHelper(r.opts.SelfExe, append([]string{HelperArg, string(pj), "--"}, argv...), env, dir, nsc); err != nil {
			return nil, err
		}
	}
	live := &liveCall{pid: h.Pid, pidfd: h.PidFD, cc: cc}
	if nsc.PID {
		live.pidNS, _ = nsInode(h.Pid, "pid")
	}
	r.calls.add(live)
	r.log.Debug("sandbox helper", "pid", h.Pid, "prestarted", prestarted, "namespaces", ns, "pidNamespace", nsc.PID)
	return &helperProc{Helper: h, r: r, pidNS: nsc.PID}, nil
}

// liveHelper registers a prepared helper that a call just started (Go) as
// that call's, as forkHelper registers the ones it starts.
func (r *Runner) liveHelper(h *sandbox.Helper, cc CallContext) *helperProc {
	live := &liveCall{pid: h.Pid, pidfd: h.PidFD, cc: cc}
	if h.NS.PID {
		live.pidNS, _ = nsInode(h.Pid, "pid")
	}
	r.calls.add(live)
	r.log.Debug("sandbox helper", "pid", h.Pid, "prepared", true, "pidNamespace", h.NS.PID)
	return &helperProc{Helper: h, r: r, pidNS: h.NS.PID}
}

// forget unregisters the helper and closes its pidfd.
func (h *helperProc) forget() {
	h.r.calls.remove(h.Pid)
	if h.PidFD >= 0 {
		syscall.Close(h.PidFD)
		h.PidFD = -1
	}
}

// exitMessage says how the tool ended and shows its standard error (or,
// when that is empty, its standard output), shortened; when the tool's
// error looks like a sandbox denial, it says what the sandbox allows.
func (r *Runner) exitMessage(st sandbox.Status, res *Result) string {
	var how string
	if st.Signal != 0 {
		how = fmt.Sprintf("killed by signal %s", syscall.Signal(st.Signal))
	} else {
		how = fmt.Sprintf("exit status %d", res.ExitCode)
	}
	msg := bytes.TrimSpace(res.Stderr)
	if len(msg) == 0 {
		msg = bytes.TrimSpace(res.Stdout)
	}
	const max = 4000
	if len(msg) > max {
		msg = append(append([]byte(nil), msg[:max]...), "…"...)
	}
	out := how
	if len(msg) > 0 {
		out += ": " + string(msg)
	}
	if res.Denied != "" {
		out += "\n" + res.Denied
	}
	return out
}
