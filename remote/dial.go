package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/ninep"
)

// Environment variables Dial reads.
const (
	// SSHCommandEnv replaces "ssh", as GIT_SSH_COMMAND does for git: a
	// shell command line ("ssh -F ~/.ssh/toolsrv_config", "ssh -i KEY")
	// to which ssh's arguments are appended.
	SSHCommandEnv = "TOOLSRV_SSH_COMMAND"
	// RemoteCmdEnv is the command that runs toolsrv on the remote host (a
	// shell command line, default "toolsrv"); " serve --stdio" is
	// appended.
	RemoteCmdEnv = "TOOLSRV_REMOTE_CMD"
)

// DefaultDialTimeout bounds a connection until the remote answered its
// version (DialOptions.Timeout).
const DefaultDialTimeout = 20 * time.Second

// DialOptions configure Dial.
type DialOptions struct {
	// Getenv reads SSHCommandEnv and RemoteCmdEnv (os.Getenv).
	Getenv func(string) string
	// RemoteCmd, when set, overrides $TOOLSRV_REMOTE_CMD.
	RemoteCmd string
	// Batch makes ssh ask nothing (BatchMode=yes): a server has nobody to
	// type a password or accept a host key.
	Batch bool
	// Timeout bounds the connection until the remote answered its version
	// (DefaultDialTimeout): an ssh that hangs (a prompt nobody answers, a
	// network that drops packets) is stopped then.
	Timeout time.Duration
	// Logger gets what ssh says on a connection that works (slog.Default()).
	Logger *slog.Logger
}

// Kinds of failure of Dial, which say which side failed; test with
// errors.Is(err, remote.ErrSSH).
var (
	// ErrNoSSH: this machine cannot run ssh.
	ErrNoSSH = errors.New("ssh cannot be run here")
	// ErrSSH: ssh could not connect or log in (its exit status 255).
	ErrSSH = errors.New("ssh could not connect")
	// ErrNoToolsrv: the remote command was not found on the remote host.
	ErrNoToolsrv = errors.New("toolsrv is missing on the remote host")
	// ErrRemote: the remote toolsrv started and failed.
	ErrRemote = errors.New("the remote toolsrv failed")
	// ErrNot9P: the remote answered something that is not 9P.
	ErrNot9P = errors.New("the remote did not answer in 9P")
	// ErrTimeout: no answer within DialOptions.Timeout.
	ErrTimeout = errors.New("no answer in time")
	// ErrVersion: the remote serves another version of the tree.
	ErrVersion = errors.New("version mismatch")
)

// DialError is a connection that could not be made. Its message says which
// side failed and what to do, followed by what ssh and the remote command
// said on standard error, if anything.
type DialError struct {
	Addr   string
	Kind   error
	Msg    string
	Stderr string
}

func (e *DialError) Error() string {
	s := e.Addr + ": " + e.Msg
	if e.Stderr != "" {
		s += "\n  ssh said: " + strings.ReplaceAll(e.Stderr, "\n", "\n  ")
	}
	return s
}

func (e *DialError) Unwrap() error { return e.Kind }

// Conn is a 9P client of a toolsrv reached at Addr.
type Conn struct {
	*ninep.Client
	Addr string
	// Build is the remote server's build (its /version).
	Build string
	proc  *sshProc  // nil for unix: and tcp:
	raw   io.Closer // the transport: proc, or the socket
}

// Close ends the connection (and ssh). The transport goes first, so that
// closing never waits for a remote that stopped answering.
func (c *Conn) Close() error {
	if c.raw != nil {
		c.raw.Close()
	}
	c.Client.Close()
	return nil
}

// Done is closed when ssh exits (nil for unix: and tcp:, which never
// say): the connection is then over.
func (c *Conn) Done() <-chan struct{} {
	if c.proc == nil {
		return nil
	}
	return c.proc.done
}

// Gone says why the connection ended (ssh's exit status and last words),
// or "" while ssh runs (always "" for unix: and tcp:).
func (c *Conn) Gone() string {
	if c.proc == nil {
		return ""
	}
	select {
	case <-c.proc.done:
	default:
		return ""
	}
	return c.proc.exitText()
}

