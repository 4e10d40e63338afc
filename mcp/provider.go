package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// Defaults of ProviderOptions.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultMinBackoff   = time.Second
	DefaultMaxBackoff   = time.Minute
	DefaultStopGrace    = 2 * time.Second
)

// ProviderOptions configure the providers of a configuration.
type ProviderOptions struct {
	// Runner starts stdio servers, sandboxed (required for them).
	Runner *exec.Runner
	// StartTimeout bounds a server's start: the initialize handshake and
	// the first tools/list (DefaultStartTimeout; a server's own
	// "startTimeout" wins).
	StartTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a server that died
	// or could not start is started again (doubling from the first to the
	// second; a server that ran for MaxBackoff starts from MinBackoff
	// again).
	MinBackoff, MaxBackoff time.Duration
	// StopGrace is how long a stdio server gets to exit after its input
	// is closed before it is killed.
	StopGrace time.Duration
	// Version is toolsrv's, told to servers in initialize.
	Version string
	// Logger gets events (slog.Default()); each server's standard error
	// is logged at Debug.
	Logger *slog.Logger
	// TokenDir is where the OAuth logins of http servers are kept
	// (DefaultTokenDir; "": none is read or kept, and a server that asks
	// for authorization gets none but with the client credentials grant).
	TokenDir string
}

func (o *ProviderOptions) defaults() {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "devel"
	}
}

// Providers are the engine providers of a configuration: one per server
// entry, including entries that could not be used (they publish their
// problem, so that validate, ls and the 9P errors file show it).
func Providers(cfg *Config, o ProviderOptions) []engine.Provider {
	o.defaults()
	var out []engine.Provider
	for _, p := range cfg.Problems {
		if !p.Warning {
			out = append(out, &brokenProvider{name: p.Server, source: "mcp server " + p.Server + " (" + cfg.File + ")", msg: p.Msg})
		}
	}
	for _, sc := range cfg.Servers {
		out = append(out, NewProvider(sc, o))
	}
	return out
}

// brokenProvider is a configuration entry that could not be used.
type brokenProvider struct{ name, source, msg string }

func (b *brokenProvider) Name() string { return b.name }

func (b *brokenProvider) Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error {
	if err := publish(ctx, registry.Provision{Source: b.source, Problems: []registry.Problem{{Msg: b.msg + "; fix its entry in the mcp config"}}}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

func (b *brokenProvider) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	return nil, &exec.CallError{Tool: b.name + registry.ProviderSep + name, Kind: exec.ErrStart, Msg: b.msg}
}

// Provider is one MCP server as a source of tools (an engine.Provider):
// its tools join the catalog as NAME:TOOL, and calls to them go to it.
// A stdio server is started when the provider runs (the engine's start),
// kept, and started again with backoff when it dies; its tools are listed
// again on notifications/tools/list_changed.
type Provider struct {
	cfg  ServerConfig
	opts ProviderOptions
	log  *slog.Logger

	mu   sync.Mutex
	sess *sdk.ClientSession
	down string // why there is no session

	// calls are the calls in progress, which the server's questions go
	// to (elicit.go).
	calls *inflight
	// auth gets the server's access tokens (oauth.go).
	auth authState
}

// NewProvider makes the provider of one server entry.
func NewProvider(sc ServerConfig, o ProviderOptions) *Provider {
	o.defaults()
	log := o.Logger.With("mcp_server", sc.Name)
	return &Provider{cfg: sc, opts: o, log: log, down: "not started yet", calls: newInflight(log)}
}

// Name is the server's name: its tools' prefix.
func (p *Provider) Name() string { return p.cfg.Name }

// Config is the server's entry.
func (p *Provider) Config() ServerConfig { return p.cfg }

// Run connects to the server, publishes its tools, follows its list
// changes, and starts it again when it dies, until ctx ends.
func (p *Provider) Run(ctx context.Context, publish func(context.Context, registry.Provision) error) error {
	source := p.cfg.Describe()
	backoff := p.opts.MinBackoff
	for ctx.Err() == nil {
		started := time.Now()
		err := p.session(ctx, source, publish)
		if ctx.Err() != nil {
			return nil
		}
		var pe *publishError
		if errors.As(err, &pe) {
			return pe.err
		}
		if time.Since(started) > p.opts.MaxBackoff {
			backoff = p.opts.MinBackoff
		}
		why := fmt.Sprintf("%v; starting it again in %s", err, backoff.Round(time.Millisecond))
		p.setDown(why)
		p.log.Warn("mcp server unavailable", "err", err, "retry", backoff)
		// Its last tools are listed as hidden with this reason; a server
		// never listed gets it as its problem (validate, ls, 9P errors).
		if err := publish(ctx, registry.Provision{Source: source, Unavailable: why}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
	return nil
}

// serverSaid is what toolsrv says about a failed call, then what the
// server said, on lines of its own (it may run to several, and must not
// run on from toolsrv's words).
func serverSaid(what, msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return what + ", without a message"
	}
	return what + ":\n" + msg
}

// publishError is the registry refusing a provision: Run returns it.
type publishError struct{ err error }

func (e *publishError) Error() string { return e.err.Error() }

// session runs one connection to the server: connect, list, publish, and
// re-list on list_changed until the connection ends (its error says why)
// or ctx does.
func (p *Provider) session(ctx context.Context, source string, publish func(context.Context, registry.Provision) error) error {
	changed := make(chan struct{}, 1)
	conn, err := p.connect(ctx, changed)
	if err != nil {
		return err
	}
	defer conn.close()
	sess := conn.sess
	start := p.cfg.StartTimeout
	if start <= 0 {
		start = p.opts.StartTimeout
	}
	list := func(timeout time.Duration) error {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		tools, problems, err := p.list(lctx, sess)
		if err != nil {
			return conn.startFailure("tools/list", err, lctx.Err() != nil && ctx.Err() == nil, timeout)
		}
		problems = append(problems, conn.garbageProblems()...)
		if err := publish(ctx, registry.Provision{Source: source, Tools: tools, Problems: problems}); err != nil {
			return &publishError{err}
		}
		p.log.Info("mcp server tools listed", "tools", len(tools))
		return nil
	}
	// Calls may come as soon as the tools are published.
	p.setSession(sess)
	defer p.setSession(nil)
	if err := list(start); err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			return fmt.Errorf("the server closed the connection: %s", conn.why(err))
		case <-changed:
			if err := list(start); err != nil {
				return err
			}
		}
	}
}

