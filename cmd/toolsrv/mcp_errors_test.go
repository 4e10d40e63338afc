package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMCPScript is a stdio MCP server in sh: it answers initialize and
// tools/list (one tool, "fail") and every tools/call with an isError
// result whose text is two lines; any other request (the SDK's client asks
// server/discover first) with method not found.
const fakeMCPScript = `#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}\n' "$id";;
  *'"method":"tools/list"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"fail","description":"always fails","inputSchema":{"type":"object"}}]}}\n' "$id";;
  *'"method":"tools/call"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"isError":true,"content":[{"type":"text","text":"it went wrong\\nfor a reason"}]}}\n' "$id";;
  *)
    [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id";;
  esac
done
`

// writeMCPConfig writes an MCP config whose server NAME runs script (an
// executable sh file written beside it) with entry's other keys.
func writeMCPConfig(t *testing.T, name, script string, entry map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	sh := filepath.Join(dir, name+".sh")
	if err := os.WriteFile(sh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := map[string]any{"command": sh}
	for k, v := range entry {
		e[k] = v
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: e}})
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// toolsrv call of an imported tool that reports an error: toolsrv's words,
// then the server's message on lines of its own, once, and no "exit
// status" (an MCP call has none). A process tool whose standard error does
// not end its line still gets toolsrv's words on a line of their own.
func TestCallMCPToolError(t *testing.T) {
	bin := buildToolsrv(t)
	cfg := writeMCPConfig(t, "fake", fakeMCPScript, nil)
	tools := t.TempDir()
	if err := os.WriteFile(filepath.Join(tools, "grumble.meta"), []byte(`{"description":"complains","cmd":"printf oops >&2; exit 3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runToolsrv(t, bin, "", "call", "--tools", tools, "--mcp-config", cfg, "--cwd", t.TempDir(), "fake:fail")
	want := "toolsrv call: tool fake:fail: tool failed: mcp server fake reported an error:\nit went wrong\nfor a reason\n"
	if r.code != 1 || r.stderr != want || strings.Contains(r.stderr, "exit status") {
		t.Errorf("call fake:fail: exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
	}
	r = runToolsrv(t, bin, "", "call", "--tools", tools, "--cwd", t.TempDir(), "grumble")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "oops\ntoolsrv call: tool grumble failed (exit status 3)\n") {
		t.Errorf("call grumble: exit %d, stderr %q; want oops, then toolsrv's line", r.code, r.stderr)
	}
}

// toolsrv validate with stdio servers that give no tools: one that never
// answers says it got no reply to initialize within its startTimeout, one
// that exits says how and the end of its standard error; a package runner
// (npx) in a sandbox without network is a warning in the report, and its
// failure says it likely needs "network": true.
func TestValidateMCPStartFailures(t *testing.T) {
	bin := buildToolsrv(t)
	dir := t.TempDir()
	write := func(path, body string) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stall := write(filepath.Join(dir, "stall.sh"), `while read -r line; do :; done`)
	exit := write(filepath.Join(dir, "exit.sh"), `echo "starting up" >&2; echo "Error: cannot find module 'left-pad'" >&2; exit 1`)
	npx := write(filepath.Join(dir, "bin", "npx"), `echo "npm error code ENOTFOUND" >&2; exit 1`)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"stall": map[string]any{"command": stall, "startTimeout": "2s"},
		"exit":  map[string]any{"command": exit},
		"fetch": map[string]any{"command": npx, "args": []string{"-y", "some-mcp-server"}},
	}})
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runToolsrv(t, bin, "", "validate", "--tools", t.TempDir(), "--mcp-config", cfg)
	lines := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		for _, s := range []string{"stall", "exit", "fetch"} {
			for _, kind := range []string{"error", "warning"} {
				if strings.HasPrefix(l, kind+": mcp server "+s+" ") || strings.HasPrefix(l, kind+": mcp server "+s+":") {
					lines[kind+" "+s] = l
				}
			}
		}
	}
	for key, parts := range map[string][]string{
		"error stall":   {"no reply to initialize after 2s", `set "startTimeout"`},
		"error exit":    {"exited with status 1 before answering initialize", "its standard error ends: starting up | Error: cannot find module 'left-pad'"},
		"warning fetch": {`"npx"`, `likely needs "sandbox": {"network": true}`, cfg},
		"error fetch":   {"exited with status 1 before answering initialize", "npm error code ENOTFOUND", `likely needs "sandbox": {"network": true}`},
	} {
		for _, p := range parts {
			if !strings.Contains(lines[key], p) {
				t.Errorf("validate: the %s line %q lacks %q", key, lines[key], p)
			}
		}
	}
	if r.code != 1 || strings.Contains(r.stdout, "context deadline exceeded") {
		t.Errorf("validate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}
