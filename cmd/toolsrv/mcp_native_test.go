package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A raw MCP session (JSON-RPC lines on standard input and output) with a
// real "toolsrv mcp --native": find_tools lists what it finds in
// tools/list under the tool's own name with its own input schema (and
// says so in "native"), the client is sent notifications/tools/list_changed,
// a tools/call of the tool by its own name runs it (in the working
// directory, sandboxed) and is recorded in the usage history with the
// request of the find_tools that offered it; past --native-cap the least
// recently used tool leaves the list (not the first listed: one called
// since stays).
func TestMCPNativeRawSession(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	work := mcpProject(t)
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("first line\nTODO: native tools\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "usage.db")
	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", work, "--no-cache", "--usage-db", db, "--native", "--native-cap", "2")
	p.initialize()
	id := 10.0
	// request sends method with params and returns its response's result,
	// and whether notifications/tools/list_changed came meanwhile (before
	// or after the response, within a short wait after it).
	request := func(method string, params any, wantChange bool) (map[string]any, bool) {
		t.Helper()
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		p.send(string(b))
		var res map[string]any
		changed := false
		for res == nil || wantChange && !changed {
			m := p.await(fmt.Sprintf("the response to %s (and list_changed: %v)", method, wantChange), time.Minute, func(m map[string]any) bool {
				return m["method"] == "notifications/tools/list_changed" || hasID(id)(m)
			})
			if m["method"] != nil {
				changed = true
				continue
			}
			r, ok := m["result"].(map[string]any)
			if !ok {
				t.Fatalf("%s: %v", method, m)
			}
			res = r
		}
		return res, changed
	}
	list := func() map[string]map[string]any {
		t.Helper()
		r, _ := request("tools/list", map[string]any{}, false)
		out := map[string]map[string]any{}
		ts, _ := r["tools"].([]any)
		for _, x := range ts {
			m, _ := x.(map[string]any)
			out[fmt.Sprint(m["name"])] = m
		}
		return out
	}
	find := func(query string) (string, map[string]any) {
		t.Helper()
		r, changed := request("tools/call", map[string]any{"name": "find_tools", "arguments": map[string]any{"query": query, "limit": 1}}, true)
		sc, _ := r["structuredContent"].(map[string]any)
		ts, _ := sc["tools"].([]any)
		if r["isError"] == true || len(ts) != 1 || !changed {
			t.Fatalf("find_tools %q: %v (list_changed: %v)\n%s", query, r, changed, p.stderr.String())
		}
		native, _ := sc["native"].(map[string]any)
		name := fmt.Sprint(ts[0].(map[string]any)["name"])
		return name, native
	}
	call := func(name string, args any) string {
		t.Helper()
		r, _ := request("tools/call", map[string]any{"name": name, "arguments": args}, false)
		b, _ := json.Marshal(r["content"])
		if r["isError"] == true {
			t.Fatalf("tools/call %s: %s", name, b)
		}
		return string(b)
	}

	before := list()
	if len(before) != 2 || before["find_tools"] == nil || before["call_tool"] == nil {
		t.Fatalf("before find_tools, tools/list is %v", slices.Sorted(maps.Keys(before)))
	}
	if d := fmt.Sprint(before["find_tools"]["description"]); !strings.Contains(d, "native") {
		t.Errorf("find_tools' description does not say that found tools are listed: %s", d)
	}

	grepReq := "search the files for TODO"
	grep, native := find(grepReq)
	if grep != "file_grep" || native["file_grep"] != "file_grep" {
		t.Fatalf("find_tools %q found %s, native %v; want file_grep listed natively", grepReq, grep, native)
	}
	listed := list()
	g := listed["file_grep"]
	schema, _ := g["inputSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if g == nil || props["pattern"] == nil || g["description"] == nil || g["description"] == "" {
		t.Fatalf("tools/list after find_tools: file_grep is %v", g)
	}
	if out := call("file_grep", map[string]any{"pattern": "TODO"}); !strings.Contains(out, "notes.txt:2") {
		t.Errorf("file_grep by its own name: %s, want notes.txt:2", out)
	}

	// A second tool, then file_grep is used again, then a third tool: the
	// cap of 2 drops the second (least recently used), not file_grep.
	second, native := find("print the working tree status of the git repository")
	if second == "file_grep" || native[second] != second {
		t.Fatalf("the second find_tools found %s (native %v); want another tool, listed", second, native)
	}
	call("file_grep", map[string]any{"pattern": "first"})
	third, native := find("compute the sha256 checksum of a file")
	if third == "file_grep" || third == second || native[third] != third {
		t.Fatalf("the third find_tools found %s (native %v); want a third tool, listed", third, native)
	}
	t.Logf("found %s, then %s, then %s", grep, second, third)
	listed = list()
	if listed["file_grep"] == nil || listed[third] == nil || listed[second] != nil || len(listed) != 4 {
		t.Errorf("with --native-cap 2, after %s, file_grep (called since), %s: tools/list is %v; want file_grep and %s besides find_tools and call_tool",
			second, third, slices.Sorted(maps.Keys(listed)), third)
	}

	// The usage history links the direct calls of file_grep to the
	// request of the find_tools that offered it, not to a later one.
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("toolsrv mcp did not exit after its standard input closed\n%s", p.stderr.String())
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
	ok := false
	for _, e := range entries {
		if e.Key.Tool == "file_grep" && e.Text == grepReq && e.Count == 2 {
			ok = true
		}
		if e.Key.Tool == "file_grep" && e.Text != grepReq {
			t.Errorf("a direct call of file_grep is recorded for %q, not for the find_tools that offered it", e.Text)
		}
	}
	if !ok {
		t.Errorf("usage ls: no two file_grep events for %q: %s", grepReq, r.stdout)
	}
}
