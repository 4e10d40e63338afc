package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every path that ends in a call records one usage event: an MCP session's
// find_tools then call_tool (citing the answer by itself), a 9P session's
// rank then call, and "toolsrv call --for". "usage ls --json" shows all
// three; after "usage forget --all" no file of the store holds a request.
func TestUsageCapturedOnEveryPath(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	state := t.TempDir()
	db := filepath.Join(state, "usage", "usage.db")
	requests := map[string]string{
		"mcp": "work out six times seven for me",
		"9p":  "who am i logged in as",
		"cli": "what is 2 plus 40",
	}

	// MCP: find_tools, then call_tool without an answer id (the session's
	// last answer is cited).
	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", mcpProject(t), "--no-cache", "--usage-db", db)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_tools","arguments":{"query":"` + requests["mcp"] + `"}}}`)
	found := p.await("find_tools' answer", safetyNet, hasID(2))
	if !strings.Contains(mustJSON(found), `\"id\"`) {
		t.Fatalf("find_tools gave no answer id: %v", found)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"tool":"calc","arguments":{"expression":"6*7"}}}}`)
	if m := p.await("call_tool's answer", safetyNet, hasID(3)); !strings.Contains(mustJSON(m), "42") {
		t.Fatalf("call_tool calc: %v", m)
	}

	// 9P: an agent ranks, then calls.
	addr, _, _ := startServeIn(t, serveTools(t), "--usage-db", db)
	for _, d := range []string{"session/s1", "session/s1/agent/coder"} {
		if code, _, errs := run9PCmd(t, addr, "", "mkdir", d); code != 0 {
			t.Fatalf("mkdir %s: %s", d, errs)
		}
	}
	code, out, errs := run9PCmd(t, addr, "", "write", "session/s1/agent/coder/rank", requests["9p"])
	if code != 0 || !strings.HasPrefix(out, "# answer ") {
		t.Fatalf("rank: exit %d, %q %s", code, out, errs)
	}
	if code, out, errs := run9PCmd(t, addr, "", "write", "session/s1/agent/coder/call/whoami", "{}"); code != 0 {
		t.Fatalf("call whoami: exit %d, %q %s", code, out, errs)
	}

	// CLI: call --for.
	if r := runToolsrvEnv(t, bin, nil, "", "call", "--tools", tools, "--cwd", t.TempDir(), "--usage-db", db,
		"--for", requests["cli"], "calc", `{"expression":"2+40"}`); r.code != 0 || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("call --for: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}

	r := runToolsrv(t, bin, "", "usage", "ls", "--json", "--usage-db", db)
	var entries []struct {
		Key   struct{ Tool string }
		Text  string
		Count int
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("usage ls --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	want := map[string]string{requests["mcp"]: "calc", requests["9p"]: "whoami", requests["cli"]: "calc"}
	for _, e := range entries {
		if want[e.Text] == e.Key.Tool && e.Count == 1 {
			delete(want, e.Text)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing events %v in %s", want, r.stdout)
	}

	if r := runToolsrv(t, bin, "", "usage", "forget", "--all", "--usage-db", db); r.code != 0 {
		t.Fatalf("usage forget --all: %d %s", r.code, r.stderr)
	}
	filepath.Walk(state, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, q := range requests {
			if bytes.Contains(b, []byte(q)) {
				t.Errorf("%s still holds %q after forget --all", path, q)
			}
		}
		return nil
	})
}
