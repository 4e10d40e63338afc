package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the server's HTTP handler.
type HTTPOptions struct {
	// Tokens are the bearer tokens a request must carry one of; there
	// must be at least one.
	Tokens []Token
	// SessionTimeout closes a session no request has been open on for
	// that long (DefaultSessionTimeout when 0; negative: never).
	SessionTimeout time.Duration
	// MaxSessions caps the live sessions (DefaultMaxSessions when 0).
	MaxSessions int
	// Logger gets refusals and session ends (the server's when nil).
	Logger *slog.Logger
}

// HTTPHandler serves the server over MCP's streamable HTTP transport, on
// every path ("toolsrv mcp --listen" documents /mcp):
//
//   - A request without one of the bearer tokens gets 401 (bearer.go);
//     handlers learn who sent a request from its token (Principal).
//   - A browser's request from another site (Sec-Fetch-Site, else
//     Origin) is refused (403), and so is one to a loopback address that
//     names another host (DNS rebinding, the SDK's check): a web page must
//     not reach a server on loopback.
//   - Each request is served by the protocol revision it asks for: one
//     of 2026-07-28 and later (its MCP-Protocol-Version header, or the
//     protocol version in its _meta) by the SDK's stateless transport, in
//     which every request stands alone (a call links itself to a
//     find_tools answer by the answer's ID); the others by sessions
//     (Mcp-Session-Id), bounded in number and idle time (sessions.go).
//     server/discover lists both, as both are served.
//   - A session's event streams are resumable: each begins with the SSE
//     retry field and a priming event whose ID a client that lost the
//     stream sends back (Last-Event-ID) to get what it missed, from a
//     bounded memory of events (eventStoreBytes).
type HTTPHandler struct {
	h         http.Handler
	sessions  *sessions
	stateful  http.Handler
	stateless http.Handler
}

// eventStoreBytes bounds the events kept for resumed streams, for all
// sessions together (the oldest go first).
const eventStoreBytes = 8 << 20

// maxRequestBody bounds a request's body (the SDK's default).
const maxRequestBody = sdk.DefaultMaxRequestBodyBytes

// firstStateless is the first protocol revision served without sessions.
const firstStateless = "2026-07-28"

// HTTPHandler returns the handler serving s over HTTP. Close it when the
// server stops: it ends the sessions (and their event streams).
func (s *Server) HTTPHandler(o HTTPOptions) (*HTTPHandler, error) {
	if o.Logger == nil {
		o.Logger = s.log
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessions < 0 {
		return nil, fmt.Errorf("at most %d sessions: want 1 or more", o.MaxSessions)
	}
	b, err := newBearer(o.Tokens, o.Logger)
	if err != nil {
		return nil, err
	}
	events := sdk.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventStoreBytes)
	srv := func(*http.Request) *sdk.Server { return s.srv }
	h := &HTTPHandler{
		sessions:  newSessions(s.srv, o.MaxSessions, o.SessionTimeout, o.Logger),
		stateful:  sdk.NewStreamableHTTPHandler(srv, &sdk.StreamableHTTPOptions{Logger: o.Logger, EventStore: events, MaxRequestBodyBytes: maxRequestBody}),
		stateless: sdk.NewStreamableHTTPHandler(srv, &sdk.StreamableHTTPOptions{Logger: o.Logger, Stateless: true, MaxRequestBodyBytes: maxRequestBody}),
	}
	h.h = http.NewCrossOriginProtection().Handler(b.require(http.HandlerFunc(h.route)))
	return h, nil
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Close ends every session.
func (h *HTTPHandler) Close() { h.sessions.closeAll() }

// Sessions is how many sessions are live.
func (h *HTTPHandler) Sessions() int { return h.sessions.count() }

// route hands a request to the transport of the revision it speaks.
func (h *HTTPHandler) route(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstStateless {
		h.stateless.ServeHTTP(w, r)
		return
	}
	if id := r.Header.Get(sessionHeader); id != "" {
		h.sessions.serve(w, r, id, h.stateful)
		return
	}
	if r.Method != http.MethodPost {
		h.stateful.ServeHTTP(w, r) // (the SDK says what is wrong)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	newProtocol, initialize := peek(body)
	switch {
	case newProtocol:
		h.stateless.ServeHTTP(w, r)
	case initialize:
		h.sessions.open(w, r, h.stateful)
	default:
		h.stateful.ServeHTTP(w, r)
	}
}

// peek reads what routing needs of a request's body (one JSON-RPC
// message, or a batch): whether a message names its protocol version in
// its _meta (a revision without sessions), and whether one is initialize
// (it opens a session). What it cannot read, the SDK refuses.
func peek(body []byte) (newProtocol, initialize bool) {
	var msgs []json.RawMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &msgs) != nil {
			return false, false
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	for _, m := range msgs {
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		initialize = initialize || msg.Method == "initialize"
		var params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(msg.Params, &params) == nil {
			var v string
			if json.Unmarshal(params.Meta[sdk.MetaKeyProtocolVersion], &v) == nil && v != "" {
				newProtocol = true
			}
		}
	}
	return newProtocol, initialize
}

func mediaType(v string) string {
	t, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return t
}
