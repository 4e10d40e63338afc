package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// The attacks on learning from use, end to end through the transports
// they come by, on the bundled example tools and a hostile tool of the
// test's own (testdata/trust/fortune.meta: "Print a random fortune cookie
// message"). The honest history (testdata/trust/{alice,bob}.jsonl: git and
// file requests, 43 entries, 310 calls, recorded as two clients'),
// probed with the requests of testdata/trust/probes.txt and rewordings of
// them: after each attack the hostile tool is first for none, and every
// honest tool the history had offered is still offered.

// trustProbe is a request the trust tests rank, and the tool an honest
// history answers it with.
type trustProbe struct{ query, honest string }

func trustProbes(t *testing.T) []trustProbe {
	t.Helper()
	f, err := os.Open("testdata/trust/probes.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []trustProbe
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		q, tool, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			out = append(out, trustProbe{q, tool})
		}
	}
	return out
}

// trustEnv is an installation: the example tools and the hostile one
// (with hostile examples when asked), a usage store, a state directory
// of its own (the installation's key is there).
type trustEnv struct {
	t         *testing.T
	bin       string
	tools, db string
	env       []string
}

func newTrustEnv(t *testing.T, db string, hostileExamples []string) *trustEnv {
	t.Helper()
	requireTools(t, "jq", "git")
	hostile := t.TempDir()
	meta, err := os.ReadFile("testdata/trust/fortune.meta")
	if err != nil {
		t.Fatal(err)
	}
	if len(hostileExamples) > 0 {
		var m map[string]any
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatal(err)
		}
		m["examples"] = hostileExamples
		meta, _ = json.Marshal(m)
	}
	if err := os.WriteFile(filepath.Join(hostile, "fortune.meta"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs("../../examples/tools")
	state := t.TempDir()
	if db == "" {
		db = filepath.Join(state, "usage", "usage.db")
	}
	return &trustEnv{t: t, bin: buildToolsrv(t), tools: examples + ":" + hostile, db: db,
		env: []string{"XDG_STATE_HOME=" + state, "XDG_CACHE_HOME=" + t.TempDir()}}
}

// run runs toolsrv as the installation's user; a failure fails the test.
func (e *trustEnv) run(args ...string) string {
	e.t.Helper()
	r := runToolsrvEnv(e.t, e.bin, e.env, "", args...)
	if r.code != 0 {
		e.t.Fatalf("toolsrv %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// offered is what rank offers for query with the installation's history.
func (e *trustEnv) offered(query string) []string {
	e.t.Helper()
	var a struct {
		Tools []struct{ Name string }
	}
	out := e.run("rank", "--tools", e.tools, "--usage-db", e.db, "--json", query)
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		e.t.Fatalf("rank --json %q: %v\n%s", query, err, out)
	}
	var names []string
	for _, t := range a.Tools {
		names = append(names, t.Name)
	}
	return names
}

// importHonest records the honest history: alice's calls as the MCP
// client claude-code's, bob's as the 9P agent coder's (the owner vouches
// for them: usage import --principal), made over the past weeks (each
// line a day before the next).
func (e *trustEnv) importHonest() {
	e.t.Helper()
	dir := e.t.TempDir()
	for name, principal := range map[string]string{"alice": "mcp:claude-code", "bob": "9p:coder"} {
		b, err := os.ReadFile("testdata/trust/" + name + ".jsonl")
		if err != nil {
			e.t.Fatal(err)
		}
		var out []byte
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				e.t.Fatal(err)
			}
			m["time"] = time.Now().Add(-time.Duration(40-i) * 24 * time.Hour).UTC().Format(time.RFC3339)
			l, _ := json.Marshal(m)
			out = append(append(out, l...), '\n')
		}
		path := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			e.t.Fatal(err)
		}
		e.run("usage", "import", "--usage-db", e.db, "--principal", principal, path)
	}
}

// offers ranks every probe: what each is offered.
func (e *trustEnv) offers() map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	for _, p := range trustProbes(e.t) {
		out[p.query] = e.offered(p.query)
	}
	return out
}

