package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// npmDir is where "make npm-deps" installs the npm MCP servers and the MCP
// Inspector ($TOOLSRV_TEST_NPM_DIR, else mcp/testdata/npm). Where they are
// not, the tests that need them skip, unless TOOLSRV_TEST_REQUIRE names
// npm (as CI does): then they fail.
func npmDir(t *testing.T) string {
	t.Helper()
	return testdeps.NPMDir(t, "../../mcp/testdata/npm", "mcp-inspector", "mcp-server-everything", "mcp-server-memory")
}

// mcpProject is a working directory with a TODO in it.
func mcpProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\n// TODO: write it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A client nobody here wrote, the MCP Inspector's command-line mode,
// drives "toolsrv mcp": it lists find_tools, finds the grep tool for
// "search the files for TODO", and calls it through call_tool (the
// commands the README shows).
func TestMCPInspector(t *testing.T) {
	npm := npmDir(t)
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	work := mcpProject(t)
	home := t.TempDir()
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		full := append([]string{"--cli", bin, "mcp", "--tools", tools, "--workdir", work}, args...)
		cmd := osexec.CommandContext(ctx, filepath.Join(npm, "node_modules", ".bin", "mcp-inspector"), full...)
		cmd.Dir = npm
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "npm_config_offline=true"}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("mcp-inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	out := inspect("--method", "tools/list")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !contains(names, "find_tools") || !contains(names, "call_tool") {
		t.Errorf("tools/list: %v, want find_tools and call_tool", names)
	}

	var found struct {
		StructuredContent struct {
			Tools []struct {
				Name  string
				Score float64
			}
			NoToolFits bool
		} `json:"structuredContent"`
	}
	out = inspect("--method", "tools/call", "--tool-name", "find_tools", "--tool-arg", "query=search the files for TODO")
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("find_tools: %v\n%s", err, out)
	}
	if sc := found.StructuredContent; sc.NoToolFits || len(sc.Tools) == 0 || sc.Tools[0].Name != "file_grep" {
		t.Errorf("find_tools for \"search the files for TODO\": %s", out)
	}

	out = inspect("--method", "tools/call", "--tool-name", "call_tool", "--tool-arg", "name=file_grep", "--tool-arg", `arguments={"pattern":"TODO"}`)
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("call_tool: %v\n%s", err, out)
	}
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "main.go:3:// TODO: write it") {
		t.Errorf("call_tool file_grep: %s", out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// memoryConfig is an MCP config importing the npm memory server, its
// memory file in a directory its entry lets it write.
func memoryConfig(t *testing.T, npm string) string {
	t.Helper()
	mem := t.TempDir()
	// startTimeout: how long toolsrv waits for a server to start (and the
	// commands for its tools); on a loaded machine Node.js takes its time.
	start := safetyNet.String()
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": filepath.Join(npm, "node_modules", ".bin", "mcp-server-memory"),
			"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(mem, "memory.jsonl")},
			"sandbox": map[string]any{"write": []string{mem}}, "startTimeout": start},
		"everything": map[string]any{"command": filepath.Join(npm, "node_modules", ".bin", "mcp-server-everything"), "startTimeout": start},
	}}
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The SDK's own client drives the built binary over stdio: the agent's
// hot tools are listed, find_tools and call_tool work, the tools of an
// imported MCP server are found and called through toolsrv (content
// passed through), and editing a hot tool's .meta sends
// notifications/tools/list_changed.
func TestMCPStdio(t *testing.T) {
	npm := npmDir(t)
	bin := buildToolsrv(t)
	tools := t.TempDir()
	if err := os.CopyFS(tools, os.DirFS("../../examples/tools")); err != nil {
		t.Fatal(err)
	}
	agents := t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "explorer.json"), []byte(`{"autoLoad":["file_grep","file_read"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	work := mcpProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*safetyNet)
	defer cancel()
	cmd := osexec.Command(bin, "mcp", "--tools", tools, "--mcp-config", memoryConfig(t, npm), "--agent", "explorer", "--agents", agents,
		"--workdir", work, "--no-cache")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	changed := make(chan struct{}, 8)
	cl := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolsrv mcp: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	listedNames := func() map[string]*sdk.Tool {
		out := map[string]*sdk.Tool{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out[tl.Name] = tl
		}
		return out
	}
	l := listedNames()
	for _, want := range []string{"find_tools", "call_tool", "file_grep", "file_read"} {
		if l[want] == nil {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	call := func(name string, args any) *sdk.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		return r
	}
	text := func(r *sdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	if r := call("find_tools", map[string]any{"query": "search the files for TODO"}); !strings.Contains(text(r), `"name":"file_grep"`) {
		t.Errorf("find_tools: %s", text(r))
	}
	// The imported servers' tools join the catalog, then the index, once
	// those servers have started: toolsrv mcp waits 10 s for them, less than
	// Node.js may take on a loaded machine. Wait until find_tools has them.
	for deadline := time.Now().Add(safetyNet); ; time.Sleep(100 * time.Millisecond) {
		r := call("find_tools", map[string]any{"query": "store facts about people in the knowledge graph memory", "limit": 5})
		if strings.Contains(text(r), `"name":"memory:`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("find_tools does not find the memory server's tools: %s", text(r))
		}
	}
	for deadline := time.Now().Add(safetyNet); ; time.Sleep(100 * time.Millisecond) {
		r := call("call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "ready?"}})
		if !strings.Contains(text(r), "unknown tool") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything server's tools never came: %s", text(r))
		}
	}
	r := call("call_tool", map[string]any{"name": "memory:create_entities",
		"arguments": map[string]any{"entities": []any{map[string]any{"name": "alice", "entityType": "person", "observations": []string{"works on toolsrv"}}}}})
	if r.IsError || !strings.Contains(text(r), "alice") {
		t.Errorf("call_tool memory:create_entities: %v %s", r.IsError, text(r))
	}
	if r := call("call_tool", map[string]any{"name": "memory:read_graph"}); r.IsError || !strings.Contains(text(r), "works on toolsrv") {
		t.Errorf("call_tool memory:read_graph: %v %s", r.IsError, text(r))
	}
	if r := call("call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "over two hops"}}); r.IsError || !strings.Contains(text(r), "over two hops") {
		t.Errorf("call_tool everything:echo: %v %s", r.IsError, text(r))
	}
	if r := call("file_grep", map[string]any{"pattern": "TODO"}); r.IsError || !strings.Contains(text(r), "main.go:3") {
		t.Errorf("file_grep: %v %s", r.IsError, text(r))
	}
	// A hot tool's definition changes: the client is told.
	if err := os.WriteFile(filepath.Join(tools, "file_read.meta"), []byte(`{"description":"Read a file (edited)","tier":"hot","cmd":"cat"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(safetyNet):
		t.Fatalf("no notifications/tools/list_changed after a hot tool's .meta was edited\n%s", stderr.String())
	}
	if d := listedNames()["file_read"]; d == nil || d.Description != "Read a file (edited)" {
		t.Errorf("after the edit: %+v", d)
	}
}

// "toolsrv mcp --listen" serves streamable HTTP on loopback (to clients
// with its bearer token); another address needs --allow-remote.
func TestMCPHTTP(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	if r := runToolsrv(t, bin, "", "mcp", "--tools", tools, "--listen", "0.0.0.0:1"); r.code != 2 || !strings.Contains(r.stderr, "--allow-remote") {
		t.Errorf("a non-loopback address: exit %d, %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	const token = "test-token-0123456789abcdef"
	srv := startMCPListen(t, bin, []string{"TOOLSRV_MCP_TOKEN=" + token}, "--tools", tools, "--workdir", mcpProject(t))
	url := srv.url
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(token)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "file_grep", "arguments": map[string]any{"pattern": "TODO"}}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*sdk.TextContent); r.IsError || !ok || !strings.Contains(tc.Text, "main.go:3") {
		t.Errorf("call_tool over HTTP: %+v", r.Content[0])
	}

	// A web page cannot reach it: a browser's request from another site
	// (its Sec-Fetch-Site, or its Origin), or one through a rebound DNS
	// name (a Host that is not loopback), is refused before any MCP.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`
	for _, c := range []struct {
		name    string
		headers map[string]string
		host    string
		want    int
	}{
		{"a client, not a browser", nil, "", http.StatusOK},
		{"a page of another site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"an older browser: Origin only", map[string]string{"Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"DNS rebinding", nil, "evil.example", http.StatusForbidden},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// --mcp-config on the other commands: ls lists the servers' tools, call
// calls one, the 9P tree calls one, validate names a broken entry, and a
// configuration that cannot be read is a warning (the .meta tools are
// still listed) for ls and an error for validate.
func TestMCPConfigCommands(t *testing.T) {
	npm := npmDir(t)
	bin := buildToolsrv(t)
	tools := callTools(t)
	cfg := memoryConfig(t, npm)
	work := t.TempDir()
	r := runToolsrv(t, bin, "", "ls", "--tools", tools, "--mcp-config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "everything:echo") || !strings.Contains(r.stdout, "memory:read_graph") || !strings.Contains(r.stdout, "greet") {
		t.Errorf("ls --mcp-config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runToolsrv(t, bin, "", "call", "--tools", tools, "--mcp-config", cfg, "--cwd", work, "everything:echo", `{"message":"from the CLI"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "from the CLI") {
		t.Errorf("call everything:echo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runToolsrv(t, bin, "", "rank", "--tools", tools, "--mcp-config", cfg, "--no-cache", "--all", "--k", "1", "echo back a message")
	if r.code != 0 || !strings.Contains(r.stdout, "everything:echo") {
		t.Errorf("rank: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// A broken entry and an unknown key: validate names them (in its
	// report, on standard output).
	broken := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(broken, []byte(`{"mcpServers": {"pigeon": {"command": "true", "type": "carrier"}, "ok": {"command": "`+
		filepath.Join(npm, "node_modules", ".bin", "mcp-server-memory")+`", "autoApprove": []}}}`), 0o644)
	r = runToolsrv(t, bin, "", "validate", "--tools", tools, "--mcp-config", broken)
	if r.code != 1 || !strings.Contains(r.stdout, `mcp server pigeon`) || !strings.Contains(r.stdout, `unknown transport "carrier"`) ||
		!strings.Contains(r.stdout, `warning: mcp server ok: unknown key "autoApprove"`) {
		t.Errorf("validate with a broken entry: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A file that is not JSON.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\"mcpServers\": {\n  \"x\": {\"command\": }\n}}"), 0o644)
	r = runToolsrv(t, bin, "", "ls", "--tools", tools, "--mcp-config", bad)
	if r.code != 0 || !strings.Contains(r.stdout, "greet") || !strings.Contains(r.stderr, "bad.json: not valid JSON at line 2") {
		t.Errorf("ls with a malformed config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runToolsrv(t, bin, "", "validate", "--tools", tools, "--mcp-config", bad)
	if r.code != 1 || !strings.Contains(r.stdout, "not valid JSON at line 2") {
		t.Errorf("validate with a malformed config: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// Over 9P, an imported server's tool is called like any other.
func TestMCPConfigServe(t *testing.T) {
	npm := npmDir(t)
	addr, stderr, _ := startServeIn(t, serveTools(t), "--mcp-config", memoryConfig(t, npm))
	for _, step := range [][]string{{"mkdir", "session/s1"}, {"mkdir", "session/s1/agent/a"}} {
		if code, _, errOut := run9PCmd(t, addr, "", step...); code != 0 {
			t.Fatalf("9p %v: %s\n%s", step, errOut, stderr.String())
		}
	}
	// The imported servers' tools join when those servers have started,
	// which serve waits for only so long (10 s): wait for them.
	await9P(t, addr, time.Now().Add(safetyNet), "the imported servers' tools", func(out string) bool {
		return strings.Contains(out, "everything:echo\t") && strings.Contains(out, "memory:create_entities\t")
	}, "cat", "tools")
	if code, _, errOut := run9PCmd(t, addr, "tool_load everything:echo", "write", "session/s1/agent/a/ctl"); code != 0 {
		t.Fatalf("tool_load everything:echo: %s", errOut)
	}
	code, out, errOut := run9PCmd(t, addr, `{"message":"over 9P"}`, "write", "session/s1/agent/a/call/everything:echo")
	if code != 0 || !strings.Contains(out, "over 9P") {
		t.Errorf("9p call everything:echo: exit %d\n%s\n%s\n%s", code, out, errOut, stderr.String())
	}
	code, out, _ = run9PCmd(t, addr, "", "cat", "tools")
	if code != 0 || !strings.Contains(out, "memory:create_entities") {
		t.Errorf("9p tools lacks the memory server's tools:\n%s", out)
	}

}