// Dial connects to the toolsrv at addr and checks that it serves the tree
// this package speaks (ninep.Protocol). addr is ssh:[USER@]HOST[:PORT]
// (ssh runs "toolsrv serve --stdio" there; see DialOptions), unix:PATH or
// tcp:HOST:PORT. The connection lives until Close or until ctx ends.
func Dial(ctx context.Context, addr string, o DialOptions) (*Conn, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultDialTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if !IsSSH(addr) {
		dctx, cancel := context.WithTimeout(ctx, o.Timeout)
		nc, err := ninep.Dial(dctx, addr)
		cancel()
		if err != nil {
			return nil, err
		}
		timer := time.AfterFunc(o.Timeout, func() { nc.Close() })
		defer timer.Stop()
		cl, err := ninep.ConnectOver(ctx, nc, addr)
		if err != nil {
			return nil, err
		}
		c := &Conn{Client: cl, Addr: addr, raw: nc}
		if err := c.checkVersion(); err != nil {
			cl.Close()
			return nil, err
		}
		return c, nil
	}
	a, err := ParseSSH(addr)
	if err != nil {
		return nil, err
	}
	proc, err := startSSH(a, o)
	if err != nil {
		return nil, err
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(o.Timeout, func() {
		timedOut.Store(true)
		proc.kill()
	})
	cl, err := ninep.ConnectOver(ctx, proc, addr)
	c := &Conn{Client: cl, Addr: addr, proc: proc, raw: proc}
	if err == nil {
		err = c.checkVersion()
	}
	timer.Stop()
	if err == nil {
		go proc.logExit(o.Logger, addr)
		return c, nil
	}
	if cl != nil {
		cl.Close()
	}
	proc.Close()
	return nil, proc.classify(a, o, err, timedOut.Load(), ctx.Err() != nil)
}

// checkVersion reads /version: the remote must speak ninep.Protocol.
func (c *Conn) checkVersion() error {
	b, err := c.Read("version")
	var r *ninep.RefusedError
	if errors.As(err, &r) && (r.Errno == linux.ENOENT || r.Errno == linux.EACCES) {
		return &DialError{Addr: c.Addr, Kind: ErrVersion, Msg: fmt.Sprintf(
			"version mismatch: the server there has no /version (a toolsrv older than this one, which speaks %q); install the same toolsrv on both sides, and restart the server there",
			ninep.Protocol)}
	}
	if err != nil {
		return err
	}
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	if lines[0] != ninep.Protocol {
		build := ""
		if len(lines) > 1 {
			build = " (" + strings.TrimSpace(lines[1]) + ")"
		}
		return &DialError{Addr: c.Addr, Kind: ErrVersion, Msg: fmt.Sprintf(
			"version mismatch: the server there speaks %q%s, this toolsrv %q; install the same toolsrv on both sides, and restart the server there (it keeps running between connections: toolsrv 9p write ctl is not enough, stop it)",
			lines[0], build, ninep.Protocol)}
	}
	if len(lines) > 1 {
		c.Build = strings.TrimPrefix(strings.TrimSpace(lines[1]), "build ")
	}
	return nil
}

// sshProc is ssh running "toolsrv serve --stdio" on the remote host, seen
// as the connection it carries: its standard input and output.
type sshProc struct {
	cmd    *osexec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tail
	first  tail // the first bytes received, to recognise garbage

	group    bool          // ssh runs in its own process group
	done     chan struct{} // closed when ssh exited
	waitErr  error
	closeOne sync.Once
}

// sshArgv is the command line that runs ssh (or $TOOLSRV_SSH_COMMAND,
// through the shell, as git runs GIT_SSH_COMMAND) for a.
func sshArgv(a SSHAddr, o DialOptions) []string {
	remote := o.RemoteCmd
	if remote == "" {
		remote = o.Getenv(RemoteCmdEnv)
	}
	if remote == "" {
		remote = "toolsrv"
	}
	var args []string
	if o.Batch {
		args = append(args, "-o", "BatchMode=yes")
	}
	if a.Port != 0 {
		args = append(args, "-p", fmt.Sprint(a.Port))
	}
	args = append(args, a.target(), "--", remote+" serve --stdio")
	if c := strings.TrimSpace(o.Getenv(SSHCommandEnv)); c != "" {
		return append([]string{"/bin/sh", "-c", c + ` "$@"`, "toolsrv-ssh"}, args...)
	}
	return append([]string{"ssh"}, args...)
}

func startSSH(a SSHAddr, o DialOptions) (*sshProc, error) {
	argv := sshArgv(a, o)
	cmd := osexec.Command(argv[0], argv[1:]...)
	p := &sshProc{cmd: cmd, stderr: &tail{max: 4096, keepEnd: true}, first: tail{max: 64}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	// Wait must not wait for a descendant that keeps standard error open.
	cmd.WaitDelay = time.Second
	if o.Batch {
		// Its own process group, so that killing it reaches ssh under the
		// shell of $TOOLSRV_SSH_COMMAND too. Not for a client on a
		// terminal: ssh in a background group could not ask for a
		// password there.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.group = true
	}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		what := "ssh"
		if argv[0] != "ssh" {
			what = "$" + SSHCommandEnv
		}
		return nil, &DialError{Addr: a.String(), Kind: ErrNoSSH, Msg: fmt.Sprintf(
			"cannot run %s on this machine (%v): install an OpenSSH client (apt-get install openssh-client), or set %s", what, err, SSHCommandEnv)}
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *sshProc) Read(b []byte) (int, error) {
	n, err := p.stdout.Read(b)
	if n > 0 && p.first.len() < p.first.max {
		p.first.Write(b[:n])
	}
	return n, err
}

func (p *sshProc) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close ends ssh: its standard input closes (the remote relay then ends),
// and after a grace period it is killed.
func (p *sshProc) Close() error {
	p.closeOne.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			p.kill()
			<-p.done
		}
		p.stdout.Close()
	})
	return nil
}