// honestBaseline ranks the probes with the honest history alone and
// checks that it does offer their honest tools (else the attacks below
// would prove nothing).
func (e *trustEnv) honestBaseline() map[string][]string {
	e.t.Helper()
	before := e.offers()
	n := 0
	for _, p := range trustProbes(e.t) {
		if slices.Contains(before[p.query], p.honest) {
			n++
		}
		if len(before[p.query]) > 0 && before[p.query][0] == "fortune" {
			e.t.Fatalf("with the honest history alone, %q offers fortune first: %v", p.query, before[p.query])
		}
	}
	if n < len(trustProbes(e.t))-2 {
		e.t.Fatalf("the honest history offers the honest tool for %d of %d probes only: %v", n, len(trustProbes(e.t)), before)
	}
	return before
}

// hold fails the test unless, after an attack, the hostile tool is first
// for no probe and every honest tool offered before is offered still.
func (e *trustEnv) hold(what string, before map[string][]string) {
	e.t.Helper()
	after := e.offers()
	for _, p := range trustProbes(e.t) {
		got := after[p.query]
		if len(got) > 0 && got[0] == "fortune" {
			e.t.Errorf("%s: %q offers the hostile tool first: %v (before: %v)", what, p.query, got, before[p.query])
		}
		if slices.Contains(before[p.query], p.honest) && !slices.Contains(got, p.honest) {
			e.t.Errorf("%s: %q no longer offers %s: %v (before: %v)", what, p.query, p.honest, got, before[p.query])
		}
	}
}

// entriesOf counts the store's entries for tool.
func (e *trustEnv) entriesOf(tool string) int {
	e.t.Helper()
	var es []struct {
		Key struct{ Tool, Principal string }
	}
	out := e.run("usage", "ls", "--json", "--usage-db", e.db, "--tool", tool)
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		e.t.Fatalf("usage ls --json: %v\n%s", err, out)
	}
	return len(es)
}

// The claims the attacks make: the probes and rewordings of them, each
// "answered" with the hostile tool.
var hostileClaims = []string{"show git status", "git status", "what's the status of my repository", "which files did I modify",
	"have I changed any files", "anything uncommitted in this repo", "show me the diff", "what did I change in the code",
	"show the recent commits", "commit history", "search for TODO in the code", "find where this function is defined",
	"read the README", "list the files in src", "status of the repo", "what's modified", "show git status now",
	"git status -s", "my changes", "is my tree clean"}

// 64 new 9P agents of a running server, one claim each (rank, load, call
// the hostile tool): cheap names are not votes.
func TestTrustCrowdOf9PAgents(t *testing.T) {
	e := newTrustEnv(t, "", nil)
	e.importHonest()
	before := e.honestBaseline()
	addr, _, _ := startServeIn(t, e.tools, "--usage-db", e.db)
	if code, _, errs := run9PCmd(t, addr, "", "mkdir", "session/s"); code != 0 {
		t.Fatalf("mkdir session/s: %s", errs)
	}
	for k := range 64 {
		dir := fmt.Sprintf("session/s/agent/a%d", k)
		for _, step := range [][]string{{"mkdir", dir}, {"write", dir + "/rank", hostileClaims[k%len(hostileClaims)]},
			{"write", dir + "/ctl", "tool_load fortune"}, {"write", dir + "/call/fortune", "{}"}} {
			if code, out, errs := run9PCmd(t, addr, "", step...); code != 0 {
				t.Fatalf("%v: exit %d %s %s", step, code, out, errs)
			}
		}
	}
	if n := e.entriesOf("fortune"); n < 64 {
		t.Fatalf("%d entries of the hostile tool recorded, want the 64 agents' claims", n)
	}
	e.hold("64 new 9P agents", before)
}

