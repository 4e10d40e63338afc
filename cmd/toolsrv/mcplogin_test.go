package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/mcp"
)

// toolsrv mcp login and logout: what they refuse and say. (A login itself
// runs in TestConformanceClient, against the suite's authorization
// servers, and in package mcp's tests.)
func TestMCPLoginCommand(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {
		"remote": {"url": "http://127.0.0.1:1/mcp"},
		"local": {"command": "sh"},
		"plain": {"url": "http://127.0.0.1:1/mcp", "oauth": false},
		"broken": {"url": "ftp://nowhere"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_STATE_HOME": state, "PATH": os.Getenv("PATH")}
	login := filepath.Join(state, "toolsrv", "mcp-tokens", "remote.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in standard output
		err  string // in standard error
	}{
		{name: "no config", args: []string{"mcp", "login", "remote"}, code: 1, err: "no mcp config: pass --mcp-config FILE"},
		{name: "no name", args: []string{"mcp", "login", "--mcp-config", cfg}, code: 2, err: "give the NAME of one server"},
		{name: "bad timeout", args: []string{"mcp", "login", "--mcp-config", cfg, "--timeout", "0s", "remote"}, code: 2, err: "--timeout 0s"},
		{name: "unknown server", args: []string{"mcp", "login", "--mcp-config", cfg, "nope"}, code: 1, err: `no usable server "nope" in ` + cfg + " (servers: local, plain, remote)"},
		{name: "broken entry", args: []string{"mcp", "login", "--mcp-config", cfg, "broken"}, code: 1, err: "mcp server broken: \"url\" \"ftp://nowhere\""},
		{name: "stdio server", args: []string{"mcp", "login", "--mcp-config", cfg, "local"}, code: 1, err: "mcp server local is a stdio server"},
		{name: "oauth off", args: []string{"mcp", "login", "--mcp-config", cfg, "plain"}, code: 1, err: "mcp server plain takes no OAuth"},
		{name: "server unreachable", args: []string{"mcp", "login", "--mcp-config", cfg, "--timeout", "10s", "remote"}, code: 1, err: "initialize"},
		{name: "logout, none saved", args: []string{"mcp", "logout", "remote"}, code: 0, out: "no saved login of mcp server remote (" + login + ")"},
		{name: "logout, not a name", args: []string{"mcp", "logout", "../remote"}, code: 1, err: "is not a server name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLIWith(t, "", env, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d, want %d; stdout %q, want %q; stderr %q, want %q", code, tc.code, out, tc.out, errs, tc.err)
			}
		})
	}
	// A saved login is forgotten.
	if err := os.MkdirAll(filepath.Dir(login), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(login, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLIWith(t, "", env, "mcp", "logout", "remote")
	if _, err := os.Stat(login); code != 0 || err == nil || !strings.Contains(out, "forgot the saved login of mcp server remote (removed "+login+")") {
		t.Errorf("logout: exit %d, %q; the file: %v", code, out, err)
	}
	// No working directory of calls may hold the saved logins, be them,
	// or be inside them.
	cliEnv := &cliEnv{getenv: func(k string) string { return env[k] }}
	g := workDirGuard(cliEnv, nil, "", nil, "", guardPaths{})
	for _, d := range []string{mcp.DefaultTokenDir(cliEnv.getenv), filepath.Join(mcp.DefaultTokenDir(cliEnv.getenv), "sub"), filepath.Join(state, "toolsrv")} {
		os.MkdirAll(d, 0o700)
		if _, _, err := g.Check(d); err == nil {
			t.Errorf("%s accepted as a working directory", d)
		}
	}
}

func TestBrowserCommand(t *testing.T) {
	const addr = "https://as.example/authorize?a=1&state=x"
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{env: map[string]string{"BROWSER": "firefox --new-window"}, want: []string{"firefox", "--new-window", addr}},
		{env: map[string]string{"BROWSER": "open-it --url=%s --quiet:other"}, want: []string{"open-it", "--url=" + addr, "--quiet"}},
		{env: map[string]string{}, want: nil}, // no display
	} {
		got := browserCommand(func(k string) string { return tc.env[k] }, addr)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
	}
}
