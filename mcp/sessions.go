package mcp

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of the HTTP server's sessions (HTTPOptions).
const (
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 256
)

// sessionHeader names a request's session (the SDK's own header).
const sessionHeader = "Mcp-Session-Id"

// sessions bounds the SDK's HTTP sessions (2025-11-25 and older clients),
// which otherwise live until the client ends them: one no HTTP request has
// been open on for timeout is closed, and at most max live at once. A new
// session past max closes the one idle longest; when every one is in use
// (a request, or the client's event stream, open on it), the new one is
// refused with 503. The SDK's own timeout counts POST requests only, so
// that a client listening on its event stream for half an hour would lose
// its session; here the open stream counts as use.
type sessions struct {
	srv     *sdk.Server
	max     int
	timeout time.Duration // <= 0: never
	log     *slog.Logger

	mu      sync.Mutex
	live    map[string]*session
	opening int // initialize requests under way: room kept for them
	closed  bool

	refusals throttle
}

type session struct {
	busy  int       // HTTP requests open on it
	since time.Time // idle since (when busy is 0)
	timer *time.Timer
	gen   int // which timer is current
}

func newSessions(srv *sdk.Server, max int, timeout time.Duration, log *slog.Logger) *sessions {
	return &sessions{srv: srv, max: max, timeout: timeout, log: log, live: map[string]*session{}}
}

// serve passes a request of session id on to next, keeping the session
// busy meanwhile.
func (t *sessions) serve(w http.ResponseWriter, r *http.Request, id string, next http.Handler) {
	t.enter(id)
	defer t.leave(id)
	sw := newStreamWriter(w)
	next.ServeHTTP(sw, r)
	if r.Method == http.MethodDelete && sw.status == http.StatusNoContent {
		t.forget(id) // the client ended it
	}
}

// open passes on a request that opens a session (initialize), when there
// is room for one; else it is refused with 503.
func (t *sessions) open(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if !t.reserve() {
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("503 Service Unavailable: this MCP server has %d sessions, each in use (toolsrv mcp --max-sessions); "+
			"end one (a client that is done sends DELETE) or try again later", t.max), http.StatusServiceUnavailable)
		return
	}
	sw := newStreamWriter(w)
	id := ""
	defer func() { t.opened(id) }()
	next.ServeHTTP(sw, r)
	id = sw.Header().Get(sessionHeader)
}

// reserve keeps room for a new session: past max, the session idle
// longest is closed; false when every session is in use.
func (t *sessions) reserve() bool {
	t.mu.Lock()
	out, ok := t.roomLocked()
	if !ok {
		// Sessions the SDK ended on its own free their room.
		t.mu.Unlock()
		t.reconcile()
		t.mu.Lock()
		var more []string
		more, ok = t.roomLocked()
		out = append(out, more...)
	}
	if ok {
		t.opening++
	}
	t.mu.Unlock()
	for _, id := range out {
		t.log.Info("closed the MCP session idle longest to make room for a new one", "session", id, "max", t.max)
		t.close(id)
	}
	if !ok {
		if held, say := t.refusals.pass(); say {
			t.log.Warn("refused a new MCP session: every session is in use", "max", t.max, "refusedMeanwhile", held)
		}
	}
	return ok
}

// roomLocked drops the sessions idle longest until there is room for one
// more (they are to be closed); false when there is not, every session
// being in use.
func (t *sessions) roomLocked() (out []string, ok bool) {
	for len(t.live)+t.opening >= t.max {
		id := t.idlestLocked()
		if id == "" {
			return out, false
		}
		t.dropLocked(id)
		out = append(out, id)
	}
	return out, true
}

// opened ends an initialize request: its session (id, "" when none was
// made) is live from now, if the SDK kept it.
func (t *sessions) opened(id string) {
	alive := id != "" && t.find(id) != nil
	t.mu.Lock()
	t.opening--
	if alive && !t.closed && t.live[id] == nil {
		s := &session{}
		t.live[id] = s
		t.idleLocked(id, s)
	}
	shut := alive && t.closed
	t.mu.Unlock()
	if shut {
		t.close(id)
	}
}

