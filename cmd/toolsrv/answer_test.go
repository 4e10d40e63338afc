package main

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// One request gets one answer, under the same names, whichever way it is
// asked: "rank --json", MCP's find_tools and 9P's rank.json give the same
// tools (names, scores, hot and named flags), the same answer fields
// (noToolFits, reason, degraded) and the same explanation (each tool's
// signals, offered flag and rule). What each adds is its own: rank --json
// the thresholds' selection and the ranking, find_tools each tool's
// description and input schema (and its scores to three decimals).
func TestOneAnswerOnEveryTransport(t *testing.T) {
	bin := buildToolsrv(t)
	tools := rankFixture(t)
	const q = "read the file and email it to bob"
	answers := map[string]map[string]any{}
	decode := func(from, s string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%s: %v: %s", from, err, s)
		}
		return m
	}

	r := runToolsrv(t, bin, "", "rank", "--tools", tools, "--no-cache", "--no-usage", "--json", "--explain", q)
	if r.code != 0 {
		t.Fatalf("rank --json: exit %d: %s", r.code, r.stderr)
	}
	answers["rank --json"] = decode("rank --json", r.stdout)

	p := startMCPPeer(t, bin, "--tools", tools, "--workdir", mcpProject(t), "--no-cache", "--no-usage")
	p.initialize()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_tools","arguments":{"query":"` + q + `","explain":true}}}`)
	m := p.await("find_tools' answer", safetyNet, hasID(2))
	res, _ := m["result"].(map[string]any)
	found, _ := res["structuredContent"].(map[string]any)
	if found == nil {
		t.Fatalf("find_tools: %v", m)
	}
	answers["find_tools"] = found

	addr, _, _ := startServeIn(t, tools, "--no-usage")
	code, out, errs := run9PCmd(t, addr, "", "write", "rank.json", `{"query":"`+q+`","explain":true}`)
	if code != 0 {
		t.Fatalf("9p write rank.json: exit %d: %s", code, errs)
	}
	answers["9P rank.json"] = decode("9P rank.json", out)
	code, text, errs := run9PCmd(t, addr, "", "write", "rank", q)
	if code != 0 {
		t.Fatalf("9p write rank: exit %d: %s", code, errs)
	}

	ref := answers["rank --json"]
	refTools, _ := ref["tools"].([]any)
	if len(refTools) < 2 {
		t.Fatalf("rank --json offered %v; the request is meant to have two tools offered", ref["tools"])
	}
	var textNames []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if name, _, ok := strings.Cut(line, "\t"); ok && !strings.HasPrefix(line, "#") {
			textNames = append(textNames, name)
		}
	}
	for from, a := range answers {
		for _, k := range []string{"id", "tools", "noToolFits", "explain"} {
			if _, ok := a[k]; !ok {
				t.Errorf("%s: no %q in %v", from, k, slices.Sorted(maps.Keys(a)))
			}
		}
		for _, k := range []string{"noToolFits", "reason", "degraded", "degradedReason"} {
			if !reflect.DeepEqual(a[k], ref[k]) {
				t.Errorf("%s: %s = %v, rank --json %v", from, k, a[k], ref[k])
			}
		}
		if !reflect.DeepEqual(a["explain"], ref["explain"]) {
			t.Errorf("%s: explain differs from rank --json's:\n%v\n%v", from, a["explain"], ref["explain"])
		}
		ts, _ := a["tools"].([]any)
		var names []string
		for i, tv := range ts {
			tool, _ := tv.(map[string]any)
			names = append(names, tool["name"].(string))
			if i >= len(refTools) {
				continue
			}
			want := refTools[i].(map[string]any)
			for k, v := range want {
				got, ok := tool[k]
				if k == "score" && ok {
					if math.Abs(got.(float64)-v.(float64)) > 0.0005 {
						t.Errorf("%s: %s's score %v, rank --json %v", from, tool["name"], got, v)
					}
					continue
				}
				if !reflect.DeepEqual(got, v) {
					t.Errorf("%s: %s's %s = %v, rank --json %v", from, tool["name"], k, got, v)
				}
			}
		}
		if !slices.Equal(names, textNames) {
			t.Errorf("%s offers %v, the 9P rank file %v", from, names, textNames)
		}
	}
}
