package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
)

// askingServer is an http MCP server whose tools ask the person during
// the call: "ask" a form whose fields have defaults, "open" a URL (its
// argument "url"). Each answers with the action and content it got.
func askingServer(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, nil)
	answer := func(res *sdk.ElicitResult, err error) (*sdk.CallToolResult, error) {
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	}
	s.AddTool(&sdk.Tool{Name: "ask", Description: "asks for a name", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?\x1b]0;pwned\x07",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30}}}`)}))
		})
	s.AddTool(&sdk.Tool{Name: "open", Description: "asks to open a URL", InputSchema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ URL string }
			json.Unmarshal(req.Params.Arguments, &a)
			return answer(req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "Sign in", URL: a.URL, ElicitationID: "e1"}))
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// person is an MCP client of toolsrv's server s that answers questions
// with answer (nil: it declares no elicitation), at protocol version
// (""; the newest). The questions it got are recorded.
type person struct {
	cs    *sdk.ClientSession
	mu    sync.Mutex
	asked []*sdk.ElicitParams
}

func newPerson(t *testing.T, ctx context.Context, s *Server, version string, caps *sdk.ElicitationCapabilities, answer *sdk.ElicitResult) *person {
	t.Helper()
	p := &person{}
	opts := &sdk.ClientOptions{}
	if answer != nil {
		opts.Capabilities = &sdk.ClientCapabilities{Elicitation: caps}
		opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			p.mu.Lock()
			p.asked = append(p.asked, req.Params)
			p.mu.Unlock()
			a := *answer
			return &a, nil
		}
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "person", Version: "1"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	p.cs = cs
	return p
}

// call is call_tool of tool with args: the result's text, or the error.
func (p *person) call(ctx context.Context, tool, args string) (string, error) {
	res, err := p.cs.CallTool(ctx, &sdk.CallToolParams{Name: CallTool, Arguments: map[string]any{"tool": tool, "arguments": json.RawMessage(args)}})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), nil
}

// An imported server's question during a call goes to the MCP client
// that made the call (through toolsrv's server: an input-required result
// for a client of 2026-07-28, elicitation/create for an older one),
// marked as the server's, when that client declared elicitation;
// otherwise it is declined, and the call's result says why.
func TestElicitationPassedOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	eng := newEngine(t, ctx, writeConfig(t, map[string]any{"imp": map[string]any{"url": askingServer(t)}}), ProviderOptions{}, engine.Options{})
	waitFor(t, ctx, "the imported tools", func() bool { _, ok := eng.Catalog().Get("imp:ask"); return ok })
	srv := NewServer(ServerOptions{Engine: eng, Logger: quiet()})
	accept := &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}
	form := &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}
	both := &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}
	for _, version := range []string{"", "2025-11-25"} {
		for _, tc := range []struct {
			name   string
			caps   *sdk.ElicitationCapabilities
			answer *sdk.ElicitResult // nil: the client declares no elicitation
			cli    bool              // called from the command line
			tool   string
			args   string
			want   string // in the server's answer
			asked  string // the question the client got ("": none)
			note   string // in the call's standard error (the command line)
		}{
			{name: "form, defaults applied", caps: form, answer: accept, tool: "ask",
				want: `"action":"accept","content":{"age":30,"name":"John Doe"}`, asked: "[mcp server imp asks] Your name?"},
			{name: "declined by the person", caps: form, answer: &sdk.ElicitResult{Action: "decline"}, tool: "ask",
				want: `"action":"decline"`, asked: "[mcp server imp asks] Your name?"},
			{name: "client without elicitation", tool: "ask", want: `"action":"decline"`},
			{name: "command line", cli: true, tool: "ask", want: `"action":"decline"`, note: "there is no person to ask on this path"},
			{name: "url, passed on", caps: both, answer: &sdk.ElicitResult{Action: "accept"}, tool: "open",
				args: `{"url":"https://auth.example/start"}`, want: `"action":"accept"`, asked: "[mcp server imp asks] Sign in"},
			{name: "url the client cannot take", caps: form, answer: accept, tool: "open",
				args: `{"url":"https://auth.example/start"}`, want: `"action":"decline"`},
			{name: "url not https", cli: true, tool: "open", args: `{"url":"javascript:alert(1)"}`, want: `"action":"decline"`, note: "declined"},
		} {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				args := tc.args
				if args == "" {
					args = "{}"
				}
				if tc.cli {
					r, err := eng.Call(ctx, engine.CallRequest{Tool: "imp:" + tc.tool, Arguments: []byte(args)})
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(string(r.Stdout), tc.want) || !strings.Contains(string(r.Stderr), tc.note) {
						t.Errorf("the server got %s, want %s; the call's standard error %q, want %q", r.Stdout, tc.want, r.Stderr, tc.note)
					}
					if tc.tool == "ask" && !strings.Contains(string(r.Stderr), `"Your name?\x1b]0;pwned\a"`) {
						t.Errorf("the note does not quote the server's question, escaped: %q", r.Stderr)
					}
					return
				}
				p := newPerson(t, ctx, srv, version, tc.caps, tc.answer)
				got, err := p.call(ctx, "imp:"+tc.tool, args)
				if err != nil {
					t.Fatalf("call_tool: %v", err)
				}
				if !strings.Contains(got, tc.want) {
					t.Errorf("the server got %s, want %s", got, tc.want)
				}
				p.mu.Lock()
				defer p.mu.Unlock()
				switch {
				case tc.asked == "" && len(p.asked) > 0:
					t.Errorf("the client was asked %q", p.asked[0].Message)
				case tc.asked != "" && (len(p.asked) != 1 || !strings.HasPrefix(p.asked[0].Message, tc.asked)):
					t.Errorf("the client was asked %v, want one question beginning %q", p.asked, tc.asked)
				}
			})
		}
	}
}

