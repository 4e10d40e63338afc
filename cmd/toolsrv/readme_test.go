package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README stands alone in a user's clone (which has no SPEC): no
// references to SPEC sections, and the formats a user needs are in it.
// The CLI's own help and comments do not cite SPEC sections either.
func TestReadmeStandsAlone(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if strings.Contains(readme, "SPEC") {
		t.Errorf("README.md refers to the SPEC, which a clone does not have")
	}
	if strings.Contains(readme, "../shared") {
		t.Errorf("README.md refers to ../shared, which a clone does not have")
	}
	for _, want := range []string{
		// variant match keys, and how they combine
		"| `binary` |", "| `file` |", "| `os` |", "| `arch` |", "| `env` |", "| `nenv` |",
		"are ANDed", "any element does (OR)", "**first** variant", "hidden on this host",
		// agent profiles
		"`~/.config/ollie/agents/NAME.json`", `{"autoLoad": [`, `"allowTools": [`,
		// pass-through fields
		"**Pass-through fields**", "does nothing with them but show",
		// diod's clients
		"diodls -s 127.0.0.1:5640 -a / -l", "diodcat -s 127.0.0.1:5640 -a / tools", "TCP only", "read-only",
		"--listen tcp:127.0.0.1:5640",
		// MCP: client config, the Inspector's commands, naming, config keys
		`"mcpServers"`, "claude mcp add toolsrv", "--method tools/list", "--tool-name find_tools", "--tool-name call_tool",
		"**`SERVER:TOOL`**", "| `sandbox` |", "| `startTimeout` |", `"sandbox": false`,
		// the tests: the quick suite, and the variable that makes missing dependencies fail
		"go test ./...", "go test -short ./...", "TOOLSRV_TEST_REQUIRE=npm,sshd,diod",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	for name := range commands() {
		if !strings.Contains(readme, "`toolsrv "+name) && !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("README.md does not mention the %s command", name)
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
