package mcp

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A question an imported server asks during a call (elicit.go) reaches
// the MCP client that made the call as MCP's multi round-trip requests
// have it (SEP-2322): the call's answer is an input-required result
// carrying the question and a request state; the client calls again with
// its answer and that state, and gets the call's result (or its next
// question). The call itself goes on meanwhile, waiting for the answer.
// The SDK turns this into elicitation/create for a client of an older
// protocol version, so every client that declared elicitation is asked
// the same way.
//
// relay wraps the handlers of the tools that run calls (call_tool, the
// hot and the native tools). A call waits for its client's answer as long
// as the call's own timeout allows; its result is kept for the client's
// return for relayKeep after it ends. The request state is a random token
// (it names the waiting call, and is known only to the client it was sent
// to); at most maxRelays calls wait at once, beyond which questions are
// declined.

// relayKeep is how long a call that ended while its client was answering
// keeps its result for the client's return; maxRelays bounds the calls
// waiting for an answer.
const (
	relayKeep = time.Minute
	maxRelays = 256
)

// relays are the served calls waiting for their client's answer, by
// request state.
type relays struct {
	mu sync.Mutex
	m  map[string]*relayCall
}

// relayCall is one served call that may ask its client (an asker).
type relayCall struct {
	id   string
	r    *relays
	caps *sdk.ElicitationCapabilities
	// q takes the imported server's questions, one at a time; done is
	// closed when the call has its result.
	q    chan *question
	done chan struct{}
	res  *sdk.CallToolResult
	err  error
	// cancel ends the call (its client gave up waiting).
	cancel context.CancelFunc

	mu      sync.Mutex
	pending *question // sent to the client, waiting for its answer
}

// question is an imported server's question, and where its answer goes.
type question struct {
	params *sdk.ElicitParams
	answer chan *sdk.ElicitResult // buffered: one answer
}

// relay runs h so that an imported server's questions during the call
// reach its client (see above).
func (s *Server) relay(h sdk.ToolHandler) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if req.Params.RequestState != "" {
			return s.relays.resume(ctx, req)
		}
		var caps *sdk.ElicitationCapabilities
		if cc := req.ClientCapabilities(); cc != nil {
			caps = cc.Elicitation
		}
		// The call outlives this request when it asks: its own timeout
		// bounds it, not the request's.
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c := &relayCall{id: rand.Text(), r: &s.relays, caps: caps, q: make(chan *question), done: make(chan struct{}), cancel: cancel}
		go func() {
			defer close(c.done)
			defer cancel()
			c.res, c.err = h(withAsker(cctx, c), req)
		}()
		return c.wait(ctx)
	}
}

// wait waits for the call's result or its next question (an
// input-required result); ctx is the client's request, whose end ends
// the call.
func (c *relayCall) wait(ctx context.Context) (*sdk.CallToolResult, error) {
	select {
	case <-c.done:
		c.r.remove(c.id)
		return c.res, c.err
	case q := <-c.q:
		c.mu.Lock()
		c.pending = q
		c.mu.Unlock()
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"question": q.params}, RequestState: c.id}, nil
	case <-ctx.Done():
		c.cancel()
		c.r.remove(c.id)
		return nil, ctx.Err()
	}
}

// resume takes the client's answer to a call's question and waits for
// the call again.
func (r *relays) resume(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	r.mu.Lock()
	c := r.m[req.Params.RequestState]
	r.mu.Unlock()
	if c == nil {
		return errorResult("toolsrv: the call this answer is for is unknown, or ended without it (a call waits for an answer as long as its timeout allows); call the tool again"), nil
	}
	c.mu.Lock()
	q := c.pending
	c.pending = nil
	c.mu.Unlock()
	if q != nil {
		a, ok := req.Params.InputResponses["question"].(*sdk.ElicitResult)
		if !ok || a == nil {
			a = &sdk.ElicitResult{Action: "cancel"}
		}
		q.answer <- a
	}
	return c.wait(ctx)
}

func (r *relays) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// add registers c as waiting for its client; false when too many are.
func (r *relays) add(c *relayCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[c.id]; ok {
		return true
	}
	if len(r.m) >= maxRelays {
		return false
	}
	if r.m == nil {
		r.m = map[string]*relayCall{}
	}
	r.m[c.id] = c
	// Once the call ends, its result waits a while for the client.
	go func() {
		<-c.done
		time.AfterFunc(relayKeep, func() { r.remove(c.id) })
	}()
	return true
}

// elicitation implements asker.
func (c *relayCall) elicitation() *sdk.ElicitationCapabilities { return c.caps }

// ask sends the question to the client with the call's next answer, and
// waits for the client's answer (or ctx: the call's end, the server
// withdrawing it).
func (c *relayCall) ask(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	if !c.r.add(c) {
		return nil, errTooManyWaiting
	}
	q := &question{params: p, answer: make(chan *sdk.ElicitResult, 1)}
	select {
	case c.q <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