// fakeAsker answers every question with accept.
type fakeAsker struct{ asked int }

func (a *fakeAsker) elicitation() *sdk.ElicitationCapabilities { return &sdk.ElicitationCapabilities{} }
func (a *fakeAsker) ask(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	a.asked++
	return &sdk.ElicitResult{Action: "accept"}, nil
}

// A question that comes while calls of two clients are in progress is
// declined for both: toolsrv cannot tell whose call asks. One that comes
// with no call in progress is declined too.
func TestElicitationAmbiguous(t *testing.T) {
	ctx := context.Background()
	f := newInflight(quiet())
	a, b := &fakeAsker{}, &fakeAsker{}
	_, endA := f.begin(withAsker(ctx, a))
	_, endB := f.begin(withAsker(ctx, b))
	res, err := f.elicit(ctx, "imp", &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "which one?"}})
	if err != nil || res.Action != "decline" {
		t.Fatalf("answer %+v, %v; want a decline", res, err)
	}
	for _, end := range []func() []string{endA, endB} {
		if notes := end(); len(notes) != 1 || !strings.Contains(notes[0], "several clients") {
			t.Errorf("notes %q", notes)
		}
	}
	if a.asked+b.asked != 0 {
		t.Error("a client was asked")
	}
	if res, _ := f.elicit(ctx, "imp", &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "anyone?"}}); res.Action != "decline" {
		t.Errorf("a question without a call: %+v", res)
	}
	// One call: its client is asked.
	_, end := f.begin(withAsker(ctx, a))
	if res, _ := f.elicit(ctx, "imp", &sdk.ElicitRequest{Params: &sdk.ElicitParams{Message: "you?"}}); res.Action != "accept" || a.asked != 1 {
		t.Errorf("one call: %+v, asked %d", res, a.asked)
	}
	end()
}

func TestWithNotes(t *testing.T) {
	ce := &exec.CallError{Tool: "imp:ask", Kind: exec.ErrExit, Msg: "mcp server imp reported an error"}
	_, err := withNotes(nil, ce, []string{"toolsrv: declined"})
	if !errors.Is(err, exec.ErrExit) || !strings.HasSuffix(err.Error(), "reported an error\ntoolsrv: declined") {
		t.Errorf("error %v", err)
	}
	r, _ := withNotes(&exec.Result{Stderr: []byte("warning")}, nil, []string{"toolsrv: declined"})
	if string(r.Stderr) != "warning\ntoolsrv: declined\n" {
		t.Errorf("stderr %q", r.Stderr)
	}
}
