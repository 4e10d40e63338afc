package mcp

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/index"
)

// With Native, find_tools lists what it finds under its own name: an
// imported SERVER:TOOL as SERVER__TOOL (callable by that name), not a tool
// named like toolsrv's own (call_tool), not an imported tool whose
// SERVER__TOOL name is a .meta tool's; a listed tool whose .meta changes is
// listed anew, and one whose .meta goes leaves the list.
func TestServerNativeNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tools := grepTools(t)
	for name, meta := range map[string]string{
		"call_tool":  `{"description":"Call a phone number on the telephone","args":{"type":"object","properties":{"number":{"type":"string"}}},"cmd":"echo ringing"}`,
		"good__fail": `{"description":"A local tool that always fails, named like an imported one","cmd":"exit 1"}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := writeConfig(t, map[string]any{"good": fakeEntry(t, "good", nil)})
	eng := newEngine(t, ctx, cfg, ProviderOptions{}, engine.Options{Dirs: []string{tools}, NoThresholds: true,
		Runner: &exec.Options{SelfExe: mustExe(t), Logger: quiet()}})
	cs, changed := serve(t, ctx, ServerOptions{Engine: eng, Native: true, Call: exec.CallContext{WorkDir: t.TempDir()}, Logger: quiet()})

	find := func(query string, limit int) Found {
		t.Helper()
		r := callTool(t, ctx, cs, FindTools, map[string]any{"query": query, "limit": limit})
		var f Found
		if b, _ := json.Marshal(r.StructuredContent); r.IsError || json.Unmarshal(b, &f) != nil {
			t.Fatalf("find_tools %q: %s", query, text(r))
		}
		return f
	}
	f := find("say a text back", 1)
	if len(f.Tools) != 1 || f.Tools[0].Name != "good:say" || f.Native["good:say"] != "good__say" {
		t.Fatalf("find_tools for say: %+v native %v; want good:say listed as good__say", f.Names(), f.Native)
	}
	waitFor(t, ctx, "list_changed", func() bool { return changed.Load() > 0 })
	l := listed(t, ctx, cs)
	if l["good__say"] == nil || !strings.Contains(string(mustJSON(t, l["good__say"].InputSchema)), `"text"`) {
		t.Fatalf("tools/list: %v; want good__say with its schema", slices.Sorted(mapsKeys(l)))
	}
	if r := callTool(t, ctx, cs, "good__say", map[string]any{"text": "hi"}); r.IsError || !strings.Contains(text(r), "said: hi") {
		t.Errorf("good__say: %v %s", r.IsError, text(r))
	}

	f = find("call a phone number on the telephone", 1)
	if len(f.Tools) != 1 || f.Tools[0].Name != CallTool {
		t.Fatalf("find_tools for the phone: %v", f.Names())
	}
	if _, ok := f.Native[CallTool]; ok || !strings.Contains(listed(t, ctx, cs)[CallTool].Description, "find_tools returned") {
		t.Errorf("a tool named call_tool replaced toolsrv's own: native %v", f.Native)
	}

	f = find("a tool that always fails", 3)
	if !slices.Contains(f.Names(), "good:fail") || !slices.Contains(f.Names(), "good__fail") {
		t.Fatalf("find_tools for failing tools: %v", f.Names())
	}
	if _, ok := f.Native["good:fail"]; ok || f.Native["good__fail"] != "good__fail" {
		t.Errorf("good:fail, whose native name is the .meta good__fail's: native %v; want only the .meta listed", f.Native)
	}
	if r := callTool(t, ctx, cs, "good__fail", nil); !r.IsError || strings.Contains(text(r), "it went wrong") {
		t.Errorf("good__fail runs the .meta tool (exit 1), not the imported one: %v %s", r.IsError, text(r))
	}

	// A listed .meta tool edited, then removed.
	if f = find("current weather forecast for a city", 1); f.Native["weather"] != "weather" {
		t.Fatalf("find_tools for the weather: %v native %v", f.Names(), f.Native)
	}
	meta := filepath.Join(tools, "weather.meta")
	if err := os.WriteFile(meta, []byte(`{"description":"Weather of a city (edited)","cmd":"echo sunny"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the edited weather listed", func() bool {
		w := listed(t, ctx, cs)["weather"]
		return w != nil && w.Description == "Weather of a city (edited)"
	})
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the removed weather unlisted", func() bool { return listed(t, ctx, cs)["weather"] == nil })
}

// Past NativeCap, the least recently found or called tool leaves the list.
func TestServerNativeCap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{"../examples/tools"}, NoCache: true, NoThresholds: true, Logger: quiet(),
		Runner: &exec.Options{SelfExe: mustExe(t), Logger: quiet()}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := NewServer(ServerOptions{Engine: eng, Native: true, NativeCap: 3, Logger: quiet()})
	offer := func(names ...string) map[string]string {
		var o []engine.Offer
		for _, n := range names {
			o = append(o, engine.Offer{Hit: index.Hit{Name: n}})
		}
		return s.listNative(eng.Catalog(), o)
	}
	offer("file_read", "file_grep")
	offer("git_status")
	s.touchNative("file_read", "file_read") // used since: file_grep is the oldest now
	got := offer("calc")
	if _, ok := got["calc"]; !ok {
		t.Fatalf("calc not listed: %v", got)
	}
	want := map[string]string{"file_read": "file_read", "git_status": "git_status", "calc": "calc"}
	if n := s.Native(); !maps.Equal(n, want) {
		t.Errorf("after file_read+file_grep, git_status, a call of file_read, calc (cap 3): %v, want %v", n, want)
	}
	// One answer with more tools than the cap keeps its best ones.
	got = offer("shell", "file_list", "file_write", "file_stat")
	want = map[string]string{"shell": "shell", "file_list": "file_list", "file_write": "file_write"}
	if n := s.Native(); !maps.Equal(n, want) || !maps.Equal(got, want) {
		t.Errorf("an answer of 4 under a cap of 3: listed %v, answered %v; want %v", n, got, want)
	}
}

func mustExe(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
