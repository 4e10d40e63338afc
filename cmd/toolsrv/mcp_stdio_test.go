package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpPeer is "toolsrv mcp" on standard input and output, driven line by
// line as an MCP client's stdio transport drives it.
type mcpPeer struct {
	t      *testing.T
	cmd    *osexec.Cmd
	in     io.WriteCloser
	msgs   chan map[string]any
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited
}

// startMCPPeer starts bin mcp ARGS with a scrubbed environment.
func startMCPPeer(t *testing.T, bin string, args ...string) *mcpPeer {
	t.Helper()
	cmd := osexec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
	p := &mcpPeer{t: t, cmd: cmd, msgs: make(chan map[string]any, 64), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.in = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"notJSON": sc.Text()}
			}
			p.msgs <- m
		}
		close(p.msgs)
	}()
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// send writes one line.
func (p *mcpPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("writing %q: %v\n%s", line, err, p.stderr.String())
	}
}

// await returns the first message from the server for which match holds,
// skipping the others (notifications, other responses).
func (p *mcpPeer) await(what string, within time.Duration, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-p.msgs:
			if !ok {
				p.t.Fatalf("waiting for %s: toolsrv mcp closed its output\n%s", what, p.stderr.String())
			}
			if match(m) {
				return m
			}
		case <-deadline:
			p.t.Fatalf("no %s within %s\n%s", what, within, p.stderr.String())
		}
	}
}

// hasID matches the response to request id.
func hasID(id float64) func(map[string]any) bool {
	return func(m map[string]any) bool { v, ok := m["id"].(float64); return ok && v == id && m["method"] == nil }
}

// initialize does the handshake.
func (p *mcpPeer) initialize() {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if m := p.await("the initialize response", safetyNet, hasID(1)); m["result"] == nil {
		p.t.Fatalf("initialize: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// A line that is not JSON gets the JSON-RPC parse error (id null), and
// the session goes on: so do a line that is JSON but no JSON-RPC message
// (invalid request) and a truncated one.
func TestMCPStdioParseError(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", mcpProject(t), "--no-cache")
	p.initialize()
	for i, tc := range []struct {
		line string
		code float64
	}{
		{"this is not JSON", -32700},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"}{"x":1}`, -32700},
		{`42`, -32600},
		{`[]`, -32600},
	} {
		p.send(tc.line)
		m := p.await(fmt.Sprintf("an error answer to %q", tc.line), safetyNet, func(m map[string]any) bool { return m["error"] != nil || m["notJSON"] != nil })
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != nil || e == nil || e["code"] != tc.code {
			t.Errorf("%q: answer %v, want error %v with id null", tc.line, m, tc.code)
		}
		ping := 100 + float64(i)
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"method":"ping"}`, ping))
		if m := p.await("the ping response after "+tc.line, safetyNet, hasID(ping)); m["result"] == nil {
			t.Errorf("ping after %q: %v", tc.line, m)
		}
	}
}

// An MCP client shuts a stdio server down by closing its standard input
// (then SIGTERM, then SIGKILL): toolsrv mcp exits by itself once it is
// closed (it means to within a second), even while a tool call and an
// imported MCP server's call still run, and leaves neither process behind.
func TestMCPStdioExitsWhenInputCloses(t *testing.T) {
	npm := npmDir(t)
	bin := buildToolsrv(t)
	// Marks find this test's processes among the machine's.
	mark := fmt.Sprintf("%d.%d", 300+os.Getpid()%600, time.Now().UnixNano()%1e6)
	tools := t.TempDir()
	if err := os.WriteFile(filepath.Join(tools, "nap.meta"), []byte(`{"description":"naps","cmd":"touch napping; exec sleep `+mark+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": filepath.Join(npm, "node_modules", ".bin", "mcp-server-everything"), "args": []string{"stdio", "mark-" + mark},
			"startTimeout": safetyNet.String()}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	p := startMCPPeer(t, bin, "--tools", tools, "--mcp-config", cfg, "--workdir", work, "--no-cache")
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"everything:trigger-long-running-operation","arguments":{"duration":300,"steps":300}}}}`)
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"nap"}}}`)
	for deadline := time.Now().Add(safetyNet); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(work, "napping")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nap tool never started\n%s", p.stderr.String())
		}
	}
	if len(marked(mark)) == 0 {
		t.Fatalf("no process has %s in its arguments: the test cannot see what is left behind", mark)
	}

	// It exits by itself (nothing here signals it); how soon is said, not
	// asserted: on a loaded machine a second is not a second.
	p.in.Close()
	closed := time.Now()
	select {
	case <-p.exited:
		t.Logf("exited %v after standard input closed", time.Since(closed).Round(time.Millisecond))
	case <-time.After(safetyNet):
		t.Fatalf("toolsrv mcp still runs %s after its standard input closed\n%s", safetyNet, p.stderr.String())
	}
	for deadline := time.Now().Add(safetyNet); ; time.Sleep(50 * time.Millisecond) {
		left := marked(mark)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running %s after toolsrv mcp exited: %v", safetyNet, left)
		}
	}
}

// marked lists the processes with mark in their command line (the
// tool, the server, their sandbox helpers) as "pid: command line".
func marked(mark string) []string {
	var out []string
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(mark)) {
			continue
		}
		out = append(out, filepath.Base(filepath.Dir(p))+": "+strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " "))
	}
	return out
}

// A client may write a script of requests and close standard input at
// once (printf ... | toolsrv mcp): every request read before the end is
// answered (within the second the server has to exit: a tool call may
// take longer on a loaded machine, so the script asks only what toolsrv
// answers itself), and then the server exits, with no warning about a
// context its own shutdown cancelled.
func TestMCPStdioAnswersRequestsReadBeforeTheEnd(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	work := mcpProject(t)
	script := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"find_tools","arguments":{"query":"search the files for TODO"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"no_such_tool"}}}`,
	}, "\n") + "\n"
	for run := range 3 { // the end of the input races with the answers: more than once
		cmd := osexec.Command(bin, "mcp", "--tools", tools, "--workdir", work)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
		cmd.Stdin = strings.NewReader(script)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: %v\n%s", run, err, stderr.String())
			}
		case <-time.After(safetyNet):
			cmd.Process.Kill()
			t.Fatalf("run %d: toolsrv mcp still runs %s after its input ended\n%s", run, safetyNet, stderr.String())
		}
		answers := map[float64]map[string]any{}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("run %d: output line %q: %v", run, line, err)
			}
			if id, ok := m["id"].(float64); ok {
				answers[id] = m
			}
		}
		for id, want := range map[float64]string{1: "find_tools", 2: "call_tool", 3: "file_grep", 4: "unknown tool: no_such_tool"} {
			m, ok := answers[id]
			if !ok {
				t.Fatalf("run %d: no answer to request %v\nstdout:\n%s\nstderr:\n%s", run, id, stdout.String(), stderr.String())
			}
			if b, _ := json.Marshal(m["result"]); m["result"] == nil || !strings.Contains(string(b), want) {
				t.Errorf("run %d: the answer to request %v does not hold %q: %v", run, id, want, m)
			}
		}
		if s := stderr.String(); strings.Contains(s, "context canceled") || strings.Contains(s, "unreadable") {
			t.Errorf("run %d: a warning about the shutdown's own cancellation:\n%s", run, s)
		}
	}
}