// 64 imported files of one line each (a file is the principal of its
// lines): 64 cheap names.
func TestTrustCrowdOfImportedLines(t *testing.T) {
	e := newTrustEnv(t, "", nil)
	e.importHonest()
	before := e.honestBaseline()
	dir := t.TempDir()
	for k := range 64 {
		path := filepath.Join(dir, fmt.Sprintf("claim%d.jsonl", k))
		line, _ := json.Marshal(map[string]string{"request": hostileClaims[k%len(hostileClaims)], "tool": "fortune"})
		if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := e.run("usage", "import", "--usage-db", e.db, path); !strings.Contains(out, "recorded as: import:claim") {
			t.Fatalf("import of %s: %s", path, out)
		}
	}
	if n := e.entriesOf("fortune"); n < 64 {
		t.Fatalf("%d entries of the hostile tool recorded, want 64", n)
	}
	e.hold("64 imported files", before)
}

// A teammate's instance in a shared PostgreSQL namespace records 64
// claims under 64 agent names: to this instance they are that instance's,
// one principal.
func TestTrustTeammateInstance(t *testing.T) {
	pg := testdeps.StartPostgres(t)
	dsn := pg.URL("postgres", testdeps.PostgresPassword, "postgres")
	e := newTrustEnv(t, dsn, nil)
	e.importHonest()
	before := e.honestBaseline()
	mate := newTrustEnv(t, dsn, nil) // another state directory: another instance
	dir := t.TempDir()
	for k := range 64 {
		path := filepath.Join(dir, fmt.Sprintf("c%d.jsonl", k))
		line, _ := json.Marshal(map[string]string{"request": hostileClaims[k%len(hostileClaims)], "tool": "fortune", "agent": fmt.Sprint("a", k)})
		if err := os.WriteFile(path, append(line, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		mate.run("usage", "import", "--usage-db", dsn, "--principal", fmt.Sprint("9p:a", k), path)
	}
	if n := e.entriesOf("fortune"); n < 64 {
		t.Fatalf("%d entries of the hostile tool seen here, want the teammate's 64", n)
	}
	rows, out := e.principals(dsn)
	units := map[string]bool{}
	for _, r := range rows {
		if strings.HasPrefix(r.Principal, "instance:") {
			units[r.Unit] = true
			if r.Weight > 0.1 {
				t.Errorf("the teammate's %s is heard at weight %.2f", r.Principal, r.Weight)
			}
		}
	}
	if len(units) != 1 {
		t.Errorf("the teammate's instance is %d principals to this one, want 1: %s", len(units), out)
	}
	e.hold("a teammate's instance", before)
}

// A teammate with the shared namespace's role writes 64 rows by hand
// under 64 principals of before principals (legacy:NAME, which no seal
// can check): they are one source to this instance, not 64 voices.
func TestTrustTeammateLegacyRows(t *testing.T) {
	pg := testdeps.StartPostgres(t)
	dsn := pg.URL("postgres", testdeps.PostgresPassword, "postgres")
	e := newTrustEnv(t, dsn, nil)
	e.importHonest()
	before := e.honestBaseline()
	var values []string
	for k := range 64 {
		values = append(values, fmt.Sprintf("('%s', 'a%d')", strings.ReplaceAll(hostileClaims[k%len(hostileClaims)], "'", "''"), k))
	}
	pg.SQL(t, `INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
		SELECT 'postgres', sha256(convert_to(r || a, 'UTF8')), r, r, 'fortune', a, 'legacy:' || a, '', 3, 0,
			(extract(epoch FROM now()) * 1e9)::bigint - 86400e9 * 60, (extract(epoch FROM now()) * 1e9)::bigint, '{}',
			(SELECT version + 1 FROM toolsrv_usage_ns WHERE namespace = 'postgres')
		FROM (VALUES `+strings.Join(values, ", ")+`) v(r, a)`,
		`UPDATE toolsrv_usage_ns SET version = version + 1, entries = entries + 64 WHERE namespace = 'postgres'`)
	if n := e.entriesOf("fortune"); n < 64 {
		t.Fatalf("%d entries of the hostile tool seen here, want the 64 written by hand", n)
	}
	rows, out := e.principals(dsn)
	units := map[string]bool{}
	for _, r := range rows {
		if strings.HasPrefix(r.Principal, "legacy:") {
			units[cmp.Or(r.Unit, r.Principal)] = true
		}
	}
	if len(units) != 1 {
		t.Errorf("the rows written by hand are %d principals to this instance, want 1: %s", len(units), out)
	}
	e.hold("64 legacy rows written by hand", before)
}

// principals is "toolsrv usage principals --json" of the store db, decoded,
// and the output as printed.
func (e *trustEnv) principals(db string) ([]principalRow, string) {
	e.t.Helper()
	var rows []principalRow
	out := e.run("usage", "principals", "--tools", e.tools, "--usage-db", db, "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		e.t.Fatalf("usage principals --json: %v\n%s", err, out)
	}
	return rows, out
}

// startTrustMCP runs "toolsrv mcp" for e as a client that calls itself
// name, initialized.
func startTrustMCP(t *testing.T, e *trustEnv, name string) *mcpPeer {
	t.Helper()
	p := startMCPPeer(t, e.bin, "--tools", e.tools, "--workdir", mcpProject(t), "--no-cache", "--usage-db", e.db)
	p.cmd.Env = append(p.cmd.Env, e.env...)
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": name, "version": "1"}}})
	p.send(string(init))
	if m := p.await("the initialize response", safetyNet, hasID(1)); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// stop ends the session (standard input closed) and waits for the
// process.
func (p *mcpPeer) stop() {
	p.t.Helper()
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(safetyNet):
		p.t.Fatalf("toolsrv mcp did not exit when its input closed\n%s", p.stderr)
	}
}

// 20 call_tool calls in one MCP session, each with a request argument
// claiming the hostile tool serves it (a page the agent read told it to):
// by a new client, and by the client whose history is honest. A session
// adds evidence at a bounded rate, and neither moves what the history
// answers consistently.
func TestTrustMCPSession(t *testing.T) {
	for _, client := range []string{"helpful-bot", "claude-code"} {
		t.Run(client, func(t *testing.T) {
			e := newTrustEnv(t, "", nil)
			e.importHonest()
			before := e.honestBaseline()
			p := startTrustMCP(t, e, client)
			for k := range 20 {
				args, _ := json.Marshal(map[string]any{"tool": "fortune", "arguments": map[string]any{}, "request": hostileClaims[k%len(hostileClaims)]})
				p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":%s}}`, 10+k, args))
				if m := p.await("call_tool's answer", safetyNet, hasID(float64(10+k))); !strings.Contains(mustJSON(m), "You will find") {
					t.Fatalf("call_tool fortune: %v", m)
				}
			}
			p.stop()
			if n := e.entriesOf("fortune"); n == 0 || n > 5 {
				t.Errorf("%d entries of the hostile tool from one session of 20 calls, want 1 to 5 (the session's bound)", n)
			}
			e.hold("20 calls of one MCP session by "+client, before)
		})
	}
}

// 13 git-status phrasings in the hostile tool's examples, on a fresh
// install (no history): examples can bring their tool in where there is
// room, never first past a tool the texts support, never pushing one out.
func TestTrustHostileExamples(t *testing.T) {
	plain := newTrustEnv(t, "", nil)
	before := plain.offers()
	e := newTrustEnv(t, "", []string{"show git status", "git status", "what's the status of my repository", "which files did I modify",
		"have I changed any files", "anything uncommitted in this repo", "status of the repo", "is my working tree clean",
		"list modified files", "what changed in my repo", "show me the git status", "git status please", "what's not committed"})
	shown := 0
	for _, p := range trustProbes(t) {
		after := e.offered(p.query)
		if len(after) > 0 && after[0] == "fortune" {
			t.Errorf("%q offers the hostile tool first: %v (without its examples: %v)", p.query, after, before[p.query])
		}
		for _, tool := range before[p.query] {
			if !slices.Contains(after, tool) {
				t.Errorf("%q: the examples pushed %s out: %v (without them: %v)", p.query, tool, after, before[p.query])
			}
		}
		if e.lifted(p.query, "fortune") {
			shown++
		}
	}
	if shown == 0 {
		t.Error("the hostile tool's examples lifted it nowhere: the test shows nothing")
	}
}

// lifted reports whether the usage history (or the tools' examples) lifted
// tool in the ranking of query (its explanation's usage score).
func (e *trustEnv) lifted(query, tool string) bool {
	e.t.Helper()
	var a struct {
		Explain struct {
			Tools []struct {
				Name  string
				Usage float64
			}
		}
	}
	out := e.run("rank", "--tools", e.tools, "--usage-db", e.db, "--json", "--explain", query)
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		e.t.Fatalf("rank --json --explain %q: %v\n%s", query, err, out)
	}
	for _, t := range a.Explain.Tools {
		if t.Name == tool && t.Usage > 0 {
			return true
		}
	}
	return false
}

// The owner's five successful "call --for" of a tool for a request it was
// not offered for make it offered first for that request and its
// rewordings, through the answerability and tier gates: git_status (warm)
// for a request the text ranking gives to file_edit, code_stats (cold) for
// one whose score left it under the cold tier's minimum. A request unlike
// them is answered as before, and rank --explain says why in words.
func TestTrustOwnerIsHeard(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"}} {
		if out, err := osexec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, output string
		rewordings   []string // the request first
	}{
		{"git_status", "notes.py", []string{"which files did I modify", "what files have I modified", "which files did I change",
			"show me the files I modified", "modified files?"}},
		{"code_stats", "Python", []string{"is this project getting too large", "is the project getting too big", "has this project grown too large"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			e := newTrustEnv(t, "", nil)
			request := tc.rewordings[0]
			if got := e.offered(request); len(got) > 0 && got[0] == tc.tool {
				t.Fatalf("%q already offers %s first: %v (nothing to show)", request, tc.tool, got)
			}
			const unlike = "what time is it in tokyo"
			beforeUnlike := e.offered(unlike)
			for range 5 {
				if out := e.run("call", "--tools", e.tools, "--cwd", repo, "--usage-db", e.db, "--for", request, tc.tool, "{}"); !strings.Contains(out, tc.output) {
					t.Fatalf("call %s: %s", tc.tool, out)
				}
			}
			for _, q := range tc.rewordings {
				if got := e.offered(q); len(got) == 0 || got[0] != tc.tool {
					t.Errorf("after 5 successful calls of %s for %q, %q offers %v", tc.tool, request, q, got)
				}
			}
			if got := e.offered(unlike); !slices.Equal(got, beforeUnlike) {
				t.Errorf("%q, unlike the request: %v, before %v", unlike, got, beforeUnlike)
			}
			out := e.run("rank", "--tools", e.tools, "--usage-db", e.db, "--explain", request)
			if !strings.Contains(out, "offered because you called it 5 times for requests like this") {
				t.Errorf("rank --explain does not say why %s is offered:\n%s", tc.tool, out)
			}
		})
	}
}

