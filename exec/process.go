package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"toolsrv/exec/sandbox"
	"toolsrv/registry"
)

// drainDelay bounds the wait for the output pipes after the process group
// is gone (a process that left the group with setsid may hold them).
const drainDelay = 2 * time.Second

// run starts the tool (through the sandbox helper when sandboxed), feeds it
// stdin, enforces the timeout on its whole process group and collects the
// capped output.
func (r *Runner) run(ctx context.Context, t *registry.Tool, stdin []byte, cc CallContext, sandboxed bool, timeout time.Duration) (*Result, error) {
	fail := func(kind error, msg string, err error, res *Result) (*Result, error) {
		return res, &CallError{Tool: t.Name, Kind: kind, Msg: msg, Err: err, Result: res}
	}
	tmp, err := os.MkdirTemp(r.opts.TempRoot, "toolsrv-call-")
	if err != nil {
		return fail(ErrStart, "cannot make the call's temporary directory", err, nil)
	}
	defer os.RemoveAll(tmp)

	argv := t.Command.Argv
	cmd := &osexec.Cmd{Dir: cc.WorkDir, Env: r.toolEnv(t, cc, tmp, sandboxed)}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.SysProcAttr = sys
	var statusR, statusW *os.File
	if sandboxed {
		pol := sandbox.Policy{ReadOnly: t.ReadOnly, Network: t.Network, WorkDir: cc.WorkDir, TempDir: tmp, Exec: execPaths(t, r.opts.ClientBin)}
		if !t.Network && r.netns {
			sys.Cloneflags = syscall.CLONE_NEWNET
			pol.NetNS = true
		}
		pj, err := json.Marshal(pol)
		if err != nil {
			return fail(ErrSandbox, "", err, nil)
		}
		cmd.Path = r.opts.SelfExe
		cmd.Args = append([]string{r.opts.SelfExe, HelperArg, string(pj), "--"}, argv...)
		if statusR, statusW, err = os.Pipe(); err != nil {
			return fail(ErrStart, "", err, nil)
		}
		defer statusR.Close()
		cmd.ExtraFiles = []*os.File{statusW}
	} else {
		cmd.Path = argv[0]
		cmd.Args = argv
	}

	var pipes [3][2]*os.File // stdin, stdout, stderr: [read, write]
	for i := range pipes {
		rd, wr, err := os.Pipe()
		if err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			if statusW != nil {
				statusW.Close()
			}
			return fail(ErrStart, "", err, nil)
		}
		pipes[i] = [2]*os.File{rd, wr}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0][0], pipes[1][1], pipes[2][1]

	start := time.Now()
	err = cmd.Start()
	// The child has its copies; close ours so EOF arrives when it exits.
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if statusW != nil {
		statusW.Close()
	}
	if err != nil {
		pipes[0][1].Close()
		pipes[1][0].Close()
		pipes[2][0].Close()
		return fail(ErrStart, fmt.Sprintf("starting %s", cmd.Path), err, nil)
	}
	pgid := cmd.Process.Pid

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
	var status []byte
	statusDone := make(chan struct{})
	if statusR != nil {
		go func() { status, _ = io.ReadAll(io.LimitReader(statusR, 64<<10)); close(statusDone) }()
	} else {
		close(statusDone)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()

	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	timedOut := false
	select {
	case <-waitErr:
	case <-tctx.Done():
		timedOut = ctx.Err() == nil
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-waitErr:
		case <-time.After(r.opts.KillGrace):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-waitErr
		}
	}
	dur := time.Since(start)
	// Whatever is left of the group (background children, grandchildren
	// that ignore SIGTERM) ends with the call.
	syscall.Kill(-pgid, syscall.SIGKILL)

	copied := make(chan struct{})
	go func() { copies.Wait(); <-statusDone; close(copied) }()
	select {
	case <-copied:
	case <-time.After(drainDelay):
		r.log.Warn("tool left a process holding its output open; closing", "tool", t.Name)
		pipes[1][0].Close()
		pipes[2][0].Close()
		if statusR != nil {
			statusR.Close()
		}
		<-copied
	}
	pipes[0][1].Close() // unblocks the input writer if nobody read it
	pipes[1][0].Close()
	pipes[2][0].Close()

	res := &Result{ExitCode: cmd.ProcessState.ExitCode(), Unsandboxed: !sandboxed, Duration: dur}
	var outTrunc, errTrunc bool
	res.Stdout, outTrunc, res.StdoutBytes = stdout.bytes()
	res.Stderr, errTrunc, res.StderrBytes = stderr.bytes()
	res.Truncated = outTrunc || errTrunc

	switch {
	case len(status) > 0:
		return fail(ErrSandbox, strings.TrimPrefix(strings.TrimSpace(string(status)), "toolsrv sandbox: "), nil, res)
	case timedOut:
		return fail(ErrTimeout, fmt.Sprintf("killed after %s with its whole process group (set \"timeout\" in the .meta or a per-call timeout if it needs longer)", timeout), nil, res)
	case ctx.Err() != nil:
		return fail(ErrCanceled, "killed with its whole process group", ctx.Err(), res)
	case res.ExitCode != 0:
		return fail(ErrExit, exitMessage(cmd.ProcessState, res), nil, res)
	}
	r.log.Debug("tool call", "tool", t.Name, "sandboxed", sandboxed, "duration", dur, "stdout", res.StdoutBytes, "stderr", res.StderrBytes)
	res.Content = parseContent(res.Stdout)
	if res.Truncated {
		r.log.Warn("tool output truncated", "tool", t.Name, "stdout", res.StdoutBytes, "stderr", res.StderrBytes, "cap", r.opts.OutputCap)
	}
	return res, nil
}

// exitMessage says how the tool ended and shows its standard error (or,
// when that is empty, its standard output), shortened.
func exitMessage(ps *os.ProcessState, res *Result) string {
	var how string
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		how = fmt.Sprintf("killed by signal %s", ws.Signal())
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
	if len(msg) == 0 {
		return how
	}
	return how + ": " + string(msg)
}

// execPaths are the paths a sandboxed tool may read and execute besides
// the system directories: its own directory (co-located executables,
// helper scripts) and its executable wherever it lives.
func execPaths(t *registry.Tool, clientBin string) []string {
	var out []string
	if t.Dir != "" {
		out = append(out, t.Dir)
	}
	if clientBin != "" && !sandbox.Under(clientBin, out) && !sandbox.Under(clientBin, sandbox.SystemReadOnly) {
		out = append(out, clientBin)
	}
	if exe := t.Command.Argv[0]; !sandbox.Under(exe, out) && !sandbox.Under(exe, sandbox.SystemReadOnly) {
		out = append(out, exe)
	}
	if t.Command.Kind != registry.Shell && len(t.Command.Argv) == 1 {
		// A symlinked executable: allow its target too.
		if real, err := filepath.EvalSymlinks(t.Command.Argv[0]); err == nil && !sandbox.Under(real, out) && !sandbox.Under(real, sandbox.SystemReadOnly) {
			out = append(out, real)
		}
	}
	return out
}
