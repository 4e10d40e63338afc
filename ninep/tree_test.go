package ninep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

func TestRootListing(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	ents, err := cl.List("/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range ents {
		n := en.Name
		if en.Dir {
			n += "/"
		}
		got = append(got, n)
	}
	want := []string{"ctl", "err", "errors", "rank", "rank.json", "revision", "session/", "tools", "tools.json", "version"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("root = %v, want %v", got, want)
	}
}

func TestCatalogFiles(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	cat := e.reg.Catalog()

	tools := mustRead(t, cl, "tools")
	wantLines := []string{
		"echo_text\twarm\tEcho a text back.",
		"file_read\thot\tRead a text file and return its contents.",
		"git_push\tcold\tPush the current git branch to its remote.",
		"weather\twarm\tCurrent weather forecast for a city.",
	}
	if got := strings.Split(strings.TrimSpace(tools), "\n"); !reflect.DeepEqual(got, wantLines) {
		t.Fatalf("tools =\n%s\nwant\n%s", tools, strings.Join(wantLines, "\n"))
	}

	var doc struct {
		Revision uint64 `json:"revision"`
		Tools    []struct {
			Name string          `json:"name"`
			Tier string          `json:"tier"`
			Args json.RawMessage `json:"args"`
		} `json:"tools"`
		Hidden []struct{ Name string } `json:"hidden"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, cl, "tools.json")), &doc); err != nil {
		t.Fatalf("tools.json: %v", err)
	}
	if doc.Revision != cat.Revision || len(doc.Tools) != 4 || doc.Tools[1].Name != "file_read" || doc.Tools[1].Tier != "hot" {
		t.Fatalf("tools.json = %+v", doc)
	}
	if !strings.Contains(string(doc.Tools[1].Args), `"required"`) {
		t.Fatalf("tools.json lacks the schema: %s", doc.Tools[1].Args)
	}
	if len(doc.Hidden) != 1 || doc.Hidden[0].Name != "elsewhere" {
		t.Fatalf("tools.json hidden = %+v", doc.Hidden)
	}

	if got := mustRead(t, cl, "revision"); got != strconv.FormatUint(cat.Revision, 10)+"\n" {
		t.Fatalf("revision = %q, want %d", got, cat.Revision)
	}
	errs := mustRead(t, cl, "errors")
	if !strings.Contains(errs, "broken.meta") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("errors = %q, want one line about broken.meta", errs)
	}
	if got := mustRead(t, cl, "err"); got != "" {
		t.Fatalf("err before any refusal = %q", got)
	}

	// GetAttr reports the real size of what a read returns.
	for _, p := range []string{"tools", "tools.json", "revision", "errors"} {
		size, mode, err := cl.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(mustRead(t, cl, p)); size != uint64(n) {
			t.Errorf("stat %s size = %d, read %d bytes", p, size, n)
		}
		if mode.Permissions() != 0o444 || !mode.IsRegular() {
			t.Errorf("stat %s mode = %o", p, mode)
		}
	}
}

func TestReadOnlyFilesRefuseWrites(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	for _, p := range []string{"tools", "tools.json", "revision", "errors", "err", "session/s/agent/a/schemas", "session/s/agent/a/err"} {
		err := cl.Write(p, []byte("x\n"))
		wantRefused(t, err, linux.EACCES, "/"+p+" is read-only")
	}
	// The agent's err has the agent's refusals.
	if got := mustRead(t, cl, "session/s/agent/a/err"); !strings.Contains(got, "/session/s/agent/a/err is read-only") {
		t.Fatalf("agent err = %q", got)
	}
	// /ctl is write-only.
	_, err := cl.Read("ctl")
	wantRefused(t, err, linux.EACCES, "/ctl is write-only")
	// No new files anywhere.
	f, err := cl.walk("session/s/agent/a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, _, err = f.Create("new", p9.ReadWrite, 0o644, p9.NoUID, p9.NoGID)
	if err != linux.EPERM {
		t.Fatalf("create = %v, want EPERM", err)
	}
	if got := mustRead(t, cl, "err"); !strings.Contains(got, "cannot create files") {
		t.Fatalf("err after create = %q", got)
	}
	wantRefused(t, cl.Remove("tools"), linux.EPERM, "cannot remove /tools")
	wantRefused(t, cl.Mkdir("newdir"), linux.EPERM, "cannot create directories in /")
}

func TestRootRank(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	ans, err := cl.Transact("rank", []byte("will it rain? temperature forecast please"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ans)), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "weather\t") {
		t.Fatalf("rank answer = %q, want weather first", ans)
	}
	score, err := strconv.ParseFloat(strings.Split(lines[0], "\t")[1], 64)
	if err != nil || score <= 0 || score > 1 {
		t.Fatalf("score in %q: %v", lines[0], err)
	}
	// JSON form with k.
	ans, err = cl.Transact("rank", []byte(`{"query": "read the file contents and push to the remote", "k": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(string(ans)); len(got) != 1 {
		t.Fatalf("k=1 answer = %q", ans)
	}
	// rank.json: the same answer as the engine's Answer in JSON.
	ans, err = cl.Transact("rank.json", []byte(`{"query": "read the file contents and push to the remote", "limit": "1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var a engine.Answer
	if err := json.Unmarshal(ans, &a); err != nil || len(a.Tools) != 1 || !bytes.HasSuffix(ans, []byte("}\n")) {
		t.Fatalf("rank.json limit 1 = %q (%v), want one JSON line with one tool", ans, err)
	}
	if text, _ := cl.Transact("rank", []byte("read the file contents and push to the remote")); names(string(text))[0] != a.Tools[0].Name {
		t.Errorf("rank.json offers %s first, rank %q", a.Tools[0].Name, text)
	}
	// Refusals.
	_, err = cl.Transact("rank", []byte("   \n"))
	wantRefused(t, err, linux.EINVAL, "empty message")
	_, err = cl.Transact("rank", []byte(`{"query": "x",}`))
	wantRefused(t, err, linux.EINVAL, "not valid JSON")
	_, err = cl.Transact("rank", []byte(`{"query": 3}`))
	wantRefused(t, err, linux.EINVAL, `"query" must be a string`)
	_, err = cl.Transact("rank", []byte(`{"query": "x", "limit": -2}`))
	wantRefused(t, err, linux.EINVAL, `"limit" -2: must be a positive integer`)
}

func TestRankDegradedAndUnavailable(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Ranker = rankerFunc(func(_ context.Context, q engine.Request) (engine.Answer, error) {
			return engine.Answer{Tools: []engine.Offer{{Hit: index.Hit{Name: "weather", Score: 0.5}}}, Degraded: true, DegradedReason: "embedder unreachable"}, nil
		})
	})
	ans, err := e.client().Transact("rank", []byte("rain"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# degraded: embedder unreachable\nweather\t0.5000\n"; string(ans) != want {
		t.Fatalf("answer = %q, want %q", ans, want)
	}
	e2 := newEnv(t, func(o *Options) { o.Ranker = nil })
	_, err = e2.client().Transact("rank", []byte("rain"))
	wantRefused(t, err, linux.ENOSYS, "ranking is not available")
}

func TestRootCtlReload(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	rev := mustRead(t, cl, "revision")
	meta := `{"description": "Translate text between languages.", "cmd": "/bin/cat"}`
	if err := os.WriteFile(filepath.Join(e.tools, "translate.meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, cl, "ctl", "reload\n")
	if got := mustRead(t, cl, "revision"); got == rev {
		t.Fatalf("revision still %q after reload", got)
	}
	if !strings.Contains(mustRead(t, cl, "tools"), "translate\twarm\tTranslate text between languages.") {
		t.Fatal("tools lacks the new tool after reload")
	}
	wantRefused(t, cl.Write("ctl", []byte("explode")), linux.EINVAL, `unknown command "explode"`, "reload")
	if got := mustRead(t, cl, "err"); !strings.Contains(got, `unknown command "explode"`) {
		t.Fatalf("err = %q", got)
	}
}

func TestSessionsAndAgents(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s1")
	mustMkdir(t, cl, "session/s2")
	wantRefused(t, cl.Mkdir("session/s1"), linux.EEXIST, "session s1 already exists")
	wantRefused(t, cl.Mkdir("session/-bad"), linux.EINVAL, "bad session name")
	ents, err := cl.List("session")
	if err != nil || len(ents) != 2 || ents[0].Name != "s1" || !ents[0].Dir || ents[1].Name != "s2" {
		t.Fatalf("session/ = %+v, %v", ents, err)
	}
	ents, err = cl.List("session/s1")
	var names []string
	for _, en := range ents {
		names = append(names, en.Name)
	}
	if want := []string{"agent", "ctl", "err", "errors", "meta", "revision", "tools", "tools.json"}; err != nil || !reflect.DeepEqual(names, want) {
		t.Fatalf("session/s1 = %v, %v; want %v", names, err, want)
	}

	mustMkdir(t, cl, "session/s1/agent/plain")
	wantRefused(t, cl.Mkdir("session/s1/agent/plain"), linux.EEXIST, "agent plain already exists")
	wantRefused(t, cl.Mkdir("session/s1/agent/badprofile"), linux.EINVAL, "agent badprofile", "JSON object")
	wantRefused(t, cl.Mkdir("session/s1/agent/a b"), linux.EINVAL, "bad agent name")
	wantRefused(t, cl.Mkdir("session/nope/agent/x"), linux.ENOENT, "/session/nope")

	ents, err = cl.List("session/s1/agent/plain")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range ents {
		got = append(got, en.Name)
	}
	if want := []string{"call", "ctl", "err", "rank", "rank.json", "schemas", "tools"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("agent dir = %v, want %v", got, want)
	}

	// Sessions are shared by connections: another client sees and ends it.
	other := e.client()
	if got := mustRead(t, other, "session/s1/agent/plain/ctl"); !strings.Contains(got, "turn 0") {
		t.Fatalf("other connection's ctl read = %q", got)
	}
	// A file opened before the agent ends answers ENOENT afterwards.
	f, err := cl.walk("session/s1/agent/plain/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := other.Remove("session/s1/agent/plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("weather\n"), 0); err != linux.ENOENT {
		t.Fatalf("write to an ended agent = %v, want ENOENT", err)
	}
	if got := mustRead(t, cl, "err"); !strings.Contains(got, "agent plain of session s1 has ended") {
		t.Fatalf("err = %q", got)
	}
	_, err = cl.Read("session/s1/agent/plain/tools")
	wantRefused(t, err, linux.ENOENT)
	wantRefused(t, other.Remove("session/s1/agent/plain"), linux.ENOENT, "no agent plain")

	if err := cl.Remove("session/s1"); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, cl.Remove("session/s1"), linux.ENOENT)
	ents, _ = cl.List("session")
	if len(ents) != 1 || ents[0].Name != "s2" {
		t.Fatalf("after rm: %+v", ents)
	}
}

// TestRmRecursive removes a session the way rm -r does: files first, then
// directories bottom-up.
func TestRmRecursive(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/coder")
	for _, p := range []string{
		"session/s/agent/coder/tools", "session/s/agent/coder/ctl", "session/s/agent/coder/call/file_read",
		"session/s/agent/coder/call", "session/s/agent/coder", "session/s/agent", "session/s/ctl", "session/s",
	} {
		if err := cl.Remove(p); err != nil {
			t.Fatalf("rm %s: %v", p, err)
		}
	}
	if ents, _ := cl.List("session"); len(ents) != 0 {
		t.Fatalf("session/ after rm -r = %+v", ents)
	}
}

func TestSessionCtl(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	if got := mustRead(t, cl, "session/s/ctl"); got != "cwd "+e.srv.opts.WorkDir+"\n" {
		t.Fatalf("session ctl = %q", got)
	}
	d := t.TempDir()
	mustWrite(t, cl, "session/s/ctl", "cwd "+d)
	if got := mustRead(t, cl, "session/s/ctl"); got != "cwd "+d+"\n" {
		t.Fatalf("session ctl = %q", got)
	}
	wantRefused(t, cl.Write("session/s/ctl", []byte("cwd relative/dir")), linux.EINVAL, "absolute path")
	wantRefused(t, cl.Write("session/s/ctl", []byte("cwd /nonexistent/dir")), linux.ENOENT)
	wantRefused(t, cl.Write("session/s/ctl", []byte("chdir /")), linux.EINVAL, "unknown command")

	// Calls run in the session's directory.
	mustMkdir(t, cl, "session/s/agent/a")
	mustWrite(t, cl, "session/s/agent/a/ctl", "tool_load echo_text")
	if _, err := cl.Transact("session/s/agent/a/call/echo_text", []byte(`{"text": "hi"}`)); err != nil {
		t.Fatal(err)
	}
	e.caller.mu.Lock()
	defer e.caller.mu.Unlock()
	if want := (exec.CallContext{WorkDir: d, Session: "s", Agent: "a"}); e.caller.calls[0].Context != want {
		t.Fatalf("call context = %+v, want %+v", e.caller.calls[0].Context, want)
	}
}

func TestProfiles(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/coder")
	a := "session/s/agent/coder/"
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"file_read", "git_push"}) {
		t.Fatalf("autoLoad: tools = %v", got)
	}
	if ctl := mustRead(t, cl, a+"ctl"); !strings.Contains(ctl, "autoLoad no_such_tool skipped: unknown tool: no_such_tool") {
		t.Fatalf("ctl = %q", ctl)
	}
	// allowTools limits loads, by either file.
	wantRefused(t, cl.Write(a+"tools", []byte("weather\n")), linux.EACCES, "tool weather is not allowed for agent coder")
	wantRefused(t, cl.Write(a+"ctl", []byte("tool_load weather\n")), linux.EACCES, "not allowed")
	if got := mustRead(t, cl, a+"err"); !strings.Contains(got, "tool weather is not allowed for agent coder") {
		t.Fatalf("agent err = %q", got)
	}
	mustWrite(t, cl, a+"tools", "echo_text\n")
	// ... and what rank offers.
	ans, err := cl.Transact(a+"rank", []byte("weather forecast remote push"))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(string(ans)); !reflect.DeepEqual(got, []string{"git_push"}) {
		t.Fatalf("coder's rank = %v (answer %q), want only allowed tools", got, ans)
	}
	ans, err = cl.Transact("rank", []byte("weather forecast remote push"))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(string(ans)); !reflect.DeepEqual(got, []string{"git_push", "weather"}) {
		t.Fatalf("global rank = %v, want git_push and weather", got)
	}
}

func TestAgentLoadUnload(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	a := "session/s/agent/a/"
	if got := mustRead(t, cl, a+"tools"); got != "" {
		t.Fatalf("fresh agent tools = %q", got)
	}
	// Several names in one write, a CRLF, blank lines.
	mustWrite(t, cl, a+"tools", "weather\r\n\ngit_push\n")
	mustWrite(t, cl, a+"ctl", "tool_load echo_text")
	want := "echo_text\twarm\tEcho a text back.\ngit_push\tcold\tPush the current git branch to its remote.\nweather\twarm\tCurrent weather forecast for a city.\n"
	if got := mustRead(t, cl, a+"tools"); got != want {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	if size, _, err := cl.Stat(a + "tools"); err != nil || size != uint64(len(want)) {
		t.Fatalf("stat size = %d, %v; want %d", size, err, len(want))
	}
	mustWrite(t, cl, a+"ctl", "tool_unload weather\n")
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"echo_text", "git_push"}) {
		t.Fatalf("after unload: %v", got)
	}
	cases := []struct {
		file, data string
		errno      linux.Errno
		reason     string
	}{
		{"ctl", "tool_load nope", linux.ENOENT, "unknown tool: nope"},
		{"tools", "nope", linux.ENOENT, "unknown tool: nope"},
		{"ctl", "tool_load elsewhere", linux.ENOENT, "tool elsewhere is not available: "},
		{"ctl", "tool_load ../etc", linux.EINVAL, "bad tool name"},
		{"ctl", "tool_load", linux.EINVAL, "tool_load needs a tool name"},
		{"ctl", "tool_unload weather", linux.ENOENT, "tool weather is not loaded"},
		{"ctl", "turn 3", linux.EINVAL, "turn takes no argument"},
		{"ctl", "fly", linux.EINVAL, `unknown command "fly"`},
		{"tools", "broken", linux.ENOENT, "broken.meta"},
	}
	for _, c := range cases {
		err := cl.Write(a+c.file, []byte(c.data))
		wantRefused(t, err, c.errno, c.reason)
		if got := mustRead(t, cl, a+"err"); !strings.Contains(got, c.reason) {
			t.Errorf("%s %q: agent err = %q, want %q", c.file, c.data, got, c.reason)
		}
		if got := mustRead(t, cl, "err"); !strings.Contains(got, c.reason) {
			t.Errorf("%s %q: connection err = %q, want %q", c.file, c.data, got, c.reason)
		}
	}
	// Lines before a refused one are applied.
	wantRefused(t, cl.Write(a+"ctl", []byte("tool_load weather\ntool_load nope\n")), linux.ENOENT, "nope")
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"echo_text", "git_push", "weather"}) {
		t.Fatalf("after partial write: %v", got)
	}
}

// TestCommandSplitAcrossWrites: a command split into message-sized pieces
// (a write as large as msize) is put back together; a short write ends a
// command; a command left at close runs then.
func TestCommandSplitAcrossWrites(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	loaded := func() []string { return names(mustRead(t, cl, "session/s/agent/a/tools")) }
	f, err := cl.walk("session/s/agent/a/ctl")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Open(p9.WriteOnly); err != nil {
		t.Fatal(err)
	}
	// A first piece as long as a Linux client's payload at the smallest
	// msize, ending in the middle of a command, then the rest.
	first := strings.Repeat("\n", splitMin-len("tool_lo")) + "tool_lo"
	if _, err := f.WriteAt([]byte(first), 0); err != nil {
		t.Fatalf("first piece: %v", err)
	}
	if got := loaded(); len(got) != 0 {
		t.Fatalf("a partial command ran: %v", got)
	}
	if _, err := f.WriteAt([]byte("ad weather\n"), int64(len(first))); err != nil {
		t.Fatalf("second piece: %v", err)
	}
	if got := loaded(); !reflect.DeepEqual(got, []string{"weather"}) {
		t.Fatalf("after the second piece: %v", got)
	}
	if _, err := f.WriteAt([]byte("tool_load git_push"), 0); err != nil {
		t.Fatalf("short write without newline: %v", err)
	}
	if got := loaded(); !reflect.DeepEqual(got, []string{"git_push", "weather"}) {
		t.Fatalf("after a short write: %v", got)
	}
	long := strings.Repeat(" ", splitMin) + "\ntool_load echo_text"
	if _, err := f.WriteAt([]byte(long), 0); err != nil {
		t.Fatalf("long write: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := loaded(); !reflect.DeepEqual(got, []string{"echo_text", "git_push", "weather"}) {
		t.Fatalf("after close: %v", got)
	}
}

func TestSchemas(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	a := "session/s/agent/a/"
	if got := mustRead(t, cl, a+"schemas"); strings.TrimSpace(got) != "[]" {
		t.Fatalf("no tools loaded: schemas = %q", got)
	}
	mustWrite(t, cl, a+"tools", "file_read\nweather\n")
	raw := mustRead(t, cl, a+"schemas")
	var got []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Prompt      string          `json:"prompt"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "file_read" || got[1].Name != "weather" {
		t.Fatalf("schemas = %s", raw)
	}
	if got[0].Prompt == "" || !strings.Contains(string(got[0].Parameters), `"path"`) {
		t.Fatalf("file_read schema = %+v", got[0])
	}
	if strings.Contains(raw, "keywords") || strings.Contains(raw, "contents\"") {
		t.Fatalf("schemas show discovery keywords: %s", raw)
	}
}

func TestCall(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/coder")
	a := "session/s/agent/coder/"

	ents, err := cl.List(a + "call")
	if err != nil || len(ents) != 2 || ents[0].Name != "file_read" || ents[1].Name != "git_push" {
		t.Fatalf("call/ = %+v, %v", ents, err)
	}
	_, err = cl.Transact(a+"call/echo_text", []byte(`{"text": "hi"}`))
	wantRefused(t, err, linux.EACCES, "tool echo_text is not loaded for agent coder", "tool_load echo_text")
	_, err = cl.Transact(a+"call/weather", []byte(`{"city": "Oslo"}`))
	wantRefused(t, err, linux.EACCES, "not allowed")
	_, err = cl.Transact(a+"call/nope", []byte(`{}`))
	wantRefused(t, err, linux.ENOENT, "unknown tool: nope")
	if got := mustRead(t, cl, a+"err"); !strings.Contains(got, "unknown tool: nope") {
		t.Fatalf("agent err = %q", got)
	}

	mustWrite(t, cl, a+"ctl", "tool_load echo_text")
	ans, err := cl.Transact(a+"call/echo_text", []byte(`{"text": "hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res engine.CallResult
	if err := json.Unmarshal(ans, &res); err != nil {
		t.Fatalf("answer %q: %v", ans, err)
	}
	if res.Tool != "echo_text" || res.ExitCode != 0 || res.Output != `{"text": "hi"}` {
		t.Fatalf("answer = %+v", res)
	}
	// A tool that fails is an answer, not a refusal.
	ans, err = cl.Transact(a+"call/echo_text", []byte(`{"text": "fail-please"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ans, &res); err != nil || res.ExitCode != 3 || res.Stderr != "it failed" {
		t.Fatalf("failed call answer = %s (%v)", ans, err)
	}
	// Refusals: bad arguments (every violation), not an object, the caller's own.
	_, err = cl.Transact(a+"call/echo_text", []byte(`{"txt": 1}`))
	wantRefused(t, err, linux.EINVAL, "arguments for echo_text", "text")
	_, err = cl.Transact(a+"call/echo_text", []byte(`["text"]`))
	wantRefused(t, err, linux.EINVAL, "arguments for echo_text")
	_, err = cl.Transact(a+"call/echo_text", []byte(`{"text": "refuse-please"}`))
	wantRefused(t, err, linux.EACCES, "call echo_text: bypass denied by the broker")
	// Empty arguments are {} (and echo_text requires text).
	_, err = cl.Transact(a+"call/echo_text", nil)
	wantRefused(t, err, linux.EINVAL, "text")

	// Without an exec runner.
	e2 := newEnv(t, func(o *Options) { o.Caller = nil })
	cl2 := e2.client()
	mustMkdir(t, cl2, "session/s")
	mustMkdir(t, cl2, "session/s/agent/a")
	mustWrite(t, cl2, "session/s/agent/a/ctl", "tool_load echo_text")
	_, err = cl2.Transact("session/s/agent/a/call/echo_text", []byte(`{"text": "hi"}`))
	wantRefused(t, err, linux.ENOSYS, "execution is not available")
}

// TestCallArgsSplitAcrossMessages: arguments larger than msize arrive whole.
func TestCallArgsSplitAcrossMessages(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	mustWrite(t, cl, "session/s/agent/a/ctl", "tool_load echo_text")
	big := `{"text": "` + strings.Repeat("x", 300<<10) + `"}`
	ans, err := cl.Transact("session/s/agent/a/call/echo_text", []byte(big))
	if err != nil {
		t.Fatal(err)
	}
	var res engine.CallResult
	if err := json.Unmarshal(ans, &res); err != nil || res.Output != big {
		t.Fatalf("big call: output %d bytes, want %d (%v)", len(res.Output), len(big), err)
	}
}

func TestRetention(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.WarmTurns = 2 })
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	a := "session/s/agent/a/"
	mustWrite(t, cl, a+"tools", "file_read\ngit_push\nweather\necho_text\n") // hot, cold, warm, warm
	loaded := func() []string { return names(mustRead(t, cl, a+"tools")) }
	turn := func() { mustWrite(t, cl, a+"ctl", "turn\n") }

	turn() // turn 1: everything was used in turn 0
	if got := loaded(); len(got) != 4 {
		t.Fatalf("turn 1: %v", got)
	}
	// Use echo_text in turn 1 by calling it, weather by loading it again.
	if _, err := cl.Transact(a+"call/echo_text", []byte(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, cl, a+"ctl", "tool_load weather")
	turn() // turn 2: git_push (cold) went unused for one turn
	if got := loaded(); !reflect.DeepEqual(got, []string{"echo_text", "file_read", "weather"}) {
		t.Fatalf("turn 2: %v", got)
	}
	turn() // turn 3: warm tools unused for 1 turn stay (limit 2)
	if got := loaded(); !reflect.DeepEqual(got, []string{"echo_text", "file_read", "weather"}) {
		t.Fatalf("turn 3: %v", got)
	}
	turn() // turn 4: unused for 2 turns: gone; hot stays
	if got := loaded(); !reflect.DeepEqual(got, []string{"file_read"}) {
		t.Fatalf("turn 4: %v", got)
	}
	for i := 0; i < 10; i++ {
		turn()
	}
	if got := loaded(); !reflect.DeepEqual(got, []string{"file_read"}) {
		t.Fatalf("hot tool unloaded: %v", got)
	}
	ctl := mustRead(t, cl, a+"ctl")
	for _, want := range []string{"turn 14\n", "turn 2: unloaded git_push: cold tool unused for 1 turn\n",
		"turn 4: unloaded echo_text: warm tool unused for 2 turns\n", "turn 4: unloaded weather: warm tool unused for 2 turns\n"} {
		if !strings.Contains(ctl, want) {
			t.Errorf("ctl lacks %q:\n%s", want, ctl)
		}
	}
}

func TestRetentionDefaultWarmTurns(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	a := "session/s/agent/a/"
	mustWrite(t, cl, a+"tools", "weather")
	for i := 1; i <= 6; i++ {
		mustWrite(t, cl, a+"ctl", "turn")
		got := names(mustRead(t, cl, a+"tools"))
		if want := i < 6; (len(got) == 1) != want {
			t.Fatalf("after turn %d: loaded %v (warm tools go after 5 unused turns)", i, got)
		}
	}
}

func TestCatalogChangesReachAgents(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/a")
	a := "session/s/agent/a/"
	mustWrite(t, cl, a+"tools", "weather\necho_text\n")
	rev := mustRead(t, cl, "revision")

	// Change weather's schema, remove echo_text.
	meta := `{"description": "Current weather forecast for a city.", "args": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}, "cmd": "/bin/cat"}`
	if err := os.WriteFile(filepath.Join(e.tools, "weather.meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.tools, "echo_text.meta")); err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cl, "revision"); got == rev {
		t.Fatal("revision did not change")
	}
	if strings.Contains(mustRead(t, cl, "tools"), "echo_text") {
		t.Fatal("tools still lists echo_text")
	}
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"weather"}) {
		t.Fatalf("agent tools = %v", got)
	}
	if s := mustRead(t, cl, a+"schemas"); !strings.Contains(s, `"days"`) {
		t.Fatalf("schemas lack the new field: %s", s)
	}
	ctl := mustRead(t, cl, a+"ctl")
	if !strings.Contains(ctl, "unloaded echo_text: removed from the catalog") || !strings.Contains(ctl, "updated weather: definition changed") {
		t.Fatalf("ctl = %q", ctl)
	}
	_, err := cl.Transact(a+"call/echo_text", []byte(`{"text": "x"}`))
	wantRefused(t, err, linux.ENOENT, "unknown tool: echo_text")
}

// TestTransactionsPerFid: each open file has its own answer, on one
// connection and across connections.
func TestTransactionsPerFid(t *testing.T) {
	e := newEnv(t, nil)
	c1, c2 := e.client(), e.client()
	open := func(cl *Client) p9.File {
		f, err := cl.walk("rank")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.Open(p9.ReadWrite); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	fa, fb, fc := open(c1), open(c1), open(c2)
	for _, w := range []struct {
		f p9.File
		q string
	}{{fa, "rain forecast"}, {fb, "push remote branch"}, {fc, "read file contents"}} {
		if _, err := w.f.WriteAt([]byte(w.q), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		f    p9.File
		want string
	}{{fc, "file_read"}, {fa, "weather"}, {fb, "git_push"}} {
		ans, err := readAll(r.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(string(ans)); len(got) == 0 || got[0] != r.want {
			t.Fatalf("answer %q, want %s first", ans, r.want)
		}
	}
	// Before any request, a transaction file reads empty.
	ans, err := readAll(open(c2))
	if err != nil || len(ans) != 0 {
		t.Fatalf("fresh rank read = %q, %v", ans, err)
	}
}

func TestErrIsPerConnection(t *testing.T) {
	e := newEnv(t, nil)
	c1, c2 := e.client(), e.client()
	wantRefused(t, c1.Write("ctl", []byte("nonsense")), linux.EINVAL)
	if got := mustRead(t, c2, "err"); got != "" {
		t.Fatalf("another connection's err = %q", got)
	}
	_, err := c2.Read("no-such-file")
	wantRefused(t, err, linux.ENOENT, "/no-such-file")
	if got := mustRead(t, c1, "err"); !strings.Contains(got, "nonsense") {
		t.Fatalf("err = %q", got)
	}
}

func TestNewNeedsSource(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a Source succeeded")
	}
	// An agent without a profile file gets an empty profile.
	p, err := registry.LoadProfile(t.TempDir(), "nobody")
	if err != nil || p.AllowTools != nil {
		t.Fatalf("profile = %+v, %v", p, err)
	}
}

// A JSON rank request with "explain": true reaches the ranker, and the
// answer carries the explanation on one comment line after the tools.
func TestRankExplain(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Ranker = rankerFunc(func(_ context.Context, q engine.Request) (engine.Answer, error) {
			a := engine.Answer{Tools: []engine.Offer{{Hit: index.Hit{Name: "weather", Score: 0.5}}}}
			if q.Explain {
				a.Explain = &engine.Explanation{Reason: "1 tool(s)", Tools: []engine.ToolExplanation{
					{Name: "weather", Score: 0.5, Offered: true, Rule: "offered"},
					{Name: "translate", Score: 0.01, Rule: "min", Detail: "score 0.010 < min 0.020"}}}
			}
			return a, nil
		})
	})
	cl := e.client()
	plain, err := cl.Transact("rank", []byte(`{"query": "rain"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "# explain") {
		t.Fatalf("explained without being asked: %q", plain)
	}
	ans, err := cl.Transact("rank", []byte(`{"query": "rain", "explain": true}`))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ans)), "\n")
	if len(lines) != 2 || lines[0] != "weather\t0.5000" || !strings.HasPrefix(lines[1], "# explain {") {
		t.Fatalf("answer = %q", ans)
	}
	var ex engine.Explanation
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "# explain ")), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Tools) != 2 || ex.Tools[1].Rule != "min" || ex.Tools[1].Detail == "" {
		t.Fatalf("explanation = %+v", ex)
	}
}
