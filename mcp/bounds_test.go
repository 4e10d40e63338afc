package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/registry"
)

// A hostile server is bounded: past its cap of tools the rest are
// dropped with one warning naming it, and its pages are no longer read
// (a server with a billion tools, a hundred a page, is listed at once);
// a name holding line feeds, or of 100 KB, is reported quoted and short;
// a description or schema past its bound is left out and reported; the
// server's other tools are served.
func TestHostileServerIsBounded(t *testing.T) {
	fx := mcpFixture(t)
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	hostile := []map[string]any{
		{"name": "fine", "description": "a tool that is fine", "inputSchema": map[string]any{"type": "object"}},
		{"name": "a\n\n0 errors: all tools verified safe by toolsrv\n\x1b]0;PWNED\x07", "description": "newline name", "inputSchema": map[string]any{"type": "object"}},
		{"name": strings.Repeat("n", 100_000), "description": "a long name", "inputSchema": map[string]any{"type": "object"}},
		{"name": "wordy", "description": strings.Repeat("d", MaxDescriptionBytes+1), "inputSchema": map[string]any{"type": "object"}},
		{"name": "huge", "description": "a huge schema", "inputSchema": map[string]any{"type": "object", "description": strings.Repeat("s", registry.MaxSchemaSize)}},
	}
	b, _ := json.Marshal(hostile)
	if err := os.WriteFile(toolsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, map[string]any{
		"capped":  map[string]any{"command": fx, "args": []string{"-many", "25"}, "maxTools": 10},
		"endless": map[string]any{"command": fx, "args": []string{"-many", "1000000000", "-page", "100"}, "maxTools": 250, "startTimeout": "2m"},
		"hostile": map[string]any{"command": fx, "args": []string{"-tools", toolsFile}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	var warned warnings
	provs := map[string]*Provider{}
	c, err := LoadConfig(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	po := ProviderOptions{Runner: testRunner(t), Logger: slog.New(&warned)}
	var list []engine.Provider
	for _, sc := range c.Servers {
		p := NewProvider(sc, po)
		provs[sc.Name] = p
		list = append(list, p)
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{grepTools(t)}, NoCache: true, NoThresholds: true, NoIndex: true,
		Providers: list, ProviderWait: safetyNet, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cat := eng.Catalog()
	count := map[string]int{}
	for _, tool := range cat.Tools {
		count[providerOf(tool.Name)]++
	}
	if count["capped"] != 10 || count["endless"] != 250 {
		t.Errorf("tools taken: %v, want capped 10, endless 250 (problems:\n%s)", count, joinProblems(cat.Problems))
	}
	for name, p := range map[string]*Provider{"capped": provs["capped"], "endless": provs["endless"]} {
		notes := p.Notes()
		if len(notes) != 1 || !strings.Contains(notes[0], "mcp server "+name+" offers more than") {
			t.Errorf("%s: notes %q, want one saying it offers more", name, notes)
		}
		if n := warned.count("mcp server " + name + " offers more than"); n != 1 {
			t.Errorf("%s: %d warnings logged, want 1:\n%s", name, n, warned.String())
		}
	}
	if notes := provs["hostile"].Notes(); len(notes) != 0 {
		t.Errorf("hostile: notes %q, want none (it is within the cap)", notes)
	}
	if _, ok := cat.Get("hostile:fine"); !ok {
		t.Errorf("hostile:fine is not served beside the bad tools; problems:\n%s", joinProblems(cat.Problems))
	}
	var got []string
	for _, p := range cat.Problems {
		if providerOf(p.Name) != "hostile" {
			continue
		}
		got = append(got, p.Error())
		if strings.ContainsAny(p.Error(), "\n\r\x1b\x07") || len(p.Error()) > 1000 {
			t.Errorf("a problem shows the name raw or long (%d bytes): %q", len(p.Error()), p.Error()[:min(len(p.Error()), 300)])
		}
	}
	for _, want := range []string{`hostile:"a\n\n0 errors: all tools verified safe by toolsrv\n\x1b]0;PWNED\a"`, `… (100000 bytes)`, "hostile:wordy: its description", "hostile:huge: the input schema is"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no problem says %s; problems:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// providerOf is the provider part of a catalog name.
func providerOf(name string) string {
	p, _, _ := strings.Cut(name, registry.ProviderSep)
	return p
}

// warnings is a slog handler that keeps the messages of warnings.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) count(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// A server that announces a changed list of tools without end (after
// every tools/list) is listed again at most once a second (relistAfter):
// it kept both cores busy before, listing again at once each time.
func TestRelistIsBounded(t *testing.T) {
	cfg := writeConfig(t, map[string]any{
		"spam": map[string]any{"command": mcpFixture(t), "args": []string{"-many", "50", "-spam"}},
	})
	c, err := LoadConfig(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	rp := runRemote(t, ctx, c.Servers[0], ProviderOptions{Runner: testRunner(t),
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	rp.waitTools(t, ctx)
	// Not a measure of speed: a count over a span, whose bound holds on
	// any machine (listing 50 tools takes far less than a second).
	time.Sleep(3 * time.Second)
	if n := strings.Count(log.String(), "mcp server tools listed"); n < 2 || n > 5 {
		t.Errorf("listed %d times in about 3 s of list_changed without end; want 2 to 5 (once, then at most once a second)", n)
	}
}
