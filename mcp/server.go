package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
	"github.com/toolsrv/toolsrv/usage"
)

// The tools "toolsrv mcp" always lists.
const (
	FindTools = "find_tools"
	CallTool  = "call_tool"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Engine ranks and calls (it needs an index and a runner).
	Engine *engine.Engine
	// Profile is the agent profile in effect (nil: none): its hot tools
	// are listed directly, only the tools it allows are found and called.
	Profile *registry.Profile
	// Call is where and as whom calls run: the working directory, the
	// session ("mcp" when empty) and agent (the profile's name).
	Call exec.CallContext
	// Native lists the tools find_tools finds as MCP tools of their own
	// (name, description, input schema), so that the model calls them
	// directly; past NativeCap (DefaultNativeCap when 0) the least
	// recently found or called ones are dropped from the list.
	Native    bool
	NativeCap int
	// Version is told to clients; Logger gets events (slog.Default()).
	Version string
	Logger  *slog.Logger
}

// Server is toolsrv as an MCP server: find_tools, call_tool and the
// agent's hot tools, over any transport of the SDK.
type Server struct {
	opts ServerOptions
	log  *slog.Logger
	srv  *sdk.Server

	mu     sync.Mutex
	listed map[string]string // hot tools listed directly: name → hash
	// sessions name the clients' sessions for the engine (Caller): a
	// counter, whatever the transport's own session ID.
	sessions map[*sdk.ServerSession]string
	nextSess uint64
	// native are the found tools listed under their own names (Native),
	// by MCP name; clock orders their use.
	native map[string]*nativeTool
	clock  uint64
	// relays are the calls waiting for their client's answer to an
	// imported server's question (relay.go).
	relays relays
}

// NewServer makes the server; Follow keeps its hot tools current.
func NewServer(o ServerOptions) *Server {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	if o.Call.Session == "" {
		o.Call.Session = "mcp"
	}
	if o.Profile != nil && o.Call.Agent == "" {
		o.Call.Agent = o.Profile.Name
	}
	if o.NativeCap <= 0 {
		o.NativeCap = DefaultNativeCap
	}
	s := &Server{opts: o, log: o.Logger, listed: map[string]string{}, sessions: map[*sdk.ServerSession]string{},
		native: map[string]*nativeTool{}}
	instructions := "This server holds many tools. Call find_tools with the user's request to get the few that fit " +
		"(with their input schemas), then call_tool with one of their names and its arguments. " +
		"find_tools may answer that no tool fits: then answer without a tool. " +
		"When you answer a request without any tool, say so with call_tool {\"noToolFits\": true}: toolsrv learns from it."
	find := findToolsTool
	if o.Native {
		instructions = "This server holds many tools. Call find_tools with the user's request to get the few that fit: " +
			"they are added to your tool list (find_tools' \"native\" gives the name each is listed under), so call them " +
			"directly; call_tool reaches any tool find_tools returned by its name too. " +
			"find_tools may answer that no tool fits: then answer without a tool. " +
			"When you answer a request without any tool, say so with call_tool {\"noToolFits\": true}: toolsrv learns from it."
		t := *findToolsTool
		t.Description = findToolsTool.Description + " The tools it returns are also added to your tool list, under the names its \"native\" gives (" +
			"the least recently used ones leave the list past " + strconv.Itoa(o.NativeCap) + "): call them directly."
		find = &t
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "toolsrv", Title: "toolsrv: tool search, ranking and sandboxed calls", Version: o.Version},
		&sdk.ServerOptions{
			Instructions: instructions,
			Capabilities: capabilities(),
			Logger:       o.Logger,
		})
	s.srv.AddTool(find, s.findTools)
	s.srv.AddTool(callToolTool, s.relay(s.callTool))
	s.sync(o.Engine.Catalog())
	return s
}

// MCP is the SDK server, to run on a transport.
func (s *Server) MCP() *sdk.Server { return s.srv }

// Follow lists the hot tools anew whenever the catalog changes (clients
// get notifications/tools/list_changed when the listed tools change),
// until ctx ends.
func (s *Server) Follow(ctx context.Context) {
	changes := s.opts.Engine.Registry().Subscribe(ctx)
	for range changes {
		s.sync(s.opts.Engine.Catalog())
	}
}

var findToolsTool = &sdk.Tool{
	Name:  FindTools,
	Title: "Find tools",
	Description: "Find the tools that fit a request, among all of this server's tools (ranked by meaning and words, " +
		"with a calibrated cut). Returns each tool's name, description, input schema and score, or says that no tool fits. " +
		"Call a tool it returns with call_tool. With \"explain\": true, the answer says why (\"explain\": per tool its signals, matched words by field, and the rule that offered it or left it out).",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"the request, in the user's words"},` +
		`"context":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}],"description":"earlier messages of the conversation, oldest first"},` +
		`"limit":{"type":"integer","minimum":1,"description":"the most tools to return"},` +
		`"explain":{"type":"boolean","description":"also say why: each ranked tool's signals (dense, lexical, usage scores), the request's words it matched in each field, and the rule that offered it or left it out, and for a tool left out the change that would bring it in"},` +
		`"expect":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"},"maxItems":16}],"description":"a tool (or tools) you expected to be offered: the explanation says where each ranks and what would bring it in (implies explain)"}},` +
		`"required":["query"]}`),
	Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
}