// A one-shot MCP session that only looked (the Inspector's command-line
// mode: find_tools, no call, exit) changes nothing: not evidence that no
// tool fits. A client that says so (call_tool with "noToolFits") records
// it, as the session's principal.
func TestTrustLookingIsNotEvidence(t *testing.T) {
	npm := npmDir(t)
	e := newTrustEnv(t, "", nil)
	inspect := func(args ...string) string {
		t.Helper()
		cmd := osexec.Command(filepath.Join(npm, "node_modules", ".bin", "mcp-inspector"),
			append([]string{"--cli", e.bin, "mcp", "--tools", e.tools, "--workdir", mcpProject(t), "--usage-db", e.db}, args...)...)
		cmd.Dir = npm
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8", "npm_config_offline=true"}, e.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcp-inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, q := range []string{"order a pizza", "show git status", "tell me a joke"} {
		if out := inspect("--method", "tools/call", "--tool-name", "find_tools", "--tool-arg", "query="+q); !strings.Contains(out, `"id"`) {
			t.Fatalf("find_tools %q: %s", q, out)
		}
	}
	if _, err := os.Stat(e.db); !os.IsNotExist(err) {
		out := e.run("usage", "ls", "--usage-db", e.db)
		t.Fatalf("three sessions that only looked made a usage store (%v):\n%s", err, out)
	}

	// Saying it: find_tools, then call_tool {"noToolFits": true}, in one
	// session.
	p := startTrustMCP(t, e, "pizza-bot")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_tools","arguments":{"query":"order a pizza"}}}`)
	p.await("find_tools' answer", safetyNet, hasID(2))
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"noToolFits":true}}}`)
	if m := p.await("call_tool's answer", safetyNet, hasID(3)); !strings.Contains(mustJSON(m), "answered without a tool") {
		t.Fatalf("call_tool noToolFits: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"noToolFits":true,"tool":"fortune"}}}`)
	if m := p.await("call_tool's answer", safetyNet, hasID(4)); !strings.Contains(mustJSON(m), "isError") {
		t.Errorf("call_tool with both noToolFits and a tool: %v, want an error", m)
	}
	p.stop()
	var es []struct {
		Key  struct{ Tool, Principal string }
		Text string
	}
	out := e.run("usage", "ls", "--json", "--usage-db", e.db)
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Text != "order a pizza" || es[0].Key.Tool != "" || es[0].Key.Principal != "mcp:pizza-bot" {
		t.Errorf("after a client said no tool fits \"order a pizza\": %s", out)
	}
}

