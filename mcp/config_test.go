package mcp

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	lookPath := func(name string) (string, error) {
		if name == "npx" || name == "node" {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	getenv := func(k string) string {
		switch k {
		case "HOME":
			return dir
		case "SECRET":
			return "s3cret"
		}
		return ""
	}
	for _, tc := range []struct {
		name, json string
		err        string // a whole-file error
		problem    string // a problem of one server
		warning    string // a warning
		check      func(*Config) string
	}{
		{name: "not json", json: "{\n  \"mcpServers\": {\n    \"a\": {,}\n  }\n}", err: "not valid JSON at line 3"},
		{name: "not an object", json: `[1]`, err: "must hold a JSON object"},
		{name: "no mcpServers", json: `{"servers": {}}`, err: `no "mcpServers" object (keys: servers)`},
		{name: "mcpServers not an object", json: `{"mcpServers": []}`, err: `"mcpServers" must be an object`},
		{name: "stdio", json: `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"}, "timeout": 5, "sandbox": {"network": true, "read": ["~"], "write": ["."]}}}}`,
			check: func(c *Config) string {
				s := c.Servers[0]
				if s.Transport != Stdio || s.Command != "/usr/bin/npx" || s.Args[1] != "pkg" || s.Env["K"] != "V" || s.Timeout != 5*time.Second ||
					!s.Sandbox.Network || s.Sandbox.Read[0] != dir || s.Sandbox.Write[0] != dir {
					return "parsed as " + s.Describe()
				}
				return ""
			}},
		{name: "http", json: `{"mcpServers": {"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}`,
			check: func(c *Config) string {
				if s := c.Servers[0]; s.Transport != HTTP || s.Headers["Authorization"] != "Bearer x" {
					return "parsed as " + s.Describe()
				}
				return ""
			}},
		{name: "sse", json: `{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}`,
			check: func(c *Config) string {
				if c.Servers[0].Transport != SSE {
					return "not sse"
				}
				return ""
			}},
		{name: "sandbox false", json: `{"mcpServers": {"free": {"command": "node", "sandbox": false}}}`,
			check: func(c *Config) string {
				if !c.Servers[0].Unsandboxed {
					return "not unsandboxed"
				}
				return ""
			}},
		{name: "unknown transport", json: `{"mcpServers": {"x": {"command": "node", "type": "websocket"}}}`, problem: `mcp server x: unknown transport "websocket"`},
		{name: "command and url", json: `{"mcpServers": {"x": {"command": "node", "url": "http://a"}}}`, problem: `both "command" and "url"`},
		{name: "neither", json: `{"mcpServers": {"x": {}}}`, problem: `neither "command" nor "url"`},
		{name: "bad url", json: `{"mcpServers": {"x": {"url": "ftp://a"}}}`, problem: `want an http:// or https:// URL`},
		{name: "bad name", json: `{"mcpServers": {"a:b": {"command": "node"}}}`, problem: `mcp server a:b: the name must be a valid tool name`},
		{name: "args not a list", json: `{"mcpServers": {"x": {"command": "node", "args": "-y"}}}`, problem: `"args": want []string, not string`},
		{name: "missing command", json: `{"mcpServers": {"x": {"command": "no-such-server"}}}`, problem: `"no-such-server" is not on $PATH`},
		{name: "bad sandbox key", json: `{"mcpServers": {"x": {"command": "node", "sandbox": {"net": true}}}}`, problem: `unknown field "net"`},
		{name: "missing write path", json: `{"mcpServers": {"x": {"command": "node", "sandbox": {"write": ["/no/such/dir"]}}}}`, problem: `/no/such/dir`},
		{name: "bad timeout", json: `{"mcpServers": {"x": {"command": "node", "timeout": "soon"}}}`, problem: `"timeout" "soon"`},
		{name: "unknown key", json: `{"mcpServers": {"x": {"command": "node", "autoApprove": []}}}`, warning: `unknown key "autoApprove" ignored`},
		{name: "disabled", json: `{"mcpServers": {"x": {"command": "node", "disabled": true}}}`, warning: `disabled`},
		{name: "oauth by default", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp"}}}`,
			check: func(c *Config) string {
				if o := c.Servers[0].OAuth; o == nil || o.Grant != GrantAuthorizationCode {
					return fmt.Sprintf("oauth %+v, want the authorization code grant", o)
				}
				return ""
			}},
		{name: "oauth off", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": false}}}`,
			check: func(c *Config) string {
				if c.Servers[0].OAuth != nil {
					return "oauth on"
				}
				return ""
			}},
		{name: "authorization header, no oauth", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "headers": {"authorization": "Bearer x"}}}}`,
			check: func(c *Config) string {
				if c.Servers[0].OAuth != nil {
					return "oauth on beside an Authorization header"
				}
				return ""
			}},
		{name: "oauth client credentials", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"grant": "client_credentials", "clientId": "id", "clientSecretEnv": "SECRET", "issuer": "https://login.example", "scopes": ["a", "b"]}}}}`,
			check: func(c *Config) string {
				if o := c.Servers[0].OAuth; o == nil || o.Grant != GrantClientCredentials || o.ClientSecret != "s3cret" || o.Issuer != "https://login.example" || len(o.Scopes) != 2 {
					return fmt.Sprintf("oauth %+v", o)
				}
				return ""
			}},
		{name: "oauth and authorization header", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "headers": {"Authorization": "x"}, "oauth": {}}}}`, problem: `both "oauth" and an Authorization header`},
		{name: "client credentials without secret", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"grant": "client_credentials", "clientId": "id"}}}}`, problem: `needs "clientId" and "clientSecret"`},
		{name: "secret env unset", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"clientId": "id", "clientSecretEnv": "NOPE"}}}}`, problem: `names $NOPE, which is empty`},
		{name: "metadata url not https", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"clientMetadataUrl": "http://example.com/client.json"}}}}`, problem: `"clientMetadataUrl"`},
		{name: "bad grant", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"grant": "password"}}}}`, problem: `"grant" "password"`},
		{name: "bad scope", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"scopes": ["a b"]}}}}`, problem: `scope "a b"`},
		{name: "unknown oauth key", json: `{"mcpServers": {"r": {"url": "https://example.com/mcp", "oauth": {"client_id": "x"}}}}`, problem: `unknown field "client_id"`},
		{name: "oauth on stdio", json: `{"mcpServers": {"x": {"command": "node", "oauth": {}}}}`, problem: `"oauth" are for http and sse servers`},
		{name: "oauth on sse", json: `{"mcpServers": {"x": {"type": "sse", "url": "http://127.0.0.1:1/sse", "oauth": {}}}}`, problem: `"oauth" is for http (streamable HTTP) servers, not sse ones`},
		{name: "one bad, one good", json: `{"mcpServers": {"bad": {"type": "carrier-pigeon"}, "good": {"command": "node"}}}`, problem: `mcp server bad: unknown transport`,
			check: func(c *Config) string {
				if len(c.Servers) != 1 || c.Servers[0].Name != "good" {
					return "the good server is not configured"
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(file, []byte(tc.json), getenv, lookPath)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), file) {
					t.Fatalf("error %v, want one naming the file with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var probs, warns []string
			for _, p := range c.Problems {
				if p.Warning {
					warns = append(warns, p.Error())
				} else {
					probs = append(probs, p.Error())
				}
			}
			if got := strings.Join(probs, "\n"); (tc.problem == "") != (got == "") || !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want %q", got, tc.problem)
			}
			if got := strings.Join(warns, "\n"); (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			if tc.check != nil {
				if msg := tc.check(c); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func TestLoadConfigMissing(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.json"), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "mcpServers") {
		t.Errorf("missing file: %v", err)
	}
}
