package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	usagedb "github.com/toolsrv/toolsrv/usage"
)

// usageFixture is a usage store holding a few entries, and the
// environment that makes it the default one.
func usageFixture(t *testing.T) (db string, env map[string]string) {
	t.Helper()
	state := t.TempDir()
	db = filepath.Join(state, "toolsrv", "usage.db")
	s, _, err := usagedb.Open(context.Background(), db, usagedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	err = s.Record(context.Background(),
		usagedb.Event{Request: "Show git status", Tool: "alpha", OK: true, Agent: "claude", Time: now.Add(-2 * time.Hour), Source: usagedb.SourceMCP},
		usagedb.Event{Request: "show  git status", Tool: "alpha", OK: false, Agent: "claude", Time: now.Add(-time.Hour), Source: usagedb.SourceMCP},
		usagedb.Event{Request: "count the lines", Tool: "beta", OK: true, Agent: "codex", Time: now.Add(-3 * time.Hour), Source: usagedb.SourceCLI},
		usagedb.Event{Request: "tell me a joke", Tool: "", OK: true, Agent: "claude", Time: now.Add(-30 * time.Minute), Source: usagedb.Source9P},
	)
	if err != nil {
		t.Fatal(err)
	}
	return db, map[string]string{"XDG_STATE_HOME": state}
}

func TestUsageLs(t *testing.T) {
	db, env := usageFixture(t)
	code, out, errs := runCLIWith(t, "", env, "usage", "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "CALLS") {
		t.Fatalf("exit %d, %s\n%s", code, errs, out)
	}
	// Most recently used first; no tool shows as "-".
	for i, want := range []string{"tell me a joke", "show git status", "count the lines"} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("line %d: %q, want %q", i+1, lines[i+1], want)
		}
	}
	if f := strings.Fields(lines[2]); f[0] != "2" || f[1] != "1" || f[4] != "alpha" || f[5] != "claude" {
		t.Errorf("%q", lines[2])
	}
	if f := strings.Fields(lines[1]); f[4] != "-" {
		t.Errorf("%q", lines[1])
	}
	// --usage-db, --tool, --agent, --json.
	code, out, errs = runCLIWith(t, "", nil, "usage", "ls", "--usage-db", db, "--json", "--agent", "claude", "--tool", "alpha")
	var es []usagedb.Entry
	if err := json.Unmarshal([]byte(out), &es); code != 0 || err != nil || len(es) != 1 || es[0].Count != 2 {
		t.Fatalf("exit %d, %v, %s\n%s", code, err, errs, out)
	}
	// No store: an empty list, and nothing made.
	empty := filepath.Join(t.TempDir(), "none", "usage.db")
	code, out, errs = runCLIWith(t, "", nil, "usage", "ls", "--usage-db", empty, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("exit %d, %s\n%s", code, errs, out)
	}
	if _, err := os.Stat(filepath.Dir(empty)); !os.IsNotExist(err) {
		t.Errorf("ls made the store's directory")
	}
}