func (t *sessions) enter(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.live[id]; s != nil {
		s.busy++
		s.gen++
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
	}
}

func (t *sessions) leave(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.live[id]; s != nil {
		if s.busy--; s.busy == 0 {
			t.idleLocked(id, s)
		}
	}
}

// idleLocked marks s idle from now, and closes it after the timeout.
func (t *sessions) idleLocked(id string, s *session) {
	s.since = time.Now()
	s.gen++
	if t.timeout <= 0 {
		return
	}
	gen := s.gen
	s.timer = time.AfterFunc(t.timeout, func() { t.expire(id, gen) })
}

// expire closes session id if it has been idle since timer gen was set.
func (t *sessions) expire(id string, gen int) {
	t.mu.Lock()
	s := t.live[id]
	if s == nil || s.busy > 0 || s.gen != gen {
		t.mu.Unlock()
		return
	}
	t.dropLocked(id)
	t.mu.Unlock()
	t.log.Info("closed an idle MCP session", "session", id, "idle", t.timeout)
	t.close(id)
}

// idlestLocked is the session idle longest, "" when all are in use.
func (t *sessions) idlestLocked() string {
	best := ""
	var since time.Time
	for id, s := range t.live {
		if s.busy == 0 && (best == "" || s.since.Before(since)) {
			best, since = id, s.since
		}
	}
	return best
}

func (t *sessions) dropLocked(id string) {
	if s := t.live[id]; s != nil {
		if s.timer != nil {
			s.timer.Stop()
		}
		delete(t.live, id)
	}
}

func (t *sessions) forget(id string) {
	t.mu.Lock()
	t.dropLocked(id)
	t.mu.Unlock()
}

// reconcile forgets the sessions the SDK no longer has.
func (t *sessions) reconcile() {
	have := map[string]bool{}
	for ss := range t.srv.Sessions() {
		have[ss.ID()] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.live {
		if !have[id] {
			t.dropLocked(id)
		}
	}
}

func (t *sessions) find(id string) *sdk.ServerSession {
	for ss := range t.srv.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// close ends the SDK's session id. Closing waits for the session's
// running handlers (a call whose client went away), so it is not waited
// for.
func (t *sessions) close(id string) {
	if ss := t.find(id); ss != nil {
		go ss.Close()
	}
}

// count is how many sessions are live.
func (t *sessions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// closeAll ends every session, and any opened from now on.
func (t *sessions) closeAll() {
	t.mu.Lock()
	t.closed = true
	ids := make([]string, 0, len(t.live))
	for id := range t.live {
		ids = append(ids, id)
		t.dropLocked(id)
	}
	t.mu.Unlock()
	for _, id := range ids {
		t.close(id)
	}
}

// streamWriter passes a response on, noting its status, and starts an
// event stream (text/event-stream) with the SSE retry field: how long a
// client whose stream broke waits before it reconnects (and, with the
// Last-Event-ID of the stream's priming event, gets what it missed).
type streamWriter struct {
	http.ResponseWriter
	status int
}

// streamRetry is the retry field of event streams.
const streamRetry = time.Second

func newStreamWriter(w http.ResponseWriter) *streamWriter { return &streamWriter{ResponseWriter: w} }

func (w *streamWriter) WriteHeader(code int) {
	if w.status != 0 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.status = code
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK && mediaType(w.Header().Get("Content-Type")) == "text/event-stream" {
		// A block of the retry field alone dispatches no event.
		fmt.Fprintf(w.ResponseWriter, "retry: %s\n\n", strconv.FormatInt(streamRetry.Milliseconds(), 10))
	}
}

func (w *streamWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer (to
// flush each event).
func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *streamWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}
