package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/registry"
)

// Options configure a Provider: one remote toolsrv in a federation.
type Options struct {
	// Name is the remote's prefix in the local catalog: its tool T is
	// NAME:T here.
	Name string
	// Addr is where it is: ssh:[USER@]HOST[:PORT] (or unix:PATH,
	// tcp:HOST:PORT).
	Addr string
	// Tools, when set, is a local directory whose .meta files are sent to
	// the remote (into Session) at every connection, and again when they
	// change; the remote resolves them against its own host.
	Tools string
	// Session is the session the federation uses there (default
	// "federation-HOSTNAME" of this machine): it holds what was sent, and
	// Agent ("federation") runs the calls; a profile of that name there
	// limits what may be called.
	Session, Agent string
	// WorkDir, when set, is the remote session's working directory (its
	// ctl "cwd"); otherwise the remote server's default.
	WorkDir string
	// Dial configures the connection (Batch is always on: a server has
	// nobody to answer a prompt).
	Dial DialOptions
	// Poll is how often the remote's revision is read (1 s), and the local
	// Tools directory looked at.
	Poll time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnections
	// (0.5 s doubling to 30 s; back to MinBackoff once a connection has
	// lived 5 s).
	MinBackoff, MaxBackoff time.Duration
	// Logger gets connections, drops and catalog changes (slog.Default()).
	Logger *slog.Logger
}

// Provider is a remote toolsrv as an engine.Provider: its session's
// catalog (its own tools and the definitions sent to it, resolved on its
// host) joins the local catalog as NAME:TOOL, and calls are forwarded to
// run there, in its sandbox. A remote that drops is reconnected with
// backoff; meanwhile its tools are listed as hidden with the reason, and
// left out of ranking.
type Provider struct {
	o      Options
	source string

	mu     sync.Mutex
	conn   *Conn           // nil while disconnected
	down   string          // why, while disconnected
	loaded map[string]bool // tools loaded for Agent on conn
	// idle are open call files of conn, by tool, for the next calls
	// (a call on an open file is a write and a read, not six messages).
	idle map[string][]*ninep.Tx
}

// New checks o and returns the provider; Run connects.
func New(o Options) (*Provider, error) {
	if err := registry.ValidName(o.Name); err != nil || strings.Contains(o.Name, registry.ProviderSep) {
		return nil, fmt.Errorf("remote name %q: must be a valid tool name without %q", o.Name, registry.ProviderSep)
	}
	if IsSSH(o.Addr) {
		if _, err := ParseSSH(o.Addr); err != nil {
			return nil, err
		}
	} else if _, err := ninep.ParseAddr(o.Addr); err != nil {
		return nil, fmt.Errorf("remote %s: %w (or ssh:[USER@]HOST[:PORT])", o.Name, err)
	}
	if o.Session == "" {
		o.Session = DefaultSession()
	}
	if o.Agent == "" {
		o.Agent = "federation"
	}
	for _, n := range []string{o.Session, o.Agent} {
		if err := registry.ValidName(n); err != nil {
			return nil, fmt.Errorf("remote %s: session or agent name %q: %w", o.Name, n, err)
		}
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(30*time.Second, o.MinBackoff)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Dial.Batch = true
	o.Dial.Logger = o.Logger
	return &Provider{o: o, source: SourcePrefix + o.Addr, down: "not connected yet"}, nil
}

// SourcePrefix begins the File of every tool a federation provides
// ("toolsrv at ssh:HOST"). A federation passes on a remote's own tools and
// those sent to it, never the tools the remote itself has from a
// federation (which could go round in a loop).
const SourcePrefix = "toolsrv at "

// DefaultSession is the remote session of a federation from this machine:
// "federation-HOSTNAME".
func DefaultSession() string {
	h, _ := os.Hostname()
	h = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, strings.Split(h, ".")[0])
	if h == "" {
		h = "local"
	}
	return "federation-" + h
}

// Name implements engine.Provider.
func (p *Provider) Name() string { return p.o.Name }