func TestUsageStats(t *testing.T) {
	db, env := usageFixture(t)
	code, out, errs := runCLIWith(t, "", env, "usage", "stats")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{db, "3: 4 calls, 1 failed; 3 tools, 2 agents", "9p 1, cli 1, mcp 2", "180 days after last use", "256 per tool"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats lack %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLIWith(t, "", env, "usage", "stats", "--json")
	var st usagedb.Stats
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Entries != 3 || st.Sources["mcp"] != 2 || st.Size == 0 {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
}

// export writes what import reads: a round trip keeps every entry.
func TestUsageExportImport(t *testing.T) {
	_, env := usageFixture(t)
	code, out, errs := runCLIWith(t, "", env, "usage", "export")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Fatalf("exit %d, %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, `"request":"show  git status","tool":"alpha","ok":false,"agent":"claude"`) || !strings.Contains(out, `"count":2,"failed":1`) {
		t.Errorf("export:\n%s", out)
	}
	// Into another store of the same installation: the lines are sealed
	// by its key, and keep their principals.
	other := filepath.Join(t.TempDir(), "usage.db")
	code, rep, errs := runCLIWith(t, out, env, "usage", "import", "--usage-db", other, "--tools", cliFixture(t), "-")
	if code != 0 || !strings.Contains(rep, "imported 3 line(s) from standard input into 3 entries") {
		t.Fatalf("exit %d, %s\n%s", code, errs, rep)
	}
	code, out2, _ := runCLIWith(t, "", env, "usage", "export", "--usage-db", other)
	if code != 0 || out2 != out {
		t.Errorf("round trip:\n%s\nthen\n%s", out, out2)
	}
	// Into another installation's (another key): the file is their
	// principal; a line whose principal was changed by hand is the file's
	// too, even here.
	third := filepath.Join(t.TempDir(), "usage.db")
	code, rep, errs = runCLIWith(t, out, nil, "usage", "import", "--usage-db", third, "-")
	if code != 0 || !strings.Contains(rep, "recorded as: import:stdin#") {
		t.Fatalf("import elsewhere: exit %d, %s\n%s", code, errs, rep)
	}
	forged := strings.Replace(out, `"agent":"codex"`, `"agent":"codex","principal":"owner"`, 1)
	code, rep, errs = runCLIWith(t, forged, env, "usage", "import", "--usage-db", filepath.Join(t.TempDir(), "u.db"), "-")
	if code != 0 || strings.Contains(rep, "owner") || !strings.Contains(rep, "import:stdin#") {
		t.Errorf("a line claiming the owner, with the seal of another principal: exit %d, %s\n%s", code, errs, rep)
	}
}

func TestUsageImport(t *testing.T) {
	tools := cliFixture(t)
	db := filepath.Join(t.TempDir(), "usage.db")
	file := filepath.Join(t.TempDir(), "calls.jsonl")
	good := `{"request": "do alpha things", "tool": "alpha", "ok": true, "agent": "claude", "time": "` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `"}
{"request": "Do  alpha things", "tool": "alpha", "ok": false, "agent": "claude"}

{"request": "what is it", "tool": "ghost"}
{"request": "later tool", "tool": "gamma", "count": 4, "failed": 1}
{"request": "later tool again", "tool": "gamma", "id": "abc"}
{"request": "later tool again", "tool": "gamma", "id": "abc"}
{"request": "from a server", "tool": "gh:search"}
{"request": "no tool for this", "tool": ""}
{"request": "ancient", "tool": "alpha", "time": "2001-01-01T00:00:00Z"}
`
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLIWith(t, "", nil, "usage", "import", "--usage-db", db, "--tools", tools, file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"imported 9 line(s) from " + file + " into 6 entries",
		"1 line(s) are older than the history keeps (180 days): not kept",
		// ghost is hidden on this host: known.
		"3 line(s) name tools the catalog does not know, kept (the tool may come later): gamma (3)",
		"1 line(s) name tools of MCP servers or remote toolsrv (SERVER:TOOL), not checked",
		"ranking view of the history prepared for the catalog",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The view is saved beside the store, and the next rank takes it as it
	// is (it would build and save it again otherwise).
	view, err := os.Stat(db + ".view")
	if err != nil {
		t.Fatalf("import saved no ranking view: %v", err)
	}
	before, _ := os.ReadFile(db + ".view")
	if code, _, errs := runCLIWith(t, "", nil, "rank", "--usage-db", db, "--tools", tools, "--all", "do alpha things"); code != 0 {
		t.Fatalf("rank: exit %d: %s", code, errs)
	}
	after, err := os.Stat(db + ".view")
	if now, _ := os.ReadFile(db + ".view"); err != nil || !after.ModTime().Equal(view.ModTime()) || !bytes.Equal(now, before) {
		t.Errorf("rank did not take the view import saved: %v, %v → %v", err, view.ModTime(), after.ModTime())
	}
	s, _, err := usagedb.Open(context.Background(), db, usagedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	es, _, err := s.Snapshot(context.Background())
	s.Close()
	if err != nil || len(es) != 6 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	for _, e := range es {
		switch e.Key.Request {
		case "do alpha things":
			if e.Count != 2 || e.Failed != 1 || e.Key.Agent != "claude" {
				t.Errorf("%+v", e)
			}
		case "later tool":
			if e.Count != 4 || e.Failed != 1 {
				t.Errorf("%+v", e)
			}
		case "later tool again": // the repeated id counts once
			if e.Count != 1 {
				t.Errorf("%+v", e)
			}
		}
	}

	// Any bad line: nothing imported, every bad line named.
	bad := good + `{"request": "x"}
{"tool": "alpha"}
{"request": "x", "tool": "alpha", "time": "yesterday"}
{"request": "x", "tool": "alpha", "count": 0}
{"request": "x", "tool": "alpha", "count": 2, "failed": 3}
{"request": "x", "tool": "alpha", "colour": "blue"}
{"request": "   ", "tool": "alpha"}
not json
{"request": "x", "tool": "../etc/passwd"}
`
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	db2 := filepath.Join(t.TempDir(), "usage.db")
	code, out, errs = runCLIWith(t, "", nil, "usage", "import", "--usage-db", db2, "--tools", tools, file)
	if code != 1 || out != "" {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"nothing imported: 9 invalid line(s)",
		`line 11: "tool" is missing`, `line 12: "request" is missing`, `line 13: "time" "yesterday" is not an RFC3339 time`,
		`line 14: "count" 0`, `line 15: "failed" 3 is not between 0 and the count, 2`, `line 16: not a JSON object of the import format: json: unknown field "colour"`,
		`line 17: "request" is empty`, "line 18: not a JSON object", `line 19: "tool" is not a tool name (NAME, or PROVIDER:NAME`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
	if _, err := os.Stat(db2); !os.IsNotExist(err) {
		t.Errorf("a failed import made the store")
	}
}

func TestUsageForget(t *testing.T) {
	for _, tc := range []struct {
		args []string
		n    int
	}{
		{[]string{"--tool", "alpha"}, 1},
		{[]string{"--agent", "claude"}, 2},
		{[]string{"--before", time.Now().Add(-150 * time.Minute).Format(time.RFC3339)}, 1},
		{[]string{"--before", time.Now().Add(48 * time.Hour).Format(time.DateOnly)}, 3},
		{[]string{"--all"}, 3},
	} {
		_, env := usageFixture(t)
		code, out, errs := runCLIWith(t, "", env, append([]string{"usage", "forget"}, tc.args...)...)
		if code != 0 || strings.TrimSpace(out) != "forgot "+map[bool]string{true: "1 entry", false: strconv.Itoa(tc.n) + " entries"}[tc.n == 1] {
			t.Errorf("%v: exit %d, %q %s", tc.args, code, out, errs)
		}
	}
	_, env := usageFixture(t)
	for _, args := range [][]string{
		{}, {"--tool", "a", "--agent", "b"}, {"--all", "--tool", "a"}, {"--before", "last week"}, {"--tool", ""}, {"stray"},
	} {
		code, _, errs := runCLIWith(t, "", env, append([]string{"usage", "forget"}, args...)...)
		if code != 2 || !strings.Contains(errs, "Usage: toolsrv usage forget") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

func TestUsageHelp(t *testing.T) {
	code, out, _ := runCLIWith(t, "", nil, "help", "usage")
	if code != 0 || !strings.Contains(out, "never sent anywhere") || !strings.Contains(out, "forget") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = runCLIWith(t, "", nil, "usage", "import", "--help")
	if code != 0 || !strings.Contains(out, "--usage-db") || !strings.Contains(out, "180 days") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, _, errs := runCLIWith(t, "", nil, "usage", "frobnicate")
	if code != 2 || !strings.Contains(errs, `unknown subcommand "frobnicate"`) {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// An imported line's time is its file's say: a file that dates its claims
// 60 days back is recorded as of the import (its claims never count as
// older than what this installation saw before it), unless the owner
// vouches for it (--principal), while the lines this installation
// exported keep their times (sealed with them), and one whose time was
// changed by hand is the file's, as of the import.
func TestUsageImportTimes(t *testing.T) {
	mineDB, env := usageFixture(t)
	old := time.Now().Add(-60 * 24 * time.Hour).UTC().Format(time.RFC3339)
	file := `{"request": "show git status", "tool": "fortune", "time": "` + old + `"}` + "\n"
	firsts := func(db string) map[string]time.Time { // request → first
		t.Helper()
		s, _, err := usagedb.Open(context.Background(), db, usagedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		es, _, err := s.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, e := range es {
			out[e.Key.Request] = e.First
		}
		return out
	}
	start := time.Now().Add(-time.Minute)
	db := filepath.Join(t.TempDir(), "usage.db")
	if code, rep, errs := runCLIWith(t, file, env, "usage", "import", "--usage-db", db, "-"); code != 0 {
		t.Fatalf("import: exit %d, %s\n%s", code, errs, rep)
	}
	if got := firsts(db)["show git status"]; got.Before(start) {
		t.Errorf("a file's line dated %s is recorded as first used %s, want the import's time", old, got)
	}
	// A file the owner vouches for (--principal): its times kept.
	vouched := filepath.Join(t.TempDir(), "usage.db")
	if code, rep, errs := runCLIWith(t, file, env, "usage", "import", "--usage-db", vouched, "--principal", "mcp:claude", "-"); code != 0 {
		t.Fatalf("import --principal: exit %d, %s\n%s", code, errs, rep)
	}
	if got := firsts(vouched)["show git status"]; !got.Before(start) {
		t.Errorf("a line dated %s of a file vouched for with --principal is recorded as first used %s, want its own time", old, got)
	}
	// This installation's export: its times kept.
	code, out, errs := runCLIWith(t, "", env, "usage", "export")
	if code != 0 {
		t.Fatalf("export: exit %d, %s", code, errs)
	}
	mine := firsts(mineDB)
	other := filepath.Join(t.TempDir(), "usage.db")
	if code, rep, errs := runCLIWith(t, out, env, "usage", "import", "--usage-db", other, "-"); code != 0 {
		t.Fatalf("import of the export: exit %d, %s\n%s", code, errs, rep)
	}
	back := firsts(other)
	for r := range mine {
		if !back[r].Equal(mine[r]) {
			t.Errorf("%q, exported by this installation: first %s after the import, want its own first use, %s", r, back[r], mine[r])
		}
	}
	// The same export with a time moved back by hand: the file's line.
	var l map[string]any
	line, _, _ := strings.Cut(out, "\n")
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatal(err)
	}
	l["time"] = old
	moved, _ := json.Marshal(l)
	third := filepath.Join(t.TempDir(), "usage.db")
	code, rep, errs := runCLIWith(t, string(moved)+"\n", env, "usage", "import", "--usage-db", third, "-")
	if code != 0 || !strings.Contains(rep, "import:stdin#") {
		t.Fatalf("a line whose time was moved: exit %d, %s\n%s", code, errs, rep)
	}
	for r, first := range firsts(third) {
		if first.Before(start) {
			t.Errorf("%q, its sealed time moved back by hand: first %s, want the import's time", r, first)
		}
	}
}

// An import leaves out only the lines older than the store it records
// into keeps (its retention, not the default one): into a store that
// keeps everything, a line last used 300 days ago is recorded.
func TestUsageImportKeepsWhatTheStoreKeeps(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-300 * 24 * time.Hour).UTC().Format(time.RFC3339)
	file := []byte(`{"request": "show git status", "tool": "fortune", "time": "` + old + `"}` + "\n" +
		`{"request": "count the lines", "tool": "wc"}` + "\n")
	for _, c := range []struct {
		name      string
		retention time.Duration
		want      int
	}{
		{"keeps everything", -1, 2},
		{"keeps a year", 365 * 24 * time.Hour, 2},
		{"keeps 30 days", 30 * 24 * time.Hour, 1},
	} {
		s, _, err := usagedb.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usagedb.Options{Retention: c.retention})
		if err != nil {
			t.Fatal(err)
		}
		who := importWho{file: "import:f#00"}
		if _, _, err := recordImport(ctx, s, file, &who); err != nil {
			t.Fatal(err)
		}
		es, _, err := s.Snapshot(ctx)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != c.want {
			t.Errorf("a store that %s: %d entries after importing a line of 300 days ago and one of now, want %d", c.name, len(es), c.want)
		}
	}
}
