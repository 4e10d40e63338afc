package mcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// newEngine runs an engine over a tools directory holding one grep tool,
// with the servers of the config at cfgPath.
func newEngine(t *testing.T, ctx context.Context, cfgPath string, po ProviderOptions, eo engine.Options) *engine.Engine {
	t.Helper()
	c, err := LoadConfig(cfgPath, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if po.Runner == nil {
		po.Runner = testRunner(t)
	}
	if po.Logger == nil {
		po.Logger = quiet()
	}
	if len(eo.Dirs) == 0 {
		eo.Dirs = []string{grepTools(t)}
	}
	eo.Providers = Providers(c, po)
	if eo.ProviderWait == 0 {
		eo.ProviderWait = time.Minute
	}
	if eo.Logger == nil {
		eo.Logger = quiet()
	}
	if eo.CacheDir == "" {
		eo.NoCache = true
	}
	eng, err := engine.New(ctx, eo)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { eng.Run(rctx); close(done) }()
	t.Cleanup(func() { stop(); <-done; eng.Close() })
	return eng
}

// grepTools is a tools directory with a grep tool and a weather tool.
func grepTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"file_grep": `{"description":"Search the files of a directory for a text pattern (grep -rn)","keywords":["grep","search files","find text","TODO"],` +
			`"args":{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]},` +
			`"cmd":"a=$(cat); grep -rn -- \"$(printf '%s' \"$a\" | sed -n 's/.*\"pattern\":\"\\([^\"]*\\)\".*/\\1/p')\" . || true","readOnly":true}`,
		"weather": `{"description":"Current weather and forecast for a city","cmd":"echo sunny"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func catalogNames(cat *registry.Catalog) []string {
	var out []string
	for _, t := range cat.Tools {
		out = append(out, t.Name)
	}
	return out
}

// The three npm reference servers as tool sources: their tools join the
// catalog as SERVER:TOOL beside the .meta tools, are ranked with them, and
// calls go to the servers, which run sandboxed with what their entries
// grant.
func TestRealServers(t *testing.T) {
	bin := filepath.Join(npmDir(t), "node_modules", ".bin")
	files, memDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(files, "notes.txt"), []byte("TODO: buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, map[string]any{
		"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything")},
		"fs":         map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{files}, "sandbox": map[string]any{"write": []string{files}}},
		"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memDir, "memory.jsonl")},
			"sandbox": map[string]any{"write": []string{memDir}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng := newEngine(t, ctx, cfg, ProviderOptions{}, engine.Options{NoThresholds: true})
	cat := eng.Catalog()
	names := catalogNames(cat)
	for _, want := range []string{"file_grep", "everything:echo", "fs:read_text_file", "fs:search_files", "memory:create_entities", "memory:read_graph"} {
		if !contains(names, want) {
			t.Errorf("catalog lacks %s; it has %v; problems:\n%s", want, names, joinProblems(cat.Problems))
		}
	}
	if len(cat.Problems) > 0 {
		t.Errorf("problems:\n%s", joinProblems(cat.Problems))
	}
	echo, err := cat.Lookup("everything:echo")
	if err != nil {
		t.Fatal(err)
	}
	if echo.Provider != "everything" || !strings.Contains(echo.File, "mcp server everything (stdio: ") || !strings.Contains(string(echo.Args), `"message"`) {
		t.Errorf("everything:echo = %+v", echo)
	}

	// Ranked with the .meta tools.
	for q, want := range map[string]string{
		"create entities in the knowledge graph memory": "memory:create_entities",
		"echo back the message hello":                   "everything:echo",
	} {
		ans, err := eng.Rank(ctx, engine.Query{Text: q, K: 3, All: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Offered) == 0 || ans.Offered[0].Name != want {
			t.Errorf("rank %q: %v, want %s first", q, ans.Offered, want)
		}
	}

	// Calls go to the servers.
	cc := exec.CallContext{WorkDir: t.TempDir()}
	for _, tc := range []struct{ tool, args, want string }{
		{"everything:echo", `{"message":"hi there"}`, "hi there"},
		{"fs:read_text_file", `{"path":"` + filepath.Join(files, "notes.txt") + `"}`, "TODO: buy milk"},
		{"memory:create_entities", `{"entities":[{"name":"toolsrv","entityType":"project","observations":["ranks tools"]}]}`, "toolsrv"},
		{"memory:read_graph", `{}`, "ranks tools"},
	} {
		res, err := eng.Call(ctx, tc.tool, []byte(tc.args), cc)
		if err != nil {
			t.Errorf("call %s: %v", tc.tool, err)
			continue
		}
		if !strings.Contains(string(res.Stdout), tc.want) || len(res.Content) == 0 {
			t.Errorf("call %s: stdout %q content %s, want %q", tc.tool, res.Stdout, res.Content, tc.want)
		}
	}
	// The memory server wrote where its entry lets it.
	if b, err := os.ReadFile(filepath.Join(memDir, "memory.jsonl")); err != nil || !strings.Contains(string(b), "toolsrv") {
		t.Errorf("memory file: %q %v", b, err)
	}
	// A file outside what fs serves: the server refuses, an error result.
	_, err = eng.Call(ctx, "fs:read_text_file", []byte(`{"path":"/etc/hostname"}`), cc)
	if !errors.Is(err, exec.ErrExit) {
		t.Errorf("reading outside the served directory: %v, want a failed call", err)
	}
	// Arguments are checked against the server's schema before it is asked.
	if _, err := eng.Call(ctx, "everything:echo", []byte(`{"msg":1}`), cc); !errors.Is(err, exec.ErrInvalidArgs) {
		t.Errorf("bad arguments: %v, want invalid arguments", err)
	}
}