func (p *sshProc) kill() {
	switch {
	case p.cmd.Process == nil:
	case p.group:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	default:
		p.cmd.Process.Kill()
	}
}

// exitCode is ssh's exit status, -1 when it was killed or has not exited.
func (p *sshProc) exitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	var ee *osexec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ExitCode()
	}
	if p.waitErr == nil {
		return 0
	}
	return -1
}

// exitText says how ssh ended and what it said last.
func (p *sshProc) exitText() string {
	s := fmt.Sprintf("ssh exited (%v)", p.waitErr)
	if p.waitErr == nil {
		s = "ssh exited"
	}
	if e := lastLine(p.stderr.String()); e != "" {
		s += ": " + e
	}
	return s
}

// logExit logs what ssh says when a working connection ends.
func (p *sshProc) logExit(log *slog.Logger, addr string) {
	<-p.done
	log.Debug("ssh ended", "addr", addr, "status", p.waitErr, "stderr", p.stderr.String())
}

// classify turns a failed connection into a DialError that says which side
// failed. err is the 9P client's error.
func (p *sshProc) classify(a SSHAddr, o DialOptions, err error, timedOut, canceled bool) error {
	var de *DialError
	if errors.As(err, &de) {
		de.Stderr = strings.TrimSpace(p.stderr.String())
		return de
	}
	<-p.done
	stderr := strings.TrimSpace(p.stderr.String())
	host := a.Host
	fail := func(kind error, format string, args ...any) error {
		return &DialError{Addr: a.String(), Kind: kind, Msg: fmt.Sprintf(format, args...), Stderr: stderr}
	}
	code := p.exitCode()
	first := p.first.Bytes()
	remoteCmd := sshArgv(a, o)
	cmdline := remoteCmd[len(remoteCmd)-1]
	switch {
	case canceled:
		return fail(context.Canceled, "the connection was interrupted: %v", err)
	case len(first) > 0 && !looks9P(first):
		return fail(ErrNot9P, "%s answered something that is not 9P: %q; the remote command (%s) must be toolsrv serve --stdio, and nothing the login runs there may print on standard output (a shell startup file that echoes, say)",
			host, first, cmdline)
	case code == 255:
		return fail(ErrSSH, "ssh could not connect to %s (exit status 255); check that \"ssh %s true\" works without a prompt (keys, host key, ~/.ssh/config)", host, a.target())
	case code == 127 || code == 126:
		return fail(ErrNoToolsrv, "toolsrv is missing on %s: the remote command %q was not found (exit status %d); install toolsrv there, or name its path with $%s or --remote-cmd",
			host, cmdline, code, RemoteCmdEnv)
	case timedOut:
		return fail(ErrTimeout, "no 9P answer from %s within %s: ssh hangs (a prompt nobody answers, a network that drops packets) or the server there is stuck; check that \"ssh %s true\" returns at once",
			host, o.Timeout, a.target())
	case code > 0:
		return fail(ErrRemote, "the remote toolsrv on %s failed (exit status %d): %s", host, code, firstNonEmpty(lastLine(stderr), err.Error()))
	}
	return fail(ErrRemote, "the 9P session with %s failed: %v", host, err)
}

// looks9P reports whether b can begin a 9P answer to Tversion: Rversion or
// Rlerror.
func looks9P(b []byte) bool {
	if len(b) < 5 {
		return true // too little to tell
	}
	return b[4] == 101 || b[4] == 7
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// tail keeps the first (or, keepEnd, the last) max bytes written to it.
type tail struct {
	max     int
	keepEnd bool
	mu      sync.Mutex
	b       []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keepEnd {
		t.b = append(t.b, p...)
		if len(t.b) > t.max {
			t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
		}
		return len(p), nil
	}
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *tail) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.b)
}

func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b)
}

func (t *tail) String() string { return string(t.Bytes()) }
