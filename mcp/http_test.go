package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/usage"
)

const (
	ownerToken = "owner-token-0123456789abcdef"
	ciToken    = "ci-token-0123456789abcdefghij"
)

// httpServer is toolsrv's MCP server over HTTP for a test: an engine over
// two small tools, the handler (o, with the owner's token when o has
// none) on a loopback test server.
type httpServer struct {
	srv *Server
	h   *HTTPHandler
	url string
	log *syncBuffer
}

func newHTTPServer(t *testing.T, o HTTPOptions, st usage.Store) *httpServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"say_hello": `{"description": "Say hello to someone by name", "keywords": ["greet", "hello", "greeting"], "cmd": "cat",
			"args": {"type": "object", "properties": {"name": {"type": "string"}}}}`,
		"disk_free": `{"description": "Show how much disk space is free", "keywords": ["disk", "space", "df"], "cmd": "df -h ."}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self, _ := os.Executable()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, NoCache: true, Logger: quiet(), Usage: st,
		Runner: &exec.Options{SelfExe: self, Logger: quiet()}})
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	s := NewServer(ServerOptions{Engine: eng, Logger: quiet(), Call: exec.CallContext{WorkDir: t.TempDir()}})
	s.MCP().AddTool(&sdk.Tool{Name: "whoami", Description: "who sent this", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "principal=" + Principal(req)}}}, nil
		})
	if o.Tokens == nil {
		o.Tokens = []Token{{Secret: ownerToken, Principal: OwnerPrincipal}}
	}
	o.Logger = slog.New(slog.NewTextHandler(log, nil))
	h, err := s.HTTPHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		eng.Close()
	})
	return &httpServer{srv: s, h: h, url: ts.URL + "/mcp", log: log}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// httpAnswer is a response: its status, headers and body.
type httpAnswer struct {
	status int
	header http.Header
	body   string
}

// message is the last JSON-RPC message of the answer (its body, or its
// last SSE data line).
func (a httpAnswer) message(t *testing.T) map[string]any {
	t.Helper()
	text := strings.TrimSpace(a.body)
	if !strings.HasPrefix(text, "{") {
		text = ""
		for _, line := range strings.Split(a.body, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(d, "{") {
				text = d
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("no JSON-RPC message in the answer (status %d): %q", a.status, a.body)
	}
	return m
}

// post sends one request; header holds the extra headers (Authorization
// among them when the test gives one).
func post(t *testing.T, ctx context.Context, url string, header map[string]string, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func bearerHeader(token string, more ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + token}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// newProtocolRequest is a request of the 2026-07-28 revision: no session,
// its version in its _meta and in MCP-Protocol-Version.
func newProtocolRequest(id int, method string, params map[string]any) string {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		sdk.MetaKeyProtocolVersion:                   "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(b)
}

// newProtocolHeader are the headers of a request of 2026-07-28: the
// revision, the method and (tools/call) the tool's name.
func newProtocolHeader(token, method, name string) map[string]string {
	h := bearerHeader(token, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method)
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// openSession initializes a 2025-11-25 session and returns its ID.
func openSession(t *testing.T, ctx context.Context, url, token string) string {
	t.Helper()
	a := post(t, ctx, url, bearerHeader(token), initialize)
	id := a.header.Get(sessionHeader)
	if a.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q: %s", a.status, id, a.body)
	}
	if a := post(t, ctx, url, bearerHeader(token, sessionHeader, id, "Mcp-Protocol-Version", "2025-11-25"),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d: %s", a.status, a.body)
	}
	return id
}

// listen opens session id's event stream (GET), which stays open until
// the returned function is called.
func listen(t *testing.T, ctx context.Context, url, token, id string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(sessionHeader, id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET (event stream) of session %s: status %d", id, resp.StatusCode)
	}
	go io.Copy(io.Discard, resp.Body)
	return func() { cancel(); resp.Body.Close() }
}

// liveSDKSessions counts the SDK's sessions that have an ID (those of
// HTTP clients of 2025-11-25 and older).
func liveSDKSessions(s *Server) int {
	n := 0
	for ss := range s.MCP().Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// bearerTransport adds the token to each request of an SDK client.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func sdkClient(t *testing.T, ctx context.Context, url, token, version string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting (%s): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Without one of its bearer tokens the server answers 401 (with
// WWW-Authenticate: Bearer), and logs the refusal without the request's
// body; with one, initialize and tools/list work in either revision, and
// the handlers learn whose token it was. A session opened with one token
// is not served to another.
func TestHTTPBearer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	hs := newHTTPServer(t, HTTPOptions{Tokens: []Token{{Secret: ownerToken, Principal: OwnerPrincipal}, {Secret: ciToken, Principal: "ci"}}}, nil)
	const marker = "body-that-must-not-be-logged"
	body := strings.Replace(initialize, `"test"`, `"`+marker+`"`, 1)
	for _, c := range []struct {
		name   string
		header map[string]string
	}{
		{"no Authorization header", nil},
		{"another scheme", map[string]string{"Authorization": "Basic " + ownerToken}},
		{"a wrong token", bearerHeader("wrong-token-0123456789abcdef")},
		{"a token's prefix", bearerHeader(ownerToken[:len(ownerToken)-1])},
		{"an empty bearer token", map[string]string{"Authorization": "Bearer "}},
		{"a wrong token, new revision", bearerHeader("wrong-token-0123456789abcdef", "Mcp-Protocol-Version", "2026-07-28")},
	} {
		a := post(t, ctx, hs.url, c.header, body)
		if a.status != http.StatusUnauthorized || !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") ||
			!strings.Contains(a.body, "Authorization: Bearer") {
			t.Errorf("%s: status %d, WWW-Authenticate %q, body %q; want 401 with a Bearer challenge", c.name, a.status, a.header.Get("WWW-Authenticate"), a.body)
		}
	}
	if hs.h.Sessions() != 0 || liveSDKSessions(hs.srv) != 0 {
		t.Errorf("refused requests opened sessions: %d, the SDK's %d", hs.h.Sessions(), liveSDKSessions(hs.srv))
	}
	if log := hs.log.String(); !strings.Contains(log, "refused an MCP request: no Authorization header") || strings.Contains(log, marker) ||
		strings.Contains(log, ownerToken[:10]) || strings.Contains(log, "wrong-token") {
		t.Errorf("the refusals' log: want the first logged, never a body or a token:\n%s", log)
	}

	for _, c := range []struct {
		token, version, principal string
	}{
		{ownerToken, "2025-11-25", OwnerPrincipal},
		{ownerToken, "2026-07-28", OwnerPrincipal},
		{ciToken, "2025-11-25", "ci"},
		{ciToken, "2026-07-28", "ci"},
	} {
		cs := sdkClient(t, ctx, hs.url, c.token, c.version)
		if got := cs.InitializeResult().ProtocolVersion; got != c.version {
			t.Errorf("negotiated %s, want %s", got, c.version)
		}
		if sid := cs.ID(); (sid == "") != (c.version >= firstStateless) {
			t.Errorf("%s: session ID %q: want one exactly for revisions before %s", c.version, sid, firstStateless)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("%s: tools/list: %v", c.version, err)
		}
		names := map[string]bool{}
		for _, tool := range res.Tools {
			names[tool.Name] = true
		}
		if !names[FindTools] || !names[CallTool] {
			t.Errorf("%s: tools/list: %v", c.version, names)
		}
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil || text(r) != "principal="+c.principal {
			t.Errorf("%s with %s's token: whoami = %v, %v; want principal=%s", c.version, c.principal, text(r), err, c.principal)
		}
	}

	// A session is its opener's: the other token's holder cannot use it.
	id := openSession(t, ctx, hs.url, ownerToken)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if a := post(t, ctx, hs.url, bearerHeader(ciToken, sessionHeader, id, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusForbidden {
		t.Errorf("the owner's session with ci's token: status %d, want 403", a.status)
	}
	if a := post(t, ctx, hs.url, bearerHeader(ownerToken, sessionHeader, id, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusOK {
		t.Errorf("the owner's session with the owner's token: status %d, want 200", a.status)
	}

	// No token, or a weak one, is not a handler.
	for _, tokens := range [][]Token{nil, {{Secret: "short", Principal: "x"}}, {{Secret: "has spaces in it, and more", Principal: "x"}}, {{Secret: ownerToken}}} {
		if _, err := hs.srv.HTTPHandler(HTTPOptions{Tokens: tokens}); err == nil {
			t.Errorf("HTTPHandler with tokens %+v: no error", tokens)
		}
	}
}

// One endpoint serves both revisions, each request by the one it names:
// 2025-11-25 with sessions (whose event streams start with the retry
// field and a priming event, and can be resumed), 2026-07-28 without
// (server/discover lists both); without a session a call cites the
// find_tools answer it follows by its ID, and the usage history links the
// two.
// A request without the token that declares a body it never sends is
// answered 401 and its connection closed: it is not held open waiting for
// the body (the third hostile pass held 500 such connections for as long
// as it liked), nor kept for another request.
func TestHTTPRefusedConnectionCloses(t *testing.T) {
	hs := newHTTPServer(t, HTTPOptions{}, nil)
	u, err := url.Parse(hs.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, header string }{
		{"no token", ""},
		{"a wrong token", "Authorization: Bearer wrong-token-0123456789abcdef\r\n"},
	} {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: 100000\r\n\r\n{\"jsonrpc\"", u.Host, c.header)
		// The bound of a test that would otherwise hang, not a measure.
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Errorf("%s: the connection stayed open after the answer (%v); read %q", c.name, err, got)
			continue
		}
		if !bytes.HasPrefix(got, []byte("HTTP/1.1 401")) {
			t.Errorf("%s: answer %q, want 401", c.name, got)
		}
	}
}

func TestHTTPProtocols(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	st, _, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(t, HTTPOptions{}, st)

	// 2025-11-25: a session; its event stream primed for resumption.
	a := post(t, ctx, hs.url, bearerHeader(ownerToken), initialize)
	sid := a.header.Get(sessionHeader)
	if a.status != http.StatusOK || sid == "" || a.message(t)["result"] == nil {
		t.Fatalf("initialize: status %d, session %q: %s", a.status, sid, a.body)
	}
	events := sseEvents(a.body)
	if len(events) < 2 || events[0]["retry"] == "" || events[1]["id"] == "" || events[1]["data"] != "" {
		t.Fatalf("initialize's event stream does not begin with the retry field and a priming event (an id, empty data): %q", a.body)
	}
	// A client that lost the stream after the priming event gets the rest.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.url, nil)
	for k, v := range bearerHeader(ownerToken, sessionHeader, sid, "Mcp-Protocol-Version", "2025-11-25", "Accept", "text/event-stream", "Last-Event-ID", events[1]["id"]) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	replay, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(replay), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("resuming after the priming event: status %d: %q", resp.StatusCode, replay)
	}

	// 2026-07-28: no session.
	a = post(t, ctx, hs.url, newProtocolHeader(ownerToken, "server/discover", ""), newProtocolRequest(2, "server/discover", nil))
	var disc struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	b, _ := json.Marshal(a.message(t))
	json.Unmarshal(b, &disc)
	if a.status != http.StatusOK || a.header.Get(sessionHeader) != "" || !contains(disc.Result.SupportedVersions, "2026-07-28") || !contains(disc.Result.SupportedVersions, "2025-11-25") {
		t.Errorf("server/discover: status %d, session %q: %s", a.status, a.header.Get(sessionHeader), a.body)
	}
	// Asked with a version it does not know, it lists what it serves,
	// 2026-07-28 among them (which it then serves, below).
	unknown := strings.ReplaceAll(newProtocolRequest(7, "server/discover", nil), `"2026-07-28"`, `"2099-01-01"`)
	h := newProtocolHeader(ownerToken, "server/discover", "")
	h["Mcp-Protocol-Version"] = "2099-01-01"
	a = post(t, ctx, hs.url, h, unknown)
	var refused struct {
		Error struct {
			Code int `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	b, _ = json.Marshal(a.message(t))
	json.Unmarshal(b, &refused)
	if a.status != http.StatusBadRequest || refused.Error.Code != sdk.CodeUnsupportedProtocolVersion || !contains(refused.Error.Data.Supported, "2026-07-28") {
		t.Errorf("server/discover with an unknown version: status %d: %s", a.status, a.body)
	}
	a = post(t, ctx, hs.url, newProtocolHeader(ownerToken, "tools/list", ""), newProtocolRequest(3, "tools/list", nil))
	if a.status != http.StatusOK || a.header.Get(sessionHeader) != "" || !strings.Contains(a.body, `"find_tools"`) {
		t.Errorf("tools/list in 2026-07-28: status %d, session %q: %s", a.status, a.header.Get(sessionHeader), a.body)
	}
	// The header alone says which revision: a request of 2026-07-28
	// without its _meta is refused as that revision refuses it (400), not
	// taken as a session's.
	if a := post(t, ctx, hs.url, newProtocolHeader(ownerToken, "tools/list", ""), `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}`); a.status != http.StatusBadRequest {
		t.Errorf("2026-07-28 without _meta: status %d: %s", a.status, a.body)
	}

	// A call without a session cites its answer by ID.
	a = post(t, ctx, hs.url, newProtocolHeader(ownerToken, "tools/call", FindTools),
		newProtocolRequest(5, "tools/call", map[string]any{"name": FindTools, "arguments": map[string]any{"query": "greet alice with a hello"}}))
	var found struct {
		Result struct {
			StructuredContent Found `json:"structuredContent"`
		} `json:"result"`
	}
	b, _ = json.Marshal(a.message(t))
	json.Unmarshal(b, &found)
	ans := found.Result.StructuredContent
	if ans.ID == "" || len(ans.Tools) == 0 || ans.Tools[0].Name != "say_hello" {
		t.Fatalf("find_tools without a session: %s", a.body)
	}
	a = post(t, ctx, hs.url, newProtocolHeader(ownerToken, "tools/call", CallTool),
		newProtocolRequest(6, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"tool": "say_hello", "answer": ans.ID, "arguments": map[string]any{"name": "alice"}}}))
	if !strings.Contains(a.body, `alice`) || strings.Contains(a.body, `"isError":true`) {
		t.Fatalf("call_tool without a session: %s", a.body)
	}
	waitFor(t, ctx, "the call recorded with the request of the answer it cited", func() bool {
		entries, _, err := st.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Key.Tool == "say_hello" && e.Text == "greet alice with a hello" {
				return true
			}
		}
		return false
	})
}