// Run implements engine.Provider: it connects, sends Tools, publishes the
// remote's catalog and follows its revision, and reconnects when the
// connection drops, until ctx ends.
func (p *Provider) Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error {
	log := p.o.Logger.With("remote", p.o.Name, "addr", p.o.Addr)
	backoff := p.o.MinBackoff
	for {
		conn, err := Dial(ctx, p.o.Addr, p.o.Dial)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			why := fmt.Sprintf("remote %s is unreachable: %v; retrying in %s", p.o.Name, err, backoff)
			log.Warn("remote unreachable", "err", err, "retry", backoff)
			if err := p.unavailable(ctx, publish, why); err != nil {
				return err
			}
		} else {
			log.Info("remote connected", "build", conn.Build)
			start := time.Now()
			err = p.serve(ctx, conn, publish, log)
			conn.Close()
			p.disconnected(err.Error())
			if ctx.Err() != nil {
				return nil
			}
			var pe publishError
			if errors.As(err, &pe) {
				return pe.err
			}
			if time.Since(start) >= healthy {
				backoff = p.o.MinBackoff
			}
			why := fmt.Sprintf("remote %s dropped (%v); reconnecting in %s", p.o.Name, err, backoff)
			log.Warn("remote dropped", "err", err, "retry", backoff)
			if err := p.unavailable(ctx, publish, why); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.o.MaxBackoff)
	}
}

// healthy is how long a connection must have lived for the next
// reconnection to start again from MinBackoff: a remote that was
// restarted comes back at once, one that drops every time it is reached
// is retried less and less often.
const healthy = 5 * time.Second

// publishError is the registry refusing a provision: Run returns it.
type publishError struct{ err error }

func (e publishError) Error() string { return "publishing the remote's tools: " + e.err.Error() }

func (p *Provider) unavailable(ctx context.Context, publish func(context.Context, registry.Provision) error, why string) error {
	p.disconnected(why)
	return publish(ctx, registry.Provision{Source: p.source, Unavailable: why})
}

func (p *Provider) disconnected(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conn, p.down, p.loaded, p.idle = nil, why, nil, nil
}

// takeTx returns an open call file of tool on conn, opening one if none
// is idle.
func (p *Provider) takeTx(conn *Conn, file, tool string) (*ninep.Tx, error) {
	p.mu.Lock()
	if p.conn == conn {
		if txs := p.idle[tool]; len(txs) > 0 {
			tx := txs[len(txs)-1]
			p.idle[tool] = txs[:len(txs)-1]
			p.mu.Unlock()
			return tx, nil
		}
	}
	p.mu.Unlock()
	return conn.OpenTx(file)
}

// putTx keeps tx for the next call of tool, while conn is the connection
// (at most a few per tool).
func (p *Provider) putTx(conn *Conn, tool string, tx *ninep.Tx) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != conn || p.idle == nil || len(p.idle[tool]) >= 4 {
		go tx.Close()
		return
	}
	p.idle[tool] = append(p.idle[tool], tx)
}

// serve uses one connection until it fails (the error says how) or ctx
// ends.
func (p *Provider) serve(ctx context.Context, conn *Conn, publish func(context.Context, registry.Provision) error, log *slog.Logger) error {
	se := "session/" + p.o.Session
	for _, d := range []string{se, se + "/agent/" + p.o.Agent} {
		if err := conn.Mkdir(d); err != nil && !isErrno(err, linux.EEXIST) {
			return p.lost(conn, fmt.Errorf("making %s there: %w", d, err))
		}
	}
	if p.o.WorkDir != "" {
		if err := conn.Write(se+"/ctl", []byte("cwd "+p.o.WorkDir)); err != nil {
			return p.lost(conn, fmt.Errorf("setting the working directory there: %w", err))
		}
	}
	var local []registry.Problem
	var state string
	sync := func() error {
		if p.o.Tools == "" {
			return nil
		}
		st := dirState(p.o.Tools)
		if st == state {
			return nil
		}
		probs, err := sendDir(conn, p.o.Session, p.o.Tools)
		if err != nil {
			return p.lost(conn, fmt.Errorf("sending %s: %w", p.o.Tools, err))
		}
		local, state = probs, st
		log.Info("tools sent", "dir", p.o.Tools, "not sent", len(probs))
		return nil
	}
	if err := sync(); err != nil {
		return err
	}
	rev, err := conn.Open(se + "/revision")
	if err != nil {
		return p.lost(conn, err)
	}
	defer rev.Close()
	p.mu.Lock()
	p.conn, p.down, p.loaded, p.idle = conn, "", map[string]bool{}, map[string][]*ninep.Tx{}
	p.mu.Unlock()

	last, sentState := "", state
	tick := time.NewTicker(p.o.Poll)
	defer tick.Stop()
	// A remote that stops answering (a network gone quiet, ssh waiting
	// for TCP to give up) is dropped after the connection deadline.
	deadline := p.o.Dial.Timeout
	if deadline <= 0 {
		deadline = DefaultDialTimeout
	}
	var silent atomic.Bool
	stalled := time.AfterFunc(time.Hour, func() {
		silent.Store(true)
		conn.Close()
	})
	defer stalled.Stop()
	lost := func(err error) error {
		if silent.Load() {
			err = fmt.Errorf("no answer within %s, the deadline: %w", deadline, err)
		}
		return p.lost(conn, err)
	}
	for {
		stalled.Reset(deadline)
		b, err := rev.Read()
		stalled.Stop()
		if err != nil {
			return lost(err)
		}
		if cur := strings.TrimSpace(string(b)); cur != last || state != sentState {
			stalled.Reset(deadline)
			pv, err := p.provision(conn, local)
			stalled.Stop()
			if err != nil {
				return lost(err)
			}
			if err := publish(ctx, pv); err != nil {
				return publishError{err}
			}
			log.Info("remote catalog", "revision", cur, "tools", len(pv.Tools), "problems", len(pv.Problems))
			last, sentState = cur, state
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.Done():
			return p.lost(conn, errors.New("the connection ended"))
		case <-tick.C:
		}
		if err := sync(); err != nil {
			return err
		}
	}
}