var callToolTool = &sdk.Tool{
	Name:  CallTool,
	Title: "Call a tool",
	Description: "Call a tool that find_tools returned, by its name, with arguments that match its input schema. " +
		"The tool runs sandboxed; its output is the result, and a failing tool is an error result that says why. " +
		"If you answered the user's request without any tool, say so instead: {\"noToolFits\": true} (and the answer's id), no tool is called.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"tool":{"type":"string","description":"the tool's name, as find_tools gave it (required unless noToolFits)"},` +
		`"arguments":{"type":"object","description":"the tool's arguments (an object matching its input schema)"},` +
		`"answer":{"type":"string","description":"the id of the find_tools answer that offered the tool (default: this session's last one)"},` +
		`"request":{"type":"string","description":"the user's request this call serves, in their words, when it did not come from find_tools: toolsrv learns from it which tools this installation uses for which requests (kept on this machine only)"},` +
		`"noToolFits":{"type":"boolean","description":"true (and no tool): the request of the answer was answered without any tool; toolsrv learns that no tool fits requests like it"}}}`),
}

// Found is find_tools' answer (its structured content, and its text): the
// engine's Answer, each tool with its description and input schema. Its ID
// is what call_tool's "answer" cites.
type Found struct {
	engine.Answer
	// Native (ServerOptions.Native) maps each offered tool that is in
	// tools/list to the name it is listed under (its own, or SERVER__TOOL
	// for an imported SERVER:TOOL); the others are reached with call_tool.
	Native map[string]string `json:"native,omitempty"`
}

func (s *Server) findTools(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	q, err := engine.DecodeRequest(orEmpty(req.Params.Arguments))
	if err != nil {
		return errorResult("find_tools: %v", err), nil
	}
	q.Profile, q.Caller = s.opts.Profile, s.caller(req)
	eng := s.opts.Engine
	ans, err := eng.Rank(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("ranking: %w", err)
	}
	// The answer as it is, each tool with what the model needs to call it.
	cat := eng.Catalog()
	f := Found{Answer: ans}
	f.Tools = make([]engine.Offer, 0, len(ans.Tools))
	for _, o := range ans.Tools {
		if t, ok := cat.Get(o.Name); ok {
			o.Description, o.InputSchema = t.Description, objectSchema(t.Args)
		}
		o.Score = round3(o.Score)
		f.Tools = append(f.Tools, o)
	}
	if s.opts.Native {
		f.Native = s.listNative(cat, f.Tools)
		if f.Native == nil {
			f.Native = map[string]string{}
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	// The request is user text: it is not logged.
	s.log.Info("find_tools", "found", len(f.Tools), "noToolFits", f.NoToolFits, "degraded", f.Degraded)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

func (s *Server) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var c engine.CallRequest
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &c); err != nil {
		return errorResult("call_tool: its arguments: %v (want an object {\"tool\": \"...\", \"arguments\": {...}}, or {\"noToolFits\": true})", err), nil
	}
	switch {
	case c.NoToolFits && c.Tool != "":
		return errorResult("call_tool: give either \"tool\" (a call) or \"noToolFits\": true (no tool was called), not both"), nil
	case c.NoToolFits:
		if err := s.opts.Engine.NoToolFits(s.caller(req), c.Answer); err != nil {
			return errorResult("call_tool: %v", err), nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "noted: the request was answered without a tool"}}}, nil
	case c.Tool == "":
		return errorResult("call_tool: \"tool\" is required: a tool name that find_tools returned (or \"noToolFits\": true when you answered without one)"), nil
	}
	return s.call(ctx, req, c), nil
}

// caller is who asks with req: an MCP client, its session named by this
// server. Its principal (engine.Caller.Client) is the identity its bearer
// token gives over HTTP (Principal: "mcp:http@owner" for the owner's
// token), else the name it gave itself in its initialize request (which
// cannot hold "@", so that no client names itself a token's holder). A
// request of a revision served without sessions (2026-07-28 over HTTP)
// has no session: it is one-off, and a call follows an answer only by
// citing it.
func (s *Server) caller(req sdk.Request) engine.Caller {
	c := engine.Caller{Transport: "mcp", Agent: s.opts.Call.Agent}
	var ss *sdk.ServerSession
	if req != nil {
		ss, _ = req.GetSession().(*sdk.ServerSession)
	}
	switch principal := Principal(req); {
	case principal != "":
		c.Client = usage.MCPClient("http@" + principal)
	default:
		name := ""
		if ss != nil {
			if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
				name = p.ClientInfo.Name
			}
		}
		c.Client = usage.MCPClient(strings.ReplaceAll(name, "@", "_"))
	}
	if ss == nil || stateless(req) {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[ss]
	if !ok {
		if len(s.sessions) >= maxSessions {
			clear(s.sessions) // many sessions: the oldest lose their links, nothing else
		}
		s.nextSess++
		sess = "mcp-" + strconv.FormatUint(s.nextSess, 10)
		s.sessions[ss] = sess
	}
	c.Session = sess
	return c
}

