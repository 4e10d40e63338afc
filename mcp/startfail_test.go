package mcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
)

// A stdio server that gives no tools says what it was doing: no reply to
// initialize within its startTimeout (and the end of its standard error),
// or how it ended before answering; a package runner (npx here) in a
// sandbox without network is a configuration warning, and its failure says
// that it likely needs "network": true. With "network": true, neither.
func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// It says something once the first request is in, then stalls.
	stall := script("stall.sh", `read -r line; echo "loading the plugins" >&2; while read -r line; do :; done`)
	exit := script("exit.sh", `echo "starting" >&2; echo "Error: cannot find module 'left-pad'" >&2; exit 1`)
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	npx := filepath.Join(dir, "bin", "npx")
	if err := os.WriteFile(npx, []byte("#!/bin/sh\necho \"npm error code ENOTFOUND\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfig(t, map[string]any{
		"stall":     map[string]any{"command": stall, "startTimeout": "3s"},
		"exit":      map[string]any{"command": exit},
		"npx":       map[string]any{"command": npx, "args": []string{"-y", "some-mcp-server"}},
		"npxonline": map[string]any{"command": npx, "args": []string{"-y", "some-mcp-server"}, "sandbox": map[string]any{"network": true}},
	})
	cfg, err := LoadConfig(cfgPath, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, p := range cfg.Problems {
		if p.Warning {
			warned = append(warned, p.Server)
			if !strings.Contains(p.Msg, `"npx"`) || !strings.Contains(p.Msg, `"network": true`) {
				t.Errorf("the warning about npx: %s", p.Error())
			}
		}
	}
	if len(warned) != 1 || warned[0] != "npx" {
		t.Errorf("configuration warnings for %v; want one, for npx", warned)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng := newEngine(t, ctx, cfgPath, ProviderOptions{MinBackoff: 100 * time.Millisecond}, engine.Options{NoThresholds: true})
	want := map[string][]string{
		"stall":     {"no reply to initialize after 3s", "its standard error ends: loading the plugins"},
		"exit":      {"exited with status 1 before answering initialize", "its standard error ends: starting | Error: cannot find module 'left-pad'"},
		"npx":       {"exited with status 1 before answering initialize", "npm error code ENOTFOUND", `likely needs "sandbox": {"network": true}`},
		"npxonline": {"exited with status 1 before answering initialize", "npm error code ENOTFOUND"},
	}
	problem := func(server string) string {
		for _, p := range eng.Catalog().Problems {
			if strings.HasPrefix(p.Error(), "mcp server "+server+" (") {
				return p.Error()
			}
		}
		return ""
	}
	// Each server is started again and again (backoff from 100 ms): the
	// first attempts may come before the sandbox has the server running.
	fits := func(s string) bool {
		got := problem(s)
		for _, w := range want[s] {
			if !strings.Contains(got, w) {
				return false
			}
		}
		return true
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	for wctx.Err() == nil {
		all := true
		for s := range want {
			all = all && fits(s)
		}
		if all {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for s, parts := range want {
		got := problem(s)
		if !fits(s) {
			t.Errorf("%s: %q; want it to hold %q", s, got, parts)
		}
		if strings.Contains(got, "context deadline exceeded") || strings.Contains(got, "exit status") {
			t.Errorf("%s: %q: the SDK's or the process's words, not what the server was doing", s, got)
		}
	}
	if strings.Contains(problem("npxonline"), "network") {
		t.Errorf("npx with network: %q still suggests network", problem("npxonline"))
	}
}

// A stdio server that answers nothing to a request it does not know (the
// 2026-07-28 revision's server/discover, which the client sends first) is
// reached all the same: the client takes the silence for "method not
// found" after discoverWait and goes on with initialize, well within the
// server's startTimeout (without that, the start failed with "no reply to
// initialize" and the server offered nothing).
func TestSilentServerIsReached(t *testing.T) {
	cfgPath := writeConfig(t, map[string]any{
		"silent": map[string]any{"command": mcpFixture(t), "args": []string{"-many", "3", "-silent"}, "startTimeout": "10s"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	eng := newEngine(t, ctx, cfgPath, ProviderOptions{}, engine.Options{NoThresholds: true})
	var got []string
	for _, tool := range eng.Catalog().Tools {
		if strings.HasPrefix(tool.Name, "silent:") {
			got = append(got, tool.Name)
		}
	}
	if len(got) != 3 {
		var problems []string
		for _, p := range eng.Catalog().Problems {
			problems = append(problems, p.Error())
		}
		t.Fatalf("tools of the silent server: %v, want 3; problems: %q", got, problems)
	}
}

// A stdio server that sends a message past the line bound (16 MiB) has
// its connection closed, and the problem says so: the server then dies of
// the closed pipe, and its own last words (EPIPE) would not say why.
func TestOversizeMessageIsNamed(t *testing.T) {
	toolsFile := filepath.Join(t.TempDir(), "tools.json")
	huge := `[{"name": "huge", "description": "` + strings.Repeat("d", maxLine+1) + `", "inputSchema": {"type": "object"}}]`
	if err := os.WriteFile(toolsFile, []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfig(t, map[string]any{
		"huge": map[string]any{"command": mcpFixture(t), "args": []string{"-tools", toolsFile}, "startTimeout": "20s"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	eng := newEngine(t, ctx, cfgPath, ProviderOptions{}, engine.Options{NoThresholds: true})
	var got []string
	for _, p := range eng.Catalog().Problems {
		if strings.HasPrefix(p.Error(), "mcp server huge (") {
			got = append(got, p.Error())
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "it sent a message of over 16 MiB on standard output") {
		t.Errorf("problems of the server: %q; want one naming the message over 16 MiB", got)
	}
}
