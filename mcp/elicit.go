package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/exec"
)

// Elicitation: an imported server may ask the person for something
// during a call of one of its tools (elicitation/create: a form, or a URL
// to open). toolsrv declares the capability (both modes) and passes the
// question on to the person behind the call: the MCP client toolsrv is
// serving whose call is in progress, when that client declared
// elicitation (and the mode) itself. The question reaches that client
// marked as the imported server's ([mcp server NAME asks] before its
// message), and the answer goes back as the client gave it. Otherwise the
// question is declined, and the call's result says so and why (its
// standard error: what "toolsrv call" and 9P show): the command line and
// 9P have no person to ask, a client that did not declare elicitation
// cannot be asked.
//
// What a server asks is its text, not toolsrv's: it is never logged, and
// a command shows it escaped. A question comes only during a call: one
// that comes when none is in progress, or while calls from several
// clients are, is declined (toolsrv cannot tell whose it is). One
// question at a time per server: another one meanwhile is declined. A URL
// must be https (or http on a loopback address).

// asker is the person behind a call: the MCP client toolsrv serves whose
// call it is (relay.go).
type asker interface {
	// elicitation is what the client declared of elicitation (nil:
	// nothing).
	elicitation() *sdk.ElicitationCapabilities
	// ask passes the question on and waits for the answer.
	ask(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error)
}

// errTooManyWaiting: too many calls wait for their clients' answers.
var errTooManyWaiting = errors.New("too many calls are waiting for their clients' answers")

// askerKey is the context key of a call's asker (withAsker).
type askerKey struct{}

// withAsker marks ctx as a call whose imported server's questions go to
// a.
func withAsker(ctx context.Context, a asker) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

func askerOf(ctx context.Context) asker {
	a, _ := ctx.Value(askerKey{}).(asker)
	return a
}

// inflight are a provider's calls in progress, for its server's
// questions to find their person.
type inflight struct {
	log   *slog.Logger
	mu    sync.Mutex
	calls map[*callRec]struct{}
	// asking holds the one question being passed on.
	asking chan struct{}
}

// callRec is one call in progress: who made it, and what toolsrv has to
// say about questions it declined during it.
type callRec struct {
	ctx    context.Context
	caller asker // nil: nobody to ask
	notes  []string
}

// maxNotes bounds what one call collects about declined questions.
const maxNotes = 8

func newInflight(log *slog.Logger) *inflight {
	return &inflight{log: log, calls: map[*callRec]struct{}{}, asking: make(chan struct{}, 1)}
}

// begin registers a call; ctx (ended by end) is its context, end
// unregisters it and returns its notes.
func (f *inflight) begin(ctx context.Context) (context.Context, func() []string) {
	ctx, cancel := context.WithCancel(ctx)
	rec := &callRec{ctx: ctx, caller: askerOf(ctx)}
	f.mu.Lock()
	f.calls[rec] = struct{}{}
	f.mu.Unlock()
	return ctx, func() []string {
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.calls, rec)
		return rec.notes
	}
}

// note adds a note to each of recs (f.mu held).
func note(recs []*callRec, msg string) {
	for _, r := range recs {
		if len(r.notes) < maxNotes {
			r.notes = append(r.notes, msg)
		}
	}
}

// elicit is the client's elicitation handler for server name: the
// question goes to the person behind the call in progress, or is
// declined with a note on the calls saying why.
func (f *inflight) elicit(ctx context.Context, name string, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	params := req.Params
	mode := params.Mode
	if mode == "" {
		mode = "form"
		if params.URL != "" {
			mode = "url"
		}
	}
	what := fmt.Sprintf("mcp server %s asked for input during this call (%s: %q)", name, mode, abbrev(params.Message, 300))
	decline := func(recs []*callRec, why string) (*sdk.ElicitResult, error) {
		// The question is the server's text: not logged.
		f.log.Info("declined a question of the mcp server", "mode", mode, "why", why)
		f.mu.Lock()
		note(recs, "toolsrv: "+what+"; declined: "+why)
		f.mu.Unlock()
		return &sdk.ElicitResult{Action: "decline"}, nil
	}
	f.mu.Lock()
	var recs []*callRec
	callers := map[asker]bool{}
	for r := range f.calls {
		recs = append(recs, r)
		callers[r.caller] = true
	}
	f.mu.Unlock()
	switch {
	case len(recs) == 0:
		return decline(nil, "no call of this server is in progress")
	case len(callers) > 1:
		return decline(recs, "calls from several clients are in progress, and toolsrv cannot tell whose call asks")
	}
	who := recs[0].caller
	if who == nil {
		return decline(recs, "there is no person to ask on this path (toolsrv call, 9P); "+
			"call the tool through toolsrv mcp from an MCP client that supports elicitation to answer it")
	}
	caps := who.elicitation()
	switch {
	case caps == nil:
		return decline(recs, "the MCP client that made the call did not declare elicitation, so it cannot be asked")
	case mode == "url" && caps.URL == nil:
		return decline(recs, "the MCP client that made the call did not declare URL elicitation")
	case mode == "form" && caps.Form == nil && caps.URL != nil:
		return decline(recs, "the MCP client that made the call did not declare form elicitation")
	case mode != "url" && mode != "form":
		return decline(recs, fmt.Sprintf("unknown mode %q", mode))
	}
	if mode == "url" {
		if why := badElicitURL(params.URL); why != "" {
			return decline(recs, why)
		}
	}
	select {
	case f.asking <- struct{}{}:
		defer func() { <-f.asking }()
	default:
		return decline(recs, "another question of this server is waiting for an answer")
	}
	// The question ends when the server withdraws it or the call ends.
	qctx, cancel := context.WithCancel(recs[0].ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	fwd := *params
	fwd.Meta = nil
	fwd.Mode = mode
	fwd.Message = fmt.Sprintf("[mcp server %s asks] %s", name, params.Message)
	res, err := who.ask(qctx, &fwd)
	if err != nil {
		f.mu.Lock()
		note(recs, fmt.Sprintf("toolsrv: %s; it could not be passed on to the MCP client: %v", what, err))
		f.mu.Unlock()
		return &sdk.ElicitResult{Action: "cancel"}, nil
	}
	res.Meta = nil
	return res, nil
}

// badElicitURL says why a URL-mode question's URL is not passed on, or "".
func badElicitURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return fmt.Sprintf("its URL %q is not an absolute http(s) URL", abbrev(raw, 200))
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return ""
		}
		return "its URL is plain http to another machine (only https, or http on a loopback address, is passed on)"
	}
	return fmt.Sprintf("its URL's scheme %q is not https", u.Scheme)
}

// withNotes adds a call's notes to its outcome: to the error's message
// of a failed call, to the standard error of one that succeeded.
func withNotes(r *exec.Result, err error, notes []string) (*exec.Result, error) {
	if len(notes) == 0 {
		return r, err
	}
	text := strings.Join(notes, "\n")
	if ce, ok := err.(*exec.CallError); ok {
		ce.Msg = strings.TrimSpace(ce.Msg + "\n" + text)
		return r, err
	}
	if r != nil {
		if len(r.Stderr) > 0 && r.Stderr[len(r.Stderr)-1] != '\n' {
			r.Stderr = append(r.Stderr, '\n')
		}
		r.Stderr = append(r.Stderr, text+"\n"...)
	}
	return r, err
}
