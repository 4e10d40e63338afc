package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// conn is one connection to a server: the session and, for a stdio
// server, its process.
type conn struct {
	name string
	sess *sdk.ClientSession
	bad  *garbage
	// bound cuts a stdio server's pages of tools/list to its cap.
	bound *pageBound
	log   *slog.Logger
	// hint is what to do when a stdio server that downloads its package
	// fails to start (ServerConfig.NetworkHint).
	hint string

	mu    sync.Mutex
	proc  *exec.Process
	grace time.Duration
}

// connect starts (stdio) or reaches (http, sse) the server and does the
// initialize handshake within the start timeout. changed is told about
// notifications/tools/list_changed.
func (p *Provider) connect(ctx context.Context, changed chan<- struct{}) (*conn, error) {
	c := &conn{name: p.cfg.Name, bad: &garbage{}, bound: &pageBound{max: p.maxTools()}, log: p.log, grace: p.opts.StopGrace, hint: p.cfg.NetworkHint()}
	client := sdk.NewClient(&sdk.Implementation{Name: "toolsrv", Version: p.opts.Version}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		// No roots, no sampling; elicitation in both modes, passed on to
		// the person behind the call (elicit.go).
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{
			Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return p.calls.elicit(ctx, p.cfg.Name, req)
		},
	})
	var t sdk.Transport
	switch p.cfg.Transport {
	case Stdio:
		if p.opts.Runner == nil {
			return nil, errors.New("no runner to start stdio servers with (a bug: ProviderOptions.Runner is not set)")
		}
		t = &stdioTransport{p: p, c: c}
	case HTTP:
		t = &sdk.StreamableClientTransport{Endpoint: p.cfg.URL, HTTPClient: remoteClient(p.cfg.Headers), MaxRetries: streamRetries,
			OAuthHandler: p.oauthHandler()}
	case SSE:
		t = &sdk.SSEClientTransport{Endpoint: p.cfg.URL, HTTPClient: remoteClient(p.cfg.Headers)}
	default:
		return nil, fmt.Errorf("unknown transport %q", p.cfg.Transport)
	}
	start := p.cfg.StartTimeout
	if start <= 0 {
		start = p.opts.StartTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, start)
	defer cancel()
	sess, err := client.Connect(cctx, t, nil)
	if err != nil {
		// Said before the process is stopped: how it ended on its own.
		err = c.startFailure("initialize", err, cctx.Err() != nil && ctx.Err() == nil, start)
		c.close()
		return nil, err
	}
	c.sess = sess
	return c, nil
}

// close ends the session and, for a stdio server, the process.
func (c *conn) close() {
	if c.sess != nil {
		done := make(chan struct{})
		go func() { c.sess.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(c.grace + 3*time.Second):
		}
	}
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc != nil {
		proc.Stop(c.grace)
	}
}

// why is err with what else is known: how the process ended, the end of
// its standard error, what it wrote on standard output that was not JSON.
func (c *conn) why(err error) string {
	var b strings.Builder
	if err == nil {
		err = errors.New("the connection ended")
	}
	b.WriteString(err.Error())
	if how := c.ended(200 * time.Millisecond); how != "" { // it may be on its way out
		fmt.Fprintf(&b, "; the server process %s", how)
	}
	c.context(&b)
	return b.String()
}

// startFailure says what the server was doing when it failed to start:
// op (initialize, tools/list) got no reply within d (stalled), or the
// process ended before answering it, or op failed; then the end of its
// standard error, its non-JSON output, and for a server that downloads
// its package without network, what to change. Call it before the
// process is stopped.
func (c *conn) startFailure(op string, err error, stalled bool, d time.Duration) error {
	var b strings.Builder
	how := ""
	if !stalled {
		// The connection ended: the process is likely on its way out.
		how = c.ended(2 * time.Second)
	}
	switch {
	case stalled:
		fmt.Fprintf(&b, "no reply to %s after %s (set \"startTimeout\" in its entry if it needs longer)", op, d.Round(time.Millisecond))
		if c.process() != nil {
			b.WriteString("; stopped")
		}
	case how != "":
		fmt.Fprintf(&b, "%s before answering %s", how, op)
	default:
		fmt.Fprintf(&b, "%s failed: %v", op, err)
	}
	c.context(&b)
	if c.hint != "" && op == "initialize" {
		b.WriteString("; ")
		b.WriteString(c.hint)
	}
	return errors.New(b.String())
}

