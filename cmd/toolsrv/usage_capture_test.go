package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// A 9P agent's call follows the answer that offered the tool, whatever
// came after it: rank "show the git status" (git_status offered), rank
// "order a pizza" (no tool fits), then load and call git_status. The
// history credits the git request, and records nothing for "order a
// pizza" (no link to git_status, no "answered without a tool": the agent
// went on with a tool), also once the server has stopped and forgotten
// its answers.
func TestUsageFollowsTheAnswerThatOffered(t *testing.T) {
	bin := buildToolsrv(t)
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	writeFile(t, filepath.Join(tools, "git_status.meta"), `{"description": "Show the git working tree status: staged, modified and untracked files.", "keywords": ["git status"], "cmd": "true", "readOnly": true}`)
	writeFile(t, filepath.Join(tools, "disk_usage.meta"), `{"description": "Show how full each file system is.", "keywords": ["disk space", "df"], "cmd": "true", "readOnly": true}`)
	writeFile(t, filepath.Join(tools, "weather.meta"), `{"description": "Current weather forecast for a city.", "keywords": ["rain", "temperature"], "cmd": "true", "readOnly": true}`)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "state", "usage.db")
	sock := filepath.Join(dir, "run", "9p.sock")
	serve := osexec.Command(bin, "serve", "--tools", tools, "--listen", "unix:"+sock, "--no-cache", "--usage-db", db)
	serve.Dir = work
	serve.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8"}
	var serveLog syncBuffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		serve.Process.Signal(os.Interrupt)
		if err := serve.Wait(); err != nil {
			t.Errorf("toolsrv serve: %v\n%s", err, serveLog.String())
		}
	}
	defer stop()
	p9 := func(args ...string) string {
		t.Helper()
		r := runToolsrv(t, bin, "", append([]string{"9p", "--addr", "unix:" + sock}, args...)...)
		if r.code != 0 {
			t.Fatalf("toolsrv 9p %v: exit %d: %s\n%s", args, r.code, r.stderr, serveLog.String())
		}
		return r.stdout
	}
	deadline := time.Now().Add(safetyNet)
	for runToolsrv(t, bin, "", "9p", "--addr", "unix:"+sock, "ls", "/").code != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", serveLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	const git, pizza = "show the git status of this repository", "order a pizza"
	p9("mkdir", "session/s1")
	p9("mkdir", "session/s1/agent/coder")
	if out := p9("write", "session/s1/agent/coder/rank", git); !strings.Contains(out, "\ngit_status\t") {
		t.Fatalf("rank %q: %q, want git_status offered", git, out)
	}
	if out := p9("write", "session/s1/agent/coder/rank", pizza); !strings.Contains(out, "# no tool fits") || strings.Contains(out, "\t") {
		t.Fatalf("rank %q: %q, want no tool", pizza, out)
	}
	p9("write", "session/s1/agent/coder/ctl", "tool_load git_status")
	if out := p9("write", "session/s1/agent/coder/call/git_status", "{}"); !strings.Contains(out, `"ok":true`) {
		t.Fatalf("call git_status: %q", out)
	}
	stop() // its answers are forgotten: what they led to is recorded

	r := runToolsrv(t, bin, "", "usage", "ls", "--json", "--usage-db", db)
	var entries []struct {
		Key struct {
			Tool string
		}
		Text  string
		Count int
	}
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil {
		t.Fatalf("usage ls --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s → %s ×%d", e.Text, e.Key.Tool, e.Count))
	}
	if want := []string{git + " → git_status ×1"}; !slices.Equal(got, want) {
		t.Errorf("recorded %q, want %q", got, want)
	}
}
