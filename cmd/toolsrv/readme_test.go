package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README and docs/ stand alone in a user's clone (which has no SPEC):
// no references to SPEC sections, and the formats a user needs are in
// them. The CLI's own help and comments do not cite SPEC sections either.
func TestReadmeStandsAlone(t *testing.T) {
	var all strings.Builder
	for _, f := range docsFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "SPEC") {
			t.Errorf("%s refers to the SPEC, which a clone does not have", f)
		}
		if strings.Contains(string(b), "../shared") {
			t.Errorf("%s refers to ../shared, which a clone does not have", f)
		}
		all.Write(b)
	}
	readme := all.String()
	for _, want := range []string{
		// variant match keys, and how they combine
		"| `binary` |", "| `file` |", "| `os` |", "| `arch` |", "| `env` |", "| `nenv` |",
		"are ANDed", "any element does (OR)", "**first** variant", "hidden on this host",
		// agent profiles
		"`~/.config/ollie/agents/NAME.json`", `{"autoLoad": [`, `"allowTools": [`,
		// pass-through fields
		"**Pass-through fields**", "does nothing with them but show",
		// diod's clients
		`diodls -s 127.0.0.1:5640 -a "$TOKEN" -l`, `diodcat -s 127.0.0.1:5640 -a "$TOKEN" tools`, "TCP only", "read-only",
		"--listen tcp:127.0.0.1:5640",
		// 9P over TCP: the token, and where it shows
		"$TOOLSRV_9P_TOKEN", "~/.local/state/toolsrv/9p-token", `aname="$TOKEN"`, "/proc/mounts",
		// MCP: how to hand the tools to Claude Code (the rest is docs/mcp.md's)
		"claude mcp add toolsrv", "docs/mcp.md",
		// the tests: the quick suite, and the variable that makes missing dependencies fail
		"go test ./...", "go test -short ./...", "TOOLSRV_TEST_REQUIRE=npm,conformance,sshd,diod,postgres",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md and docs/*.md lack %q", want)
		}
	}
	for name := range commands() {
		if !strings.Contains(readme, "`toolsrv "+name) && !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("README.md and docs/*.md do not mention the %s command", name)
		}
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "SPEC \u00a7") {
			t.Errorf("%s cites a SPEC section", f)
		}
	}
}