// lost describes a failed connection: ssh's end, when it ended.
func (p *Provider) lost(conn *Conn, err error) error {
	if gone := conn.Gone(); gone != "" {
		return fmt.Errorf("%s (%v)", gone, err)
	}
	return err
}

// remoteCatalog is what a federation reads of the session's tools.json.
type remoteCatalog struct {
	Revision uint64             `json:"revision"`
	Tools    []remoteTool       `json:"tools"`
	Hidden   []registry.Hidden  `json:"hidden"`
	Problems []registry.Problem `json:"problems"`
	Shadowed []registry.Shadow  `json:"shadowed"`
}

type remoteTool struct {
	Name        string               `json:"name"`
	File        string               `json:"file"`
	Description string               `json:"description"`
	Prompt      string               `json:"prompt"`
	Keywords    []string             `json:"keywords"`
	Args        json.RawMessage      `json:"args"`
	Tier        registry.Tier        `json:"tier"`
	ReadOnly    bool                 `json:"readOnly"`
	Network     bool                 `json:"network"`
	Concurrency registry.Concurrency `json:"concurrency"`
	Timeout     time.Duration        `json:"timeout"`
}

// provision reads the session's catalog there and makes it a Provision:
// its tools (not those it has from a federation itself), and as problems
// what the definitions sent to it amount to when they are no tool there,
// plus local, the definitions that could not be sent.
func (p *Provider) provision(conn *Conn, local []registry.Problem) (registry.Provision, error) {
	b, err := conn.Read("session/" + p.o.Session + "/tools.json")
	if err != nil {
		return registry.Provision{}, err
	}
	var rc remoteCatalog
	if err := json.Unmarshal(b, &rc); err != nil {
		return registry.Provision{}, fmt.Errorf("%w: its session/%s/tools.json does not parse: %v", ErrNot9P, p.o.Session, err)
	}
	pv := registry.Provision{Source: p.source}
	for _, t := range rc.Tools {
		if strings.HasPrefix(t.File, SourcePrefix) {
			continue
		}
		pv.Tools = append(pv.Tools, registry.Provided{Name: t.Name, Description: t.Description, Prompt: t.Prompt,
			Keywords: t.Keywords, Args: t.Args, Tier: t.Tier, ReadOnly: t.ReadOnly, Network: t.Network,
			Concurrency: t.Concurrency, Timeout: t.Timeout})
	}
	sent := "session/" + p.o.Session + "/meta/"
	where := p.source + " "
	for _, pr := range rc.Problems {
		if strings.HasPrefix(pr.File, sent) {
			pr.Name, pr.File = p.o.Name+registry.ProviderSep+pr.Name, where+pr.File
			pv.Problems = append(pv.Problems, pr)
		}
	}
	for _, h := range rc.Hidden {
		if strings.HasPrefix(h.File, sent) {
			pv.Problems = append(pv.Problems, registry.Problem{Name: p.o.Name + registry.ProviderSep + h.Name, File: where + h.File,
				Msg: "sent, and hidden there: " + h.Reason})
		}
	}
	for _, sh := range rc.Shadowed {
		if strings.HasPrefix(sh.ShadowedBy, sent) {
			p.o.Logger.Info("a sent definition shadows the remote's own tool there (the sent one is served)",
				"remote", p.o.Name, "tool", sh.Name, "shadowed", sh.File)
		}
	}
	for _, pr := range local {
		pr.Name = p.o.Name + registry.ProviderSep + pr.Name
		pv.Problems = append(pv.Problems, pr)
	}
	return pv, nil
}