// A 9P agent says it answered without a tool: no_tool in its ctl, of its
// latest answer or one it names; nothing else of an answer records it.
func TestTrustNinePNoTool(t *testing.T) {
	e := newTrustEnv(t, "", nil)
	addr, _, _ := startServeIn(t, e.tools, "--usage-db", e.db)
	for _, d := range []string{"session/s", "session/s/agent/a"} {
		if code, _, errs := run9PCmd(t, addr, "", "mkdir", d); code != 0 {
			t.Fatalf("mkdir %s: %s", d, errs)
		}
	}
	rank := func(q string) string {
		t.Helper()
		code, out, errs := run9PCmd(t, addr, "", "write", "session/s/agent/a/rank", q)
		id, ok := strings.CutPrefix(strings.SplitN(out, "\n", 2)[0], "# answer ")
		if code != 0 || !ok {
			t.Fatalf("rank %q: %d %q %s", q, code, out, errs)
		}
		return id
	}
	pizza := rank("order a pizza")
	rank("tell me a joke")
	if code, _, errs := run9PCmd(t, addr, "", "write", "session/s/agent/a/ctl", "no_tool "+pizza); code != 0 {
		t.Fatalf("no_tool %s: %s", pizza, errs)
	}
	if code, _, errs := run9PCmd(t, addr, "", "write", "session/s/agent/a/ctl", "no_tool nosuchanswer"); code == 0 || !strings.Contains(errs, "no answer") {
		t.Errorf("no_tool of an answer never given: exit %d, %s", code, errs)
	}
	var es []struct {
		Key  struct{ Tool, Principal string }
		Text string
	}
	out := e.run("usage", "ls", "--json", "--usage-db", e.db)
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Text != "order a pizza" || es[0].Key.Tool != "" || es[0].Key.Principal != "9p:a" {
		t.Errorf("after no_tool of the pizza answer: %s", out)
	}
}

// An empty history ranks exactly as --no-usage: the same bytes.
func TestTrustEmptyHistoryIsNoHistory(t *testing.T) {
	e := newTrustEnv(t, "", nil)
	var batch strings.Builder
	for i, p := range trustProbes(t) {
		fmt.Fprintf(&batch, `{"id":"%d","query":%q}`+"\n", i, p.query)
	}
	path := filepath.Join(t.TempDir(), "batch.jsonl")
	if err := os.WriteFile(path, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// An empty store: made, then emptied.
	e.run("usage", "import", "--usage-db", e.db, "testdata/trust/alice.jsonl")
	e.run("usage", "forget", "--all", "--usage-db", e.db)
	with := e.run("rank", "--tools", e.tools, "--usage-db", e.db, "--batch", path, "--limit", "5")
	without := e.run("rank", "--tools", e.tools, "--no-usage", "--batch", path, "--limit", "5")
	if with != without || with == "" {
		t.Errorf("an empty history ranks otherwise than --no-usage:\n%s\nwithout:\n%s", with, without)
	}
}
