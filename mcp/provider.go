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
	// Pins, when set, pins each server's tools on first sight and holds
	// those that change after (see Pins); nil takes every tool as
	// offered.
	Pins *Pins
	// PinsPoll is how often a server with held tools looks for their
	// approval in Pins (DefaultPinsPoll).
	PinsPoll time.Duration
}

// DefaultPinsPoll is ProviderOptions.PinsPoll's default.
const DefaultPinsPoll = 2 * time.Second

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
	if o.PinsPoll <= 0 {
		o.PinsPoll = DefaultPinsPoll
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
	note string // the last listing's warning (Notes)
	// held are the tools held back from the catalog (Pins), by their
	// name at the server; pinNote says why pinning failed.
	held    map[string]*Held
	pinNote string
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
	// The last listing, for another look at the pins (an approval).
	var (
		listed   []registry.Provided
		defs     []Definition
		problems []registry.Problem
	)
	offer := func() error {
		tools, held := p.pinned(ctx, listed, defs)
		if err := publish(ctx, registry.Provision{Source: source, Tools: tools, Held: held, Problems: problems}); err != nil {
			return &publishError{err}
		}
		p.log.Info("mcp server tools listed", "tools", len(tools), "held", len(held))
		return nil
	}
	// When the last listing ended and how long it took (relistAfter).
	var lastEnd time.Time
	var lastTook time.Duration
	list := func(timeout time.Duration) error {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var err error
		began := time.Now()
		defer func() { lastEnd = time.Now(); lastTook = lastEnd.Sub(began) }()
		listed, defs, problems, err = p.list(lctx, sess, conn.bound)
		if err != nil {
			return conn.startFailure("tools/list", err, lctx.Err() != nil && ctx.Err() == nil, timeout)
		}
		problems = append(problems, conn.garbageProblems()...)
		return offer()
	}
	// Calls may come as soon as the tools are published.
	p.setSession(sess)
	defer p.setSession(nil)
	if err := list(start); err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	poll := time.NewTicker(p.opts.PinsPoll)
	defer poll.Stop()
	stamp := p.pinsStamp()
	var relist <-chan time.Time // a list_changed waiting out relistAfter
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			return fmt.Errorf("the server closed the connection: %s", conn.why(err))
		case <-changed:
			if relist != nil {
				continue // (one is waiting already)
			}
			if wait := relistAfter(lastTook) - time.Since(lastEnd); wait > 0 {
				relist = time.After(wait)
				continue
			}
			if err := list(start); err != nil {
				return err
			}
			stamp = p.pinsStamp()
		case <-relist:
			relist = nil
			if err := list(start); err != nil {
				return err
			}
			stamp = p.pinsStamp()
		case <-poll.C:
			// A held tool may have been approved (toolsrv approve, in
			// another process): look again when the pins file changed.
			if !p.holding() {
				continue
			}
			if s := p.pinsStamp(); s != stamp {
				stamp = s
				if err := offer(); err != nil {
					return err
				}
			}
		}
	}
}

// relistAfter is how long after a listing that took took the server's
// next list_changed is acted on: a second, or ten times as long as the
// listing took, so that a server announcing changes without end (one did
// so after every listing, and kept toolsrv's two cores busy) takes a tenth
// of a core at most; the notifications meanwhile are one.
func relistAfter(took time.Duration) time.Duration {
	return max(time.Second, 10*took)
}

// Bounds on one server's listing: a hostile server could otherwise have
// toolsrv hold, index and pin any number of tools of any size (300,000
// tools made "toolsrv mcp" take 24 s and 2 GB to start). A tool's name is
// bounded by the registry (128 bytes a part), its input schema too
// (registry.MaxSchemaSize, registry.MaxSchemaDepth).
const (
	// DefaultMaxTools is how many tools of one server are taken unless
	// its entry says "maxTools".
	DefaultMaxTools = 10_000
	// MaxDescriptionBytes bounds one tool's description and title.
	MaxDescriptionBytes = 64 << 10
	// MaxListingBytes bounds the names, descriptions, titles and schemas
	// of one server's tools together.
	MaxListingBytes = 64 << 20
)