// list is the server's tools as provided tools, with the problems of
// tools it cannot take.
func (p *Provider) list(ctx context.Context, sess *sdk.ClientSession) ([]registry.Provided, []registry.Problem, error) {
	var out []registry.Provided
	var problems []registry.Problem
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		pt, err := providedTool(t, p.cfg)
		if err != nil {
			full := p.cfg.Name + registry.ProviderSep + t.Name
			problems = append(problems, registry.Problem{Name: full, Field: "inputSchema", Msg: "tool " + full + ": " + err.Error()})
			continue
		}
		out = append(out, pt)
	}
	if out == nil {
		out = []registry.Provided{}
	}
	return out, problems, nil
}

func (p *Provider) setSession(s *sdk.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sess = s
	if s != nil {
		p.down = ""
	}
}

func (p *Provider) setDown(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = why
}

// Call calls tool name of the server with args (already checked against
// its schema). A result with isError is a failed call (exec.ErrExit); a
// protocol error too, with the server's message. What toolsrv declined
// of the server's questions during the call is said after its standard
// error, or its error's message (elicit.go).
func (p *Provider) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	ctx, end := p.calls.begin(ctx)
	r, err := p.call(ctx, name, args, cc)
	return withNotes(r, err, end())
}

func (p *Provider) call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	full := p.cfg.Name + registry.ProviderSep + name
	p.mu.Lock()
	sess, down := p.sess, p.down
	p.mu.Unlock()
	if sess == nil {
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrStart, Msg: "mcp server " + p.cfg.Name + " is not running", Err: errors.New(down)}
	}
	timeout := exec.DefaultTimeout
	if p.cfg.Timeout > 0 {
		timeout = p.cfg.Timeout
	}
	if cc.Timeout > 0 {
		timeout = cc.Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	dur := time.Since(start)
	var needLogin *LoginNeededError
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrCanceled, Err: ctx.Err()}
	case err != nil && cctx.Err() != nil:
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrTimeout, Msg: fmt.Sprintf("mcp server %s gave no answer within %s (set \"timeout\" in its entry of the mcp config if it needs longer)", p.cfg.Name, timeout)}
	case err != nil && errors.As(err, &needLogin):
		// Asked for an authorization toolsrv has no login for (oauth.go).
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrStart, Msg: needLogin.Error()}
	case err != nil && (errors.Is(err, sdk.ErrConnectionClosed) || strings.Contains(err.Error(), "connection closed")):
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrStart, Msg: "mcp server " + p.cfg.Name + " went away during the call", Err: err}
	case err != nil:
		// A JSON-RPC error: the server refused or failed the call.
		msg := err.Error()
		if je := (*jsonrpc.Error)(nil); errors.As(err, &je) && je.Code != rejectedByTransport {
			msg = fmt.Sprintf("%s (JSON-RPC error %d)", je.Message, je.Code)
		}
		r := &exec.Result{Stderr: []byte(msg), ExitCode: 1, Duration: dur}
		return r, &exec.CallError{Tool: full, Kind: exec.ErrExit, Msg: serverSaid("mcp server "+p.cfg.Name+" answered the call with an error", msg), Result: r}
	}
	r := resultOf(res, dur)
	if res.IsError {
		r.ExitCode, r.Stderr, r.Stdout = 1, r.Stdout, nil
		return r, &exec.CallError{Tool: full, Kind: exec.ErrExit, Msg: serverSaid("mcp server "+p.cfg.Name+" reported an error", string(r.Stderr)), Result: r}
	}
	return r, nil
}