// context adds the end of the process's standard error and its non-JSON
// output to b.
func (c *conn) context(b *strings.Builder) {
	if proc := c.process(); proc != nil {
		if tail := lastLines(proc.Stderr(), 6, 1500); tail != "" {
			fmt.Fprintf(b, "; its standard error ends: %s", tail)
		}
	}
	if c.bad.wasTooLong() {
		// The server then dies of the closed pipe: its own words (EPIPE)
		// do not say why.
		fmt.Fprintf(b, "; it sent a message of over %d MiB on standard output, which toolsrv does not read: the connection was closed (a list of tools that long must come in pages, with nextCursor)", maxLine>>20)
	}
	if n, first := c.bad.get(); n > 0 {
		fmt.Fprintf(b, "; it wrote %d line(s) on standard output that are not JSON-RPC (first: %q): an MCP server must write only protocol messages there", n, first)
	}
}

func (c *conn) process() *exec.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// ended says how the process ended on its own ("exited with status 1",
// "was killed by signal killed"), waiting for it up to wait; "" while it
// runs, or for a remote server.
func (c *conn) ended(wait time.Duration) string {
	proc := c.process()
	if proc == nil {
		return ""
	}
	select {
	case <-proc.Done():
	case <-time.After(wait):
		return ""
	}
	e := proc.Err()
	switch {
	case e == nil:
		return "ended"
	case strings.HasPrefix(e.Error(), "exit status "):
		return "exited with status " + strings.TrimPrefix(e.Error(), "exit status ")
	case strings.HasPrefix(e.Error(), "killed by signal "):
		return "was " + e.Error()
	default:
		return "ended: " + e.Error()
	}
}

// garbageProblems reports non-JSON output of a server that works anyway.
func (c *conn) garbageProblems() []registry.Problem {
	n, first := c.bad.get()
	if n == 0 {
		return nil
	}
	return []registry.Problem{{Msg: fmt.Sprintf("the server wrote %d line(s) on standard output that are not JSON-RPC (first: %q); they were dropped. An MCP server must write only protocol messages on standard output (logs go to standard error)", n, first)}}
}

// lastLines is the last n lines of b, at most max bytes, on one line.
func lastLines(b []byte, n, max int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " | ")
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return s
}

// stdioTransport starts the server through the sandbox runner and talks
// to it over its standard input and output.
type stdioTransport struct {
	p *Provider
	c *conn
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	cfg := t.p.cfg
	env := make([]string, 0, len(cfg.Env))
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	argv := append([]string{cfg.Command}, cfg.Args...)
	proc, err := t.p.opts.Runner.Start(ctx, exec.ProcessSpec{
		Name: "mcp server " + cfg.Name, Argv: argv, Env: env, Dir: cfg.Dir,
		Network: cfg.Sandbox.Network, Read: append(packagePaths(argv), cfg.Sandbox.Read...), Write: cfg.Sandbox.Write,
		Unconfined: cfg.Unsandboxed, Description: "an MCP server configured with \"sandbox\": false",
		Stderr: &logWriter{log: t.p.log},
	})
	if err != nil {
		return nil, err
	}
	t.c.mu.Lock()
	t.c.proc = proc
	t.c.mu.Unlock()
	if proc.Unsandboxed() {
		t.p.log.Warn("mcp server runs UNSANDBOXED")
	}
	conn, err := (&sdk.IOTransport{Reader: &jsonLines{r: bufio.NewReaderSize(proc.Stdout, 64<<10), c: proc.Stdout, bad: t.c.bad, bound: t.c.bound}, Writer: proc.Stdin}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	// A server that answers nothing to the 2026-07-28 revision's first
	// request is still reached (discover.go).
	return newDiscoverFallback(conn, discoverWait), nil
}

// packagePaths are the paths a stdio server may read because its command
// line names them: for the command and every argument that is an
// existing file by absolute path, the node_modules directory that holds
// it (its dependencies are beside it), else its directory (a script's
// modules).
func packagePaths(argv []string) []string {
	var out []string
	for i, a := range argv {
		if !filepath.IsAbs(a) {
			continue
		}
		real, err := filepath.EvalSymlinks(a)
		if err != nil {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if k := strings.LastIndex(real, "/node_modules/"); k >= 0 {
			out = append(out, real[:k+len("/node_modules")])
		} else if i > 0 {
			out = append(out, filepath.Dir(real))
		}
		// the command itself is already executable (exec.ProcessSpec)
	}
	return out
}

// jsonLines passes on the lines of a server's standard output that are
// JSON, and counts (and drops) the others: a server that prints a banner
// on standard output still works, and the garbage is reported.
type jsonLines struct {
	r     *bufio.Reader
	c     io.Closer
	bad   *garbage
	bound *pageBound
	rest  []byte
}

// maxLine bounds one message (as the SDK's own default).
const maxLine = sdk.DefaultMaxLineLength

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.rest) == 0 {
		line, err := j.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(buf) <= maxLine {
				line, err = j.r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			if len(buf) > maxLine {
				j.bad.tooLong()
				return 0, fmt.Errorf("a message of over %d bytes on standard output", maxLine)
			}
			line = buf
		}
		if len(line) > 0 {
			t := bytes.TrimSpace(line)
			switch {
			case len(t) == 0:
			case (t[0] == '{' || t[0] == '[') && json.Valid(t):
				j.rest = append(append(j.rest[:0], j.bound.trim(t)...), '\n')
			default:
				j.bad.add(t)
			}
		}
		if err != nil && len(j.rest) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, j.rest)
	j.rest = j.rest[n:]
	return n, nil
}