// Call implements engine.Provider: the call runs on the remote host, as
// its agent Agent of Session, in its sandbox; a tool that ran and failed
// there is a Result with exec.ErrExit, as a local one.
func (p *Provider) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	full := p.o.Name + registry.ProviderSep + name
	fail := func(kind error, format string, a ...any) (*exec.Result, error) {
		return nil, &exec.CallError{Tool: full, Kind: kind, Msg: fmt.Sprintf(format, a...)}
	}
	p.mu.Lock()
	conn, down, loaded := p.conn, p.down, p.loaded
	p.mu.Unlock()
	if conn == nil {
		return fail(exec.ErrStart, "remote %s is not connected: %s", p.o.Name, down)
	}
	agent := "session/" + p.o.Session + "/agent/" + p.o.Agent
	type answer struct {
		b   []byte
		err error
	}
	done := make(chan answer, 1)
	load := func() error {
		if err := conn.Write(agent+"/ctl", []byte("tool_load "+name)); err != nil {
			return err
		}
		p.mu.Lock()
		loaded[name] = true
		p.mu.Unlock()
		return nil
	}
	go func() {
		var a answer
		p.mu.Lock()
		have := loaded[name]
		p.mu.Unlock()
		if !have {
			if a.err = load(); a.err != nil {
				done <- a
				return
			}
		}
		call := func() ([]byte, error) {
			tx, err := p.takeTx(conn, agent+"/call/"+name, name)
			if err != nil {
				return nil, err
			}
			b, err := tx.Do(args)
			if err != nil {
				go tx.Close()
				return nil, err
			}
			p.putTx(conn, name, tx)
			return b, nil
		}
		a.b, a.err = call()
		if isErrno(a.err, linux.EACCES) && strings.Contains(errReason(a.err), "is not loaded") {
			// The agent there was made again (a new server): load again.
			if a.err = load(); a.err == nil {
				a.b, a.err = call()
			}
		}
		done <- a
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		kind := exec.ErrCanceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			kind = exec.ErrTimeout
		}
		return fail(kind, "waiting for remote %s: %v (the call may still be running there, until its own timeout)", p.o.Name, ctx.Err())
	}
	if a.err != nil {
		var r *ninep.RefusedError
		if errors.As(a.err, &r) {
			return fail(kindOf(r.Errno, r.Reason), "on remote %s (%s): %s", p.o.Name, p.o.Addr, r.Reason)
		}
		return fail(exec.ErrStart, "remote %s: %v", p.o.Name, p.lost(conn, a.err))
	}
	var ans engine.CallResult
	if err := json.Unmarshal(a.b, &ans); err != nil {
		return fail(exec.ErrStart, "remote %s answered the call with something that is not a call result (%v): %.200q", p.o.Name, err, a.b)
	}
	res := &exec.Result{Stdout: []byte(ans.Output), Content: ans.Content, Stderr: []byte(ans.Stderr), ExitCode: ans.ExitCode,
		Truncated: ans.Truncated, Unsandboxed: ans.Unsandboxed, Denied: ans.Denied,
		StdoutBytes: int64(len(ans.Output)), StderrBytes: int64(len(ans.Stderr)),
		Duration: time.Duration(ans.DurationMS * float64(time.Millisecond))}
	if res.ExitCode != 0 {
		return res, &exec.CallError{Tool: full, Kind: exec.ErrExit, Result: res,
			Msg: fmt.Sprintf("exit status %d on remote %s: %s", res.ExitCode, p.o.Name, firstNonEmpty(lastLine(ans.Stderr), lastLine(ans.Output)))}
	}
	return res, nil
}

// kindOf maps a remote refusal to the kind of call failure it is (the
// inverse of toolsrv serve's mapping).
func kindOf(errno linux.Errno, reason string) error {
	switch {
	case errno == linux.EINVAL:
		return exec.ErrInvalidArgs
	case errno == linux.ETIMEDOUT:
		return exec.ErrTimeout
	case errno == linux.EINTR:
		return exec.ErrCanceled
	case errno == linux.EACCES && strings.Contains(reason, "bypass"):
		return exec.ErrBypassRefused
	case errno == linux.EPERM:
		return exec.ErrSandbox
	}
	return exec.ErrStart
}

func isErrno(err error, errno linux.Errno) bool {
	var r *ninep.RefusedError
	return errors.As(err, &r) && r.Errno == errno
}

func errReason(err error) string {
	var r *ninep.RefusedError
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
