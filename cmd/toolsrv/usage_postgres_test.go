package main

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// usageStatsJSON runs usage stats --json on dsn with HOME home.
func usageStatsJSON(t *testing.T, bin, dsn, home string) (st struct {
	Entries int
	Events  int64
	Pending int64
	Sources map[string]int64
}) {
	t.Helper()
	r := runToolsrvEnv(t, bin, []string{"HOME=" + home}, "", "usage", "stats", "--json", "--usage-db", dsn)
	if r.code != 0 {
		t.Fatalf("usage stats: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("usage stats --json: %v\n%s", err, r.stdout)
	}
	return st
}

// toolsrv processes on one PostgreSQL server share one history: three
// imports at once (3 × 2,000 events) land exactly once each, a repeated
// import adds nothing; an MCP session's call is seen by the others; with
// the server stopped, rank answers from the local copy and a recorded
// call waits in the spool (usage stats says so) until the server is back;
// usage forget empties the namespace.
func TestUsagePostgresProcesses(t *testing.T) {
	pg := testdeps.StartPostgres(t)
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	dsn := pg.URL("postgres", testdeps.PostgresPassword, "postgres")
	dir := t.TempDir()
	const n = 2000
	files := make([]string, 3)
	for i := range files {
		var b strings.Builder
		for j := 0; j < n; j++ {
			fmt.Fprintf(&b, `{"request": "instance %d asks thing %d", "tool": "calc", "agent": "a%d", "id": "%d-%d"}`+"\n", i, j, i, i, j)
		}
		files[i] = filepath.Join(dir, fmt.Sprint(i, ".jsonl"))
		if err := os.WriteFile(files[i], []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	outs := make([]string, 3)
	errs := make([]error, 3)
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := osexec.Command(bin, "usage", "import", "--tools", tools, "--usage-db", dsn, files[i])
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("import %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	home := t.TempDir()
	// Each event once; the entries capped as in the embedded store (64
	// per agent and tool).
	if st := usageStatsJSON(t, bin, dsn, home); st.Sources["import"] != 3*n || st.Entries != 3*64 || st.Pending != 0 {
		t.Fatalf("after 3 imports at once: %+v, want %d events in %d entries", st, 3*n, 3*64)
	}
	if r := runToolsrv(t, bin, "", "usage", "import", "--tools", tools, "--usage-db", dsn, files[1]); r.code != 0 {
		t.Fatalf("import again: %d %s", r.code, r.stderr)
	}
	if st := usageStatsJSON(t, bin, dsn, home); st.Sources["import"] != 3*n {
		t.Fatalf("a repeated import counted again: %v events, want %d", st.Sources, 3*n)
	}

	// An MCP session's call, seen by usage ls (another process).
	const q = "work out six times seven for me"
	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", mcpProject(t), "--no-cache", "--usage-db", dsn)
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_tools","arguments":{"query":"` + q + `"}}}`)
	p.await("find_tools' answer", time.Minute, hasID(2))
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"tool":"calc","arguments":{"expression":"6*7"}}}}`)
	if m := p.await("call_tool's answer", time.Minute, hasID(3)); !strings.Contains(mustJSON(m), "42") {
		t.Fatalf("call_tool calc: %v", m)
	}
	if r := runToolsrv(t, bin, "", "usage", "ls", "--tool", "calc", "--usage-db", dsn); !strings.Contains(r.stdout, q) {
		t.Fatalf("usage ls does not show the MCP session's call: %s%s", r.stdout, r.stderr)
	}

	// The server down: rank goes on from the local copy of its last read.
	rank := func() toolRun {
		return runToolsrvEnv(t, bin, []string{"HOME=" + home}, "", "rank", "--tools", tools, "--no-cache", "--usage-db", dsn, q)
	}
	up := rank()
	if up.code != 0 || up.stdout == "" {
		t.Fatalf("rank: exit %d, %s%s", up.code, up.stdout, up.stderr)
	}
	pg.Stop(t)
	down := rank()
	if down.code != 0 || down.stdout != up.stdout || !strings.Contains(down.stderr, "unreachable") {
		t.Errorf("rank with the server down: exit %d, %q (up: %q); stderr %s", down.code, down.stdout, up.stdout, down.stderr)
	}
	const q2 = "what is 2 plus 40"
	if r := runToolsrvEnv(t, bin, []string{"HOME=" + home}, "", "call", "--tools", tools, "--cwd", t.TempDir(), "--usage-db", dsn,
		"--for", q2, "calc", `{"expression":"2+40"}`); r.code != 0 || strings.TrimSpace(r.stdout) != "42" {
		t.Fatalf("call --for with the server down: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	r := runToolsrvEnv(t, bin, []string{"HOME=" + home}, "", "usage", "stats", "--usage-db", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "pending:  1 calls not yet in the shared store") {
		t.Errorf("usage stats with the server down: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	pg.Start(t)
	// The next process of that host sends it (at once, and at its end).
	if st := usageStatsJSON(t, bin, dsn, home); st.Pending > 1 {
		t.Fatalf("pending %d", st.Pending)
	}
	if st := usageStatsJSON(t, bin, dsn, home); st.Pending != 0 || st.Sources["import"] != 3*n || st.Sources["mcp"] != 1 || st.Sources["cli"] != 1 {
		t.Errorf("after the server is back: %+v, want %d imported, 1 by MCP, 1 by the CLI, none pending", st, 3*n)
	}
	if r := runToolsrv(t, bin, "", "usage", "ls", "--tool", "calc", "--usage-db", dsn); !strings.Contains(r.stdout, q2) {
		t.Errorf("usage ls does not show the call made while the server was down: %s%s", r.stdout, r.stderr)
	}

	if r := runToolsrv(t, bin, "", "usage", "forget", "--all", "--usage-db", dsn); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("forgot %d entries", 3*64+2)) {
		t.Errorf("usage forget --all: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	if st := usageStatsJSON(t, bin, dsn, t.TempDir()); st.Entries != 0 {
		t.Errorf("after forget --all: %+v", st)
	}
}