func (j *jsonLines) Close() error { return j.c.Close() }

// garbage counts non-JSON lines and keeps the first.
type garbage struct {
	mu    sync.Mutex
	n     int
	first string
	// oversize: a message past maxLine ended the connection.
	oversize bool
}

func (g *garbage) tooLong() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.oversize = true
}

func (g *garbage) wasTooLong() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.oversize
}

func (g *garbage) add(line []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.first = string(line[:min(len(line), 200)])
	}
	g.n++
}

func (g *garbage) get() (int, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, g.first
}

// logWriter logs a server's standard error at Debug, line by line.
type logWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(w.buf[:i])); line != "" {
			w.log.Debug("mcp server stderr", "line", line)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 8<<10 {
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// streamRetries bounds the resumption of an http server's stream that
// broke (the SDK's MaxRetries): each reconnection is a GET with the last
// event's ID as Last-Event-ID, after the server's "retry" delay (else a
// backoff from 1 s growing ×1.5 to 30 s, with jitter); once
// streamRetries+1 reconnections in a row bring no new event, the
// connection is given up (and started again as a dead server is). A
// stream that brings new events between breaks is resumed for as long as
// the request lasts: a call's timeout, the start timeout of initialize
// and tools/list.
const streamRetries = 5

// remoteClient is the HTTP client of a remote server's transport: it adds
// the entry's "headers" (such as Authorization) to every request and
// follows no redirect to another origin, so that neither those headers
// nor an OAuth access token reach anyone but the server.
func remoteClient(h map[string]string) *http.Client {
	var rt http.RoundTripper = http.DefaultTransport
	if len(h) > 0 {
		rt = headerTransport{h: h, rt: rt}
	}
	return &http.Client{Transport: boundedTransport{rt: rt}, CheckRedirect: sameOriginRedirect}
}

// maxAnswer bounds one answer of a remote server that is not an event
// stream (an event stream is bounded event by event by the SDK), as
// maxLine bounds a stdio server's messages: the SDK reads a JSON answer
// whole, and a hostile server could send gigabytes of one.
const maxAnswer = maxLine

// boundedTransport cuts the answers that are not event streams at
// maxAnswer: reading past it is an error.
type boundedTransport struct{ rt http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &boundedBody{rc: resp.Body, left: maxAnswer}
	}
	return resp, nil
}

// boundedBody is an answer's body that fails past its bound.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more tells a body of exactly the bound from a longer one
	}
	n, err := b.rc.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n - 1, errTooLong
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

var errTooLong = fmt.Errorf("the server's answer is over %d MiB: not read further", maxAnswer>>20)

// sameOriginRedirect follows redirects within the first request's origin
// only (scheme, host and port).
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; origin(req.URL) != origin(from) {
		return fmt.Errorf("redirected from %s to %s, another origin: not followed, so that credentials go to the server only (if it moved, put its new address in the configuration)", origin(from), origin(req.URL))
	}
	return nil
}

// origin is u's scheme://host:port, the port explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

type headerTransport struct {
	h  map[string]string
	rt http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return t.rt.RoundTrip(r)
}