// list is the server's tools as provided tools, with the problems of
// tools it cannot take. It reads the server's pages until it has the
// server's cap of tools, or MaxListingBytes of them, and then stops
// reading: the rest are dropped with one warning (logged, and kept for
// Notes). bound, when not nil, is the transport's cut of the pages to the
// cap (pageBound).
func (p *Provider) list(ctx context.Context, sess *sdk.ClientSession, bound *pageBound) ([]registry.Provided, []Definition, []registry.Problem, error) {
	maxTools := p.maxTools()
	bound.offeredMore() // (a page cut before this listing is not of it)
	out := []registry.Provided{}
	var defs []Definition
	var problems []registry.Problem
	seen, size := 0, 0
	full := func(name string) string { return p.cfg.Name + registry.ProviderSep + registry.ShownName(name) }
	tooMany := fmt.Sprintf("mcp server %s offers more than %d tools: the first %d are taken and the rest dropped (if it really has that many, raise \"maxTools\" in its entry of the mcp config)",
		p.cfg.Name, maxTools, maxTools)
	dropped := ""
	params := &sdk.ListToolsParams{}
pages:
	for {
		res, err := sess.ListTools(ctx, params)
		if err != nil {
			return nil, nil, nil, err
		}
		cut := bound.offeredMore()
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if seen == maxTools {
				dropped = tooMany
				break pages
			}
			seen++
			if err := registry.ValidProvidedName(t.Name); err != nil {
				problems = append(problems, registry.Problem{Name: full(t.Name), Field: "name", Msg: "tool " + full(t.Name) + ": " + err.Error() + " (a provided tool's name must be a valid tool name)"})
				continue
			}
			if n := len(t.Description) + len(t.Title); n > MaxDescriptionBytes {
				problems = append(problems, registry.Problem{Name: full(t.Name), Field: "description",
					Msg: fmt.Sprintf("tool %s: its description and title are %d bytes; the limit is %d (%d KiB): left out", full(t.Name), n, MaxDescriptionBytes, MaxDescriptionBytes>>10)})
				continue
			}
			pt, err := providedTool(t, p.cfg)
			if err != nil {
				problems = append(problems, registry.Problem{Name: full(t.Name), Field: "inputSchema", Msg: "tool " + full(t.Name) + ": " + err.Error()})
				continue
			}
			if size += len(t.Name) + len(t.Description) + len(t.Title) + len(pt.Args); size > MaxListingBytes {
				dropped = fmt.Sprintf("mcp server %s offers more than %d MiB of tool definitions: the first %d tools are taken and the rest dropped",
					p.cfg.Name, MaxListingBytes>>20, len(out))
				break pages
			}
			out = append(out, pt)
			defs = append(defs, definitionOf(t, pt.Args))
		}
		if cut {
			dropped = tooMany
			break
		}
		if res.NextCursor == "" {
			break
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	p.setNote(dropped)
	if dropped != "" {
		p.log.Warn(dropped)
	}
	return out, defs, problems, nil
}

// maxTools is the server's cap of tools.
func (p *Provider) maxTools() int {
	if p.cfg.MaxTools > 0 {
		return p.cfg.MaxTools
	}
	return DefaultMaxTools
}

func (p *Provider) setSession(s *sdk.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sess = s
	if s != nil {
		p.down = ""
	}
}

func (p *Provider) setNote(note string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.note = note
}

// Notes are the warnings of the server's last listing (tools dropped
// past its bounds, pins that could not be kept), for validate and ls:
// the catalog holds what was taken.
func (p *Provider) Notes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, n := range []string{p.note, p.pinNote} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
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
	sess, down, held := p.sess, p.down, p.held[name]
	p.mu.Unlock()
	if held != nil {
		// (The catalog lists it as hidden: a call that raced the listing.)
		return nil, &exec.CallError{Tool: full, Kind: exec.ErrStart, Msg: "tool " + full + " is not available: " + held.Reason()}
	}
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