// sseEvents are the events of an event stream: each event's fields
// (retry, id, event, data).
func sseEvents(body string) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]string{}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && k != "" {
			cur[k] = strings.TrimPrefix(v, " ")
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Sessions are capped: 5,000 more initialize requests than the cap each
// either push the session idle longest out or are refused (503), the
// live sessions stay within the cap, and a session in use (its client
// listening on its event stream) is never the one pushed out. When every
// session is in use, a new one is refused until one is free.
func TestHTTPSessionsCapped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	hs := newHTTPServer(t, HTTPOptions{}, nil)
	first := openSession(t, ctx, hs.url, ownerToken)
	listening := openSession(t, ctx, hs.url, ownerToken)
	defer listen(t, ctx, hs.url, ownerToken, listening)()
	counts := map[int]int{}
	for i := 0; i < DefaultMaxSessions+5000; i++ {
		a := post(t, ctx, hs.url, bearerHeader(ownerToken), initialize)
		counts[a.status]++
		if n := hs.h.Sessions(); n > DefaultMaxSessions {
			t.Fatalf("after %d initialize requests: %d live sessions, over the cap of %d", i+1, n, DefaultMaxSessions)
		}
	}
	if counts[http.StatusOK]+counts[http.StatusServiceUnavailable] != DefaultMaxSessions+5000 {
		t.Errorf("answers to initialize: %v; want 200 (the idlest pushed out) or 503 only", counts)
	}
	waitFor(t, ctx, "the pushed out sessions closed", func() bool { return liveSDKSessions(hs.srv) <= DefaultMaxSessions })
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if a := post(t, ctx, hs.url, bearerHeader(ownerToken, sessionHeader, first, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusNotFound {
		t.Errorf("the session idle longest: status %d, want 404 (pushed out)", a.status)
	}
	if a := post(t, ctx, hs.url, bearerHeader(ownerToken, sessionHeader, listening, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusOK {
		t.Errorf("the session in use: status %d, want 200 (kept)", a.status)
	}

	// Two sessions at most, both in use: the third is refused.
	small := newHTTPServer(t, HTTPOptions{MaxSessions: 2}, nil)
	a1, a2 := openSession(t, ctx, small.url, ownerToken), openSession(t, ctx, small.url, ownerToken)
	stop1 := listen(t, ctx, small.url, ownerToken, a1)
	stop2 := listen(t, ctx, small.url, ownerToken, a2)
	defer stop2()
	a := post(t, ctx, small.url, bearerHeader(ownerToken), initialize)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "--max-sessions") {
		t.Errorf("a new session while both are in use: status %d, Retry-After %q: %s", a.status, a.header.Get("Retry-After"), a.body)
	}
	stop1()
	waitFor(t, ctx, "the first session idle", func() bool {
		return post(t, ctx, small.url, bearerHeader(ownerToken), initialize).status == http.StatusOK
	})
	if a := post(t, ctx, small.url, bearerHeader(ownerToken, sessionHeader, a2, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusOK {
		t.Errorf("the session still in use: status %d, want 200", a.status)
	}
}

// A session no request has been open on for the timeout ends; one whose
// client listens on its event stream is in use, and stays.
func TestHTTPSessionTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	const timeout = 300 * time.Millisecond
	hs := newHTTPServer(t, HTTPOptions{SessionTimeout: timeout}, nil)
	idle := openSession(t, ctx, hs.url, ownerToken)
	listening := openSession(t, ctx, hs.url, ownerToken)
	stop := listen(t, ctx, hs.url, ownerToken, listening)
	opened := time.Now()
	waitFor(t, ctx, "the idle session ended", func() bool { return hs.h.Sessions() == 1 && liveSDKSessions(hs.srv) == 1 })
	for time.Since(opened) < 3*timeout {
		time.Sleep(timeout)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if a := post(t, ctx, hs.url, bearerHeader(ownerToken, sessionHeader, idle, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusNotFound {
		t.Errorf("the idle session after the timeout: status %d, want 404", a.status)
	}
	if a := post(t, ctx, hs.url, bearerHeader(ownerToken, sessionHeader, listening, "Mcp-Protocol-Version", "2025-11-25"), list); a.status != http.StatusOK {
		t.Errorf("the listening session, %v after it opened: status %d, want 200", time.Since(opened).Round(time.Millisecond), a.status)
	}
	stop()
	waitFor(t, ctx, "the session ended once its client stopped listening", func() bool { return hs.h.Sessions() == 0 && liveSDKSessions(hs.srv) == 0 })
}

func TestPeek(t *testing.T) {
	for _, c := range []struct {
		body                    string
		newProtocol, initialize bool
	}{
		{initialize, false, true},
		{`[` + initialize + `]`, false, true},
		{newProtocolRequest(1, "tools/list", nil), true, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"` + sdk.MetaKeyProtocolVersion + `":""}}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`, false, false},
		{`not json`, false, false},
		{``, false, false},
	} {
		if n, i := peek([]byte(c.body)); n != c.newProtocol || i != c.initialize {
			t.Errorf("peek(%s) = %v, %v; want %v, %v", c.body, n, i, c.newProtocol, c.initialize)
		}
	}
}
