package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// exampleTools copies the repository's example tools to a directory the
// test may edit.
func exampleTools(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tools")
	if err := os.CopyFS(dir, os.DirFS("../examples/tools")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serve runs a Server over the engine and connects the SDK's own client
// to it (in memory); changed counts notifications/tools/list_changed.
func serve(t *testing.T, ctx context.Context, o ServerOptions) (*sdk.ClientSession, *atomic.Int32) {
	t.Helper()
	s := NewServer(o)
	go s.Follow(ctx)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var changed atomic.Int32
	cl := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed.Add(1) },
	})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, &changed
}

func listed(t *testing.T, ctx context.Context, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callTool(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v (a protocol error; failures must be isError results)", name, err)
	}
	return r
}

// The SDK's own client against toolsrv's MCP server: it lists find_tools,
// call_tool and the agent's hot tools; find_tools finds the grep tool for
// a request and says when no tool fits; call_tool runs it sandboxed; a
// failing call is an isError result; editing a hot tool's .meta sends
// notifications/tools/list_changed and lists its new definition.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := exampleTools(t)
	self, _ := os.Executable()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, NoCache: true, Logger: quiet(),
		Runner: &exec.Options{SelfExe: self, Logger: quiet()}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	go eng.Run(rctx)
	defer func() { stop(); eng.Close() }()
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte("package main\n// TODO: write it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := &registry.Profile{Name: "explorer", AutoLoad: []string{"file_grep", "file_read", "git_status"}}
	cs, changed := serve(t, ctx, ServerOptions{Engine: eng, Profile: profile, Call: exec.CallContext{WorkDir: work}, Logger: quiet()})

	tools := listed(t, ctx, cs)
	for _, want := range []string{FindTools, CallTool, "file_grep", "file_read"} {
		if tools[want] == nil {
			t.Errorf("tools/list lacks %s: %v", want, slices.Sorted(mapsKeys(tools)))
		}
	}
	if tools["git_status"] != nil || tools["shell"] != nil {
		t.Errorf("tools/list shows a tool that is not hot in the profile: %v", slices.Sorted(mapsKeys(tools)))
	}

	// find_tools: the grep tool for a request, with its schema and score.
	r := callTool(t, ctx, cs, FindTools, map[string]any{"query": "search the files for TODO"})
	var found Found
	if b, _ := json.Marshal(r.StructuredContent); json.Unmarshal(b, &found) != nil || r.IsError {
		t.Fatalf("find_tools: %s", text(r))
	}
	var grep *engine.Offer
	for i := range found.Tools {
		if found.Tools[i].Name == "file_grep" {
			grep = &found.Tools[i]
		}
	}
	if grep == nil || grep.Score <= 0 || !strings.Contains(string(grep.InputSchema), `"pattern"`) || found.NoToolFits {
		t.Fatalf("find_tools for TODO: %s", text(r))
	}
	if !strings.Contains(text(r), `"file_grep"`) {
		t.Errorf("the text content does not carry the answer: %s", text(r))
	}
	if found.ID == "" {
		t.Errorf("find_tools' answer has no id for call_tool to cite: %s", text(r))
	}
	// limit, and context as a string.
	r = callTool(t, ctx, cs, FindTools, map[string]any{"query": "read a file", "context": "we are looking at main.go", "limit": 1})
	if b, _ := json.Marshal(r.StructuredContent); json.Unmarshal(b, &found) != nil || len(found.Tools) > 1 {
		t.Errorf("limit 1: %s", text(r))
	}
	// Bad input to find_tools: an error result, not a protocol error.
	if r := callTool(t, ctx, cs, FindTools, map[string]any{"limit": 3}); !r.IsError || !strings.Contains(text(r), "query") {
		t.Errorf("find_tools without a query: %v %s", r.IsError, text(r))
	}

	// call_tool runs the tool, sandboxed, in the working directory
	// ("tool", and the older "name").
	for _, key := range []string{"tool", "name"} {
		r = callTool(t, ctx, cs, CallTool, map[string]any{key: "file_grep", "arguments": map[string]any{"pattern": "TODO"}})
		if r.IsError || !strings.Contains(text(r), "main.go:2") {
			t.Errorf("call_tool file_grep (%q): %v %s", key, r.IsError, text(r))
		}
	}
	// The hot tool is callable directly too.
	r = callTool(t, ctx, cs, "file_grep", map[string]any{"pattern": "write it"})
	if r.IsError || !strings.Contains(text(r), "main.go") {
		t.Errorf("file_grep directly: %v %s", r.IsError, text(r))
	}
	// Failures are error results saying why.
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{"name": "no_such_tool"}, "find_tools gives the names"},
		{map[string]any{"name": "file_grep", "arguments": map[string]any{"patern": "x"}}, "invalid arguments"},
		{map[string]any{}, `"tool" is required`},
	} {
		r := callTool(t, ctx, cs, CallTool, tc.args)
		if !r.IsError || !strings.Contains(text(r), tc.want) {
			t.Errorf("call_tool %v: isError=%v %q, want an error result with %q", tc.args, r.IsError, text(r), tc.want)
		}
	}
	// An agent whose profile does not allow a tool may not call it.
	strict, _ := serve(t, ctx, ServerOptions{Engine: eng, Logger: quiet(), Call: exec.CallContext{WorkDir: work},
		Profile: &registry.Profile{Name: "strict", AllowTools: &[]string{"file_grep"}}})
	if r := callTool(t, ctx, strict, CallTool, map[string]any{"name": "shell", "arguments": map[string]any{"command": "true"}}); !r.IsError || !strings.Contains(text(r), "may not use it") {
		t.Errorf("call_tool of a tool the profile does not allow: %v %q", r.IsError, text(r))
	}

	// Editing a hot tool's .meta: the client is told, and lists the new
	// definition.
	before := changed.Load()
	meta := filepath.Join(dir, "file_read.meta")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["description"] = "Read a text file (edited)"
	b, _ = json.Marshal(m)
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "list_changed after an edit", func() bool { return changed.Load() > before })
	if d := listed(t, ctx, cs)["file_read"]; d == nil || d.Description != "Read a text file (edited)" {
		t.Errorf("after the edit, file_read is listed as %+v", d)
	}
	// A change to a tool that is not listed sends nothing.
	before = changed.Load()
	if err := os.WriteFile(filepath.Join(dir, "calc.meta"), []byte(`{"description":"Evaluate arithmetic (edited)","cmd":"cat"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the edit applied", func() bool {
		c, ok := eng.Catalog().Get("calc")
		return ok && strings.Contains(c.Description, "edited")
	})
	time.Sleep(200 * time.Millisecond)
	if changed.Load() != before {
		t.Errorf("a change to an unlisted tool sent notifications/tools/list_changed")
	}
}

// When the thresholds decide that no tool fits, find_tools says so
// explicitly (with the reason), and offers only the agent's hot tools.
func TestServerNoToolFits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Thresholds under which nothing is ever answerable.
	shipped, err := filepath.Glob("../thresholds/defaults/builtin_v1-*.json")
	if err != nil || len(shipped) != 1 {
		t.Fatalf("the shipped thresholds of the built-in embedder: %v, %v", shipped, err)
	}
	b, err := os.ReadFile(shipped[0])
	if err != nil {
		t.Fatal(err)
	}
	thr := filepath.Join(t.TempDir(), "thresholds.json")
	never := regexp.MustCompile(`"minAnswerable": [0-9.]+`).ReplaceAllString(string(b), `"minAnswerable": 1`)
	if !strings.Contains(never, `"minAnswerable": 1`) {
		t.Fatal("the shipped thresholds have no minAnswerable")
	}
	if err := os.WriteFile(thr, []byte(never), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"../examples/tools"}, NoCache: true, Logger: quiet(), Thresholds: thr})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cs, _ := serve(t, ctx, ServerOptions{Engine: eng, Profile: &registry.Profile{Name: "a", AutoLoad: []string{"file_read"}}, Logger: quiet()})
	r := callTool(t, ctx, cs, FindTools, map[string]any{"query": "book me a table for two at an italian restaurant tonight"})
	var found Found
	if b, _ := json.Marshal(r.StructuredContent); json.Unmarshal(b, &found) != nil || !found.NoToolFits || found.Reason == "" {
		t.Fatalf("a request nothing serves: %s", text(r))
	}
	if len(found.Tools) != 1 || found.Tools[0].Name != "file_read" || !found.Tools[0].Hot {
		t.Errorf("with no tool fitting, only the hot tool is offered: %s", text(r))
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// find_tools with "explain": true returns the engine's explanation: each
// ranked tool's signals, the request's words it matched by field, and
// the rule that offered it or left it out; without it, none.
func TestServerExplain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"../examples/tools"}, NoCache: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cs, _ := serve(t, ctx, ServerOptions{Engine: eng, Logger: quiet()})
	if s := listed(t, ctx, cs)[FindTools]; s == nil || !strings.Contains(string(mustJSON(t, s.InputSchema)), `"explain"`) {
		t.Errorf("find_tools' input schema does not offer explain")
	}
	for _, tc := range []struct {
		explain any
		want    bool
	}{{true, true}, {"true", true}, {false, false}, {nil, false}} {
		args := map[string]any{"query": "search the files for TODO"}
		if tc.explain != nil {
			args["explain"] = tc.explain
		}
		r := callTool(t, ctx, cs, FindTools, args)
		var found Found
		if b, _ := json.Marshal(r.StructuredContent); r.IsError || json.Unmarshal(b, &found) != nil {
			t.Fatalf("find_tools explain=%v: %s", tc.explain, text(r))
		}
		if !tc.want {
			if found.Explain != nil || strings.Contains(text(r), `"explain"`) {
				t.Errorf("find_tools explain=%v explains: %s", tc.explain, text(r))
			}
			continue
		}
		ex := found.Explain
		if ex == nil || len(ex.Tools) == 0 {
			t.Fatalf("find_tools explain=%v: no explanation: %s", tc.explain, text(r))
		}
		var grep, left *engine.ToolExplanation
		for i, te := range ex.Tools {
			if te.Name == "file_grep" {
				grep = &ex.Tools[i]
			}
			if !te.Offered && left == nil {
				left = &ex.Tools[i]
			}
		}
		if grep == nil || !grep.Offered || grep.Dense == 0 && grep.Lexical == 0 || grep.Rule == "" {
			t.Errorf("file_grep's explanation: %+v", grep)
		}
		matched := map[string]bool{}
		if grep != nil {
			for _, m := range grep.Matched {
				for _, w := range m.Words {
					matched[m.Field+":"+w] = true
				}
			}
		}
		if !matched["description:search"] && !matched["description:file"] && !matched["keywords:search"] {
			t.Errorf("file_grep's matched words do not hold 'search' or 'file' by field: %+v", grep)
		}
		if left == nil || left.Rule == "" {
			t.Errorf("no left-out tool with the rule that left it out: %s", text(r))
		}
		if !strings.Contains(text(r), `"explain"`) {
			t.Errorf("the text content lacks the explanation: %s", text(r))
		}
	}
	// A tool the thresholds offer but the limit leaves out says so.
	r := callTool(t, ctx, cs, FindTools, map[string]any{"query": "search the files for TODO", "limit": 1, "explain": true})
	var found Found
	if b, _ := json.Marshal(r.StructuredContent); r.IsError || json.Unmarshal(b, &found) != nil || found.Explain == nil {
		t.Fatalf("find_tools limit 1, explain: %s", text(r))
	}
	for _, te := range found.Explain.Tools {
		if !te.Offered && (te.Rule == "" || te.Rule == "offered") {
			t.Errorf("left out, with rule %q: %+v", te.Rule, te)
		}
	}
	if r := callTool(t, ctx, cs, FindTools, map[string]any{"query": "x", "explain": "maybe"}); !r.IsError || !strings.Contains(text(r), "explain") {
		t.Errorf("explain \"maybe\": %v %s", r.IsError, text(r))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An imported MCP tool's error, through call_tool: toolsrv's words, then
// the server's message on a line of its own (not run on, not repeated),
// and no "exit status" (that is a process's); the same for a JSON-RPC
// error answer, and in the engine's error.
func TestServerMCPToolError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := writeConfig(t, map[string]any{"good": fakeEntry(t, "good", nil)})
	eng := newEngine(t, ctx, cfg, ProviderOptions{}, engine.Options{NoThresholds: true})
	cs, _ := serve(t, ctx, ServerOptions{Engine: eng, Call: exec.CallContext{WorkDir: t.TempDir()}, Logger: quiet()})
	for _, tc := range []struct{ tool, said, msg string }{
		{"good:fail", "mcp server good reported an error:", "it went wrong"},
		{"good:refuse", "mcp server good answered the call with an error:", "refused: the server is tired"},
	} {
		r := callTool(t, ctx, cs, CallTool, map[string]any{"tool": tc.tool})
		got := text(r)
		lines := strings.Split(got, "\n")
		at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, tc.msg) })
		switch {
		case !r.IsError:
			t.Errorf("%s: not an error result: %q", tc.tool, got)
		case at < 1 || !strings.HasPrefix(lines[at], tc.msg) || !strings.HasSuffix(lines[at-1], tc.said):
			t.Errorf("%s: %q; want %q ending a line, then %q on a line of its own", tc.tool, got, tc.said, tc.msg)
		case strings.Count(got, tc.msg) != 1 || len(r.Content) != 1:
			t.Errorf("%s: the message is repeated: %d items, %q", tc.tool, len(r.Content), got)
		case strings.Contains(got, "exit status"):
			t.Errorf("%s: an MCP call's error says \"exit status\": %q", tc.tool, got)
		}
		if !strings.HasPrefix(lines[0], "tool "+tc.tool) {
			t.Errorf("%s: toolsrv's words do not come first: %q", tc.tool, got)
		}
		_, err := eng.Call(ctx, engine.CallRequest{Tool: tc.tool, Context: exec.CallContext{WorkDir: t.TempDir()}})
		if err == nil || !strings.Contains(err.Error(), tc.said+"\n"+tc.msg) {
			t.Errorf("%s: the engine's error %q; want %q", tc.tool, err, tc.said+"\n"+tc.msg)
		}
	}
}