// stateless says whether req came over HTTP without a session (a revision
// served without them).
func stateless(req sdk.Request) bool {
	x := req.GetExtra()
	return x != nil && x.Header != nil && x.Header.Get(sessionHeader) == ""
}

// call runs a tool for a client: a failure is an error result saying why.
// The engine links it to the answer it follows.
func (s *Server) call(ctx context.Context, req *sdk.CallToolRequest, c engine.CallRequest) *sdk.CallToolResult {
	name := c.Tool
	if !s.opts.Profile.Allows(name) {
		return errorResult("tool %s: agent %s may not use it (its profile's allowTools)", name, s.opts.Profile.Name)
	}
	c.Caller, c.Context = s.caller(req), s.opts.Call
	res, err := s.opts.Engine.Call(ctx, c)
	s.log.Info("call", "tool", name, "err", err)
	if err != nil {
		var le *registry.LookupError
		if errors.As(err, &le) && !le.Hidden() {
			return errorResult("%v; find_tools gives the names of the tools there are", err)
		}
		out := errorResult("%v", err)
		if res == nil || len(res.Content) == 0 {
			return out
		}
		if t, ok := s.opts.Engine.Catalog().Get(name); ok && t.Provider != "" && errors.Is(err, exec.ErrExit) {
			// The error already holds the MCP server's text, after
			// toolsrv's words; its other items follow.
			for _, c := range contentOf(res) {
				if _, text := c.(*sdk.TextContent); !text {
					out.Content = append(out.Content, c)
				}
			}
			return out
		}
		out.Content = append(contentOf(res), out.Content...)
		return out
	}
	out := &sdk.CallToolResult{Content: contentOf(res)}
	var notes []string
	if res.Truncated {
		notes = append(notes, fmt.Sprintf("output truncated: the tool wrote %d bytes; the first ones are shown", res.StdoutBytes))
	}
	if res.Unsandboxed {
		notes = append(notes, "this call ran unsandboxed")
	}
	if len(notes) > 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: "[toolsrv: " + strings.Join(notes, "; ") + "]"})
	}
	return out
}

// maxSessions bounds the sessions the server names at once.
const maxSessions = 1024

// sync lists the profile's hot tools as MCP tools of their own: added,
// changed and removed as the catalog changes (the SDK tells clients).
func (s *Server) sync(cat *registry.Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]*registry.Tool{}
	for _, n := range thresholds.ProfileHot(cat, s.opts.Profile, nil) {
		t, ok := cat.Get(n)
		switch {
		case !ok:
		case n == FindTools || n == CallTool:
			s.log.Warn("a hot tool has the name of one of toolsrv's own MCP tools; reach it with call_tool", "tool", n)
		case !mcpName.MatchString(n):
			s.log.Debug("a hot tool's name is not a valid MCP tool name; reach it with call_tool", "tool", n)
		case !isObjectSchema(t.Args):
			s.log.Warn("a hot tool's input schema is not an object schema; reach it with call_tool", "tool", n)
		default:
			want[n] = t
		}
	}
	var gone []string
	for n := range s.listed {
		if want[n] == nil {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, n := range gone {
			delete(s.listed, n)
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	defer s.syncNative(cat)
	for _, n := range names {
		t := want[n]
		if s.listed[n] == t.Hash {
			continue
		}
		s.listed[n] = t.Hash
		ro := t.ReadOnly
		s.srv.AddTool(&sdk.Tool{Name: n, Description: t.Description, InputSchema: objectSchema(t.Args),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro, OpenWorldHint: &t.Network}},
			s.relay(func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return s.call(ctx, req, engine.CallRequest{Tool: n, Arguments: orEmpty(req.Params.Arguments)}), nil
			}))
	}
}

// Listed are the hot tools listed directly, sorted.
func (s *Server) Listed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.listed))
	for n := range s.listed {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// mcpName is what MCP allows in a tool name.
var mcpName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}

func errorResult(format string, a ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// objectSchema is a tool's argument schema as MCP wants it: an object
// schema (a tool without one takes any object).
func objectSchema(args json.RawMessage) json.RawMessage {
	var m map[string]any
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || len(m) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
		if b, err := json.Marshal(m); err == nil {
			return b
		}
	}
	return args
}

func isObjectSchema(args json.RawMessage) bool {
	var m map[string]any
	if json.Unmarshal(objectSchema(args), &m) != nil {
		return false
	}
	return m["type"] == "object"
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
