package mcp

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
		eo.ProviderWait = 5 * time.Minute
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
		ans, err := eng.Rank(ctx, engine.Request{Query: q, Limit: 3, All: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Tools) == 0 || ans.Tools[0].Name != want {
			t.Errorf("rank %q: %v, want %s first", q, ans.Tools, want)
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
		res, err := eng.Call(ctx, engine.CallRequest{Tool: tc.tool, Arguments: []byte(tc.args), Context: cc})
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
	_, err = eng.Call(ctx, engine.CallRequest{Tool: "fs:read_text_file", Arguments: []byte(`{"path":"/etc/hostname"}`), Context: cc})
	if !errors.Is(err, exec.ErrExit) {
		t.Errorf("reading outside the served directory: %v, want a failed call", err)
	}
	// Arguments are checked against the server's schema before it is asked.
	if _, err := eng.Call(ctx, engine.CallRequest{Tool: "everything:echo", Arguments: []byte(`{"msg":1}`), Context: cc}); !errors.Is(err, exec.ErrInvalidArgs) {
		t.Errorf("bad arguments: %v, want invalid arguments", err)
	}
}

// Servers that misbehave each get a clear problem naming them, and the
// rest of the catalog is served: one that prints garbage on standard
// output (its tools work, the garbage is reported), one that never answers
// initialize, one that offers a tool whose schema does not compile, and
// config entries that cannot be used.
func TestBadServers(t *testing.T) {
	cfg := writeConfig(t, map[string]any{
		"good":       fakeEntry(t, "good", nil),
		"garbage":    fakeEntry(t, "garbage", nil),
		"hang":       merge(fakeEntry(t, "hang", nil), map[string]any{"startTimeout": "1s"}),
		"badschema":  fakeEntry(t, "badschema", nil),
		"nocommand":  map[string]any{"args": []string{"x"}},
		"carrier":    map[string]any{"command": "true", "type": "pigeon"},
		"missingbin": map[string]any{"command": "no-such-mcp-server-anywhere"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The hung server fails at its start timeout (1 s), not at the
	// engine's provider wait: New returns long before that wait.
	eng := newEngine(t, ctx, cfg, ProviderOptions{MinBackoff: 200 * time.Millisecond}, engine.Options{NoThresholds: true, ProviderWait: 10 * time.Minute})
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer rcancel()
	defer func() {
		if t.Failed() {
			t.Logf("problems:\n%s", joinProblems(eng.Catalog().Problems))
		}
	}()
	waitFor(t, rctx, "every server reported", func() bool {
		probs := joinProblems(eng.Catalog().Problems)
		return strings.Contains(probs, "mcp server hang") && strings.Contains(probs, "mcp server garbage")
	})
	cat := eng.Catalog()
	names := catalogNames(cat)
	for _, want := range []string{"file_grep", "weather", "good:say", "garbage:say", "badschema:ok"} {
		if !contains(names, want) {
			t.Errorf("catalog lacks %s: %v\n%s", want, names, joinProblems(cat.Problems))
		}
	}
	if contains(names, "badschema:broken") {
		t.Error("a tool whose schema does not compile is in the catalog")
	}
	probs := joinProblems(cat.Problems)
	for _, want := range []string{
		"mcp server garbage (stdio: ",                     // the problem's name is the server's
		"not JSON-RPC (first: \"Hello! fake",              // what it printed
		"badschema:broken",                                // the tool
		"no reply to initialize after 1s",                 // the hung server
		"unknown transport \"pigeon\"",                    // a bad entry
		"neither \"command\" nor \"url\"",                 // another
		"\"no-such-mcp-server-anywhere\" is not on $PATH", // another
	} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems lack %q:\n%s", want, probs)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(probs), "\n") {
		named := false
		for _, s := range []string{"garbage", "hang", "badschema", "nocommand", "carrier", "missingbin"} {
			named = named || strings.Contains(line, "mcp server "+s)
		}
		if !named {
			t.Errorf("a problem that names no server: %s", line)
		}
	}
	cc := exec.CallContext{WorkDir: t.TempDir()}
	res, err := eng.Call(ctx, engine.CallRequest{Tool: "garbage:say", Arguments: []byte(`{"text":"still works"}`), Context: cc})
	if err != nil || string(res.Stdout) != "said: still works" {
		t.Errorf("garbage:say: %v %v", res, err)
	}
	// A tool that reports an error is a failed call with its message.
	_, err = eng.Call(ctx, engine.CallRequest{Tool: "good:fail", Arguments: nil, Context: cc})
	if !errors.Is(err, exec.ErrExit) || !strings.Contains(err.Error(), "it went wrong") {
		t.Errorf("good:fail: %v", err)
	}
	// A broken entry's tools cannot be called.
	if _, err := eng.Call(ctx, engine.CallRequest{Tool: "carrier:x", Arguments: nil, Context: cc}); err == nil {
		t.Error("a call to a broken entry succeeded")
	}
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// A server that dies is started again with backoff; meanwhile its tools
// are listed as hidden with the reason, and they come back.
func TestServerRestart(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	dir := filepath.Dir(starts)
	cfg := writeConfig(t, map[string]any{
		"crash": merge(fakeEntry(t, "crash", map[string]string{"STARTS": starts}), map[string]any{"sandbox": map[string]any{"write": []string{dir}}}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng := newEngine(t, ctx, cfg, ProviderOptions{MinBackoff: 300 * time.Millisecond, MaxBackoff: 2 * time.Second}, engine.Options{NoThresholds: true, NoIndex: true})
	// Meanwhile its tools are hidden with the reason (its exit and its
	// standard error), and the waits between starts grow.
	waits := map[string]bool{}
	sawStderr := false
	waitFor(t, ctx, "three starts", func() bool {
		for _, h := range eng.Catalog().Hidden {
			if h.Name == "crash:say" {
				sawStderr = sawStderr || strings.Contains(h.Reason, "crashing on purpose")
				if _, after, ok := strings.Cut(h.Reason, "starting it again in "); ok {
					waits[after] = true
				}
			}
		}
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "\n") >= 3 && len(waits) >= 2
	})
	if !sawStderr {
		t.Error("the dead server's tools were never hidden with its standard error")
	}
	if !waits["300ms"] || !waits["600ms"] {
		t.Errorf("waits before a restart: %v, want 300ms then 600ms", waits)
	}
	waitFor(t, ctx, "tools back", func() bool { return contains(catalogNames(eng.Catalog()), "crash:say") })
}

// A server's notifications/tools/list_changed makes its tools listed
// again: a tool it adds is in the catalog and ranked.
func TestServerListChanged(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"changing": fakeEntry(t, "changing", nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	eng := newEngine(t, ctx, cfg, ProviderOptions{}, engine.Options{NoThresholds: true})
	if contains(catalogNames(eng.Catalog()), "changing:extra") {
		t.Fatal("extra is there before it is added")
	}
	if _, err := eng.Call(ctx, engine.CallRequest{Tool: "changing:add_tool", Arguments: nil, Context: exec.CallContext{WorkDir: t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the added tool ranked", func() bool {
		a, err := eng.Rank(ctx, engine.Request{Query: "convert celsius to fahrenheit", Limit: 1, All: true})
		return err == nil && len(a.Tools) == 1 && a.Tools[0].Name == "changing:extra"
	})
}

// countingEmbedder is a deterministic embedder that counts the documents
// it embeds.
type countingEmbedder struct{ docs atomic.Int64 }

func (e *countingEmbedder) ID() string { return "test/counting" }
func (e *countingEmbedder) Dim() int   { return 32 }
func (e *countingEmbedder) vec(s string) []float32 {
	v := make([]float32, 32)
	v[0] = 1
	for _, w := range strings.Fields(strings.ToLower(s)) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[1+h.Sum32()%31]++
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}
func (e *countingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.docs.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vec(t)
	}
	return out, nil
}
func (e *countingEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return e.vec(text), nil
}

// A server's tools are embedded once: a restart with the same servers
// makes no embedder call (vectors are cached by the tool's text, as for
// .meta tools).
func TestRestartEmbedsNothing(t *testing.T) {
	bin := filepath.Join(npmDir(t), "node_modules", ".bin")
	cfg := writeConfig(t, map[string]any{
		"everything": map[string]any{"command": filepath.Join(bin, "mcp-server-everything")},
		"good":       fakeEntry(t, "good", nil),
	})
	cache := t.TempDir()
	tools := grepTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var counts []int64
	for range 2 {
		emb := &countingEmbedder{}
		func() {
			c, err := LoadConfig(cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.New(ctx, engine.Options{Dirs: []string{tools}, Embedder: emb, CacheDir: cache, NoThresholds: true, Logger: quiet(),
				Providers: Providers(c, ProviderOptions{Runner: testRunner(t), Logger: quiet()}), ProviderWait: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if st := eng.Index().Stats(); st.Tools < 10 || st.Missing != 0 {
				t.Fatalf("index %+v: want the servers' tools in it", st)
			}
		}()
		counts = append(counts, emb.docs.Load())
	}
	if counts[0] < 10 || counts[1] != 0 {
		t.Errorf("documents embedded: %d at first, %d after a restart; want them all, then none", counts[0], counts[1])
	}
}
