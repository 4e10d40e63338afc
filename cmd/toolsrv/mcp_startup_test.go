package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsProject is a project directory that keeps its tools in ./tools,
// and an empty home directory (so no ~/.config/ollie/tools).
func toolsProject(t *testing.T) (proj, home string) {
	t.Helper()
	proj, home = t.TempDir(), t.TempDir()
	tools := filepath.Join(proj, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, meta := range map[string]string{
		"json_value.meta": `{"description":"Extract a value from JSON with a jq filter.","keywords":["jq","json"],"cmd":"jq"}`,
		"word_count.meta": `{"description":"Count the words of a text file.","cmd":"wc -w"}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, name), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proj, home
}

// noToolDirWant is what find_tools and the start-up line say in a
// toolsProject: why there is no tool, and the ./tools that is there.
const noToolDirWant = "does not exist (from the default); pass --tools ./tools (it holds 2 .meta files)"

// "toolsrv mcp" started without --tools in a project that keeps its tools
// in ./tools (none in the default directory) starts anyway: initialize
// and tools/list answer, and find_tools says why it finds nothing and
// names ./tools, as the start-up line on standard error does.
func TestMCPWithoutToolDirectory(t *testing.T) {
	bin := buildToolsrv(t)
	proj, home := toolsProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cmd := osexec.Command(bin, "mcp", "--no-cache")
	cmd.Dir = proj
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr)
	}
	defer cs.Close()
	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "call_tool,find_tools" {
		t.Errorf("tools/list: %v, want call_tool and find_tools", names)
	}
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"query": "get the version out of package.json"}})
	if err != nil {
		t.Fatalf("find_tools: %v", err)
	}
	var found struct {
		Tools      []any
		NoToolFits bool
		Reason     string
	}
	b, _ := json.Marshal(r.StructuredContent)
	if err := json.Unmarshal(b, &found); err != nil {
		t.Fatalf("find_tools: %v\n%s", err, b)
	}
	if r.IsError || !found.NoToolFits || len(found.Tools) != 0 || !strings.Contains(found.Reason, noToolDirWant) {
		t.Errorf("find_tools: %s\nwant noToolFits with a reason naming ./tools (%q)", b, noToolDirWant)
	}
	if !strings.Contains(stderr.String(), "toolsrv mcp: warning: no tool directory to read: ") || !strings.Contains(stderr.String(), noToolDirWant) {
		t.Errorf("the start-up line does not name ./tools:\n%s", stderr)
	}
}

// The same with the client the new user had, the MCP Inspector (its
// command-line mode): it connected to nothing before ("Connection
// closed"), and now shows find_tools' reason.
func TestMCPInspectorWithoutToolDirectory(t *testing.T) {
	npm := npmDir(t)
	bin := buildToolsrv(t)
	proj, home := toolsProject(t)
	inspect := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		cmd := osexec.CommandContext(ctx, filepath.Join(npm, "node_modules", ".bin", "mcp-inspector"), append([]string{"--cli", bin, "mcp", "--no-cache"}, args...)...)
		cmd.Dir = proj // the server starts where the Inspector runs
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "npm_config_offline=true"}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("mcp-inspector %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	if out := inspect("--method", "tools/list"); !strings.Contains(out, `"find_tools"`) || !strings.Contains(out, `"call_tool"`) {
		t.Errorf("tools/list: %s", out)
	}
	if out := inspect("--method", "tools/call", "--tool-name", "find_tools", "--tool-arg", "query=count the words of notes.txt"); !strings.Contains(out, noToolDirWant) {
		t.Errorf("find_tools does not name ./tools (%q):\n%s", noToolDirWant, out)
	}
}

// "toolsrv mcp" that cannot serve as asked (a thresholds file that is not
// one, an agent without a profile) does not exit before initialize, which
// a client shows as "connection closed": it answers initialize with the
// reason in its instructions, lists find_tools and call_tool, and both
// answer with an error that says why; it exits 1 when the client closes.
func TestMCPThatCannotStartSaysWhy(t *testing.T) {
	bin := buildToolsrv(t)
	proj, home := toolsProject(t)
	bad := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(bad, []byte(`{"format":"toolsrv-thresholds","version":2,"embedder":"x","policy":{"min":0.1,"coldMin":0.1,"maxTools":3,"typo":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a broken thresholds file", []string{"--thresholds", bad}, `unknown field "typo"`},
		{"an agent without a profile", []string{"--agent", "nobody", "--agents", t.TempDir()}, `no profile for agent "nobody"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			defer cancel()
			cmd := osexec.Command(bin, append([]string{"mcp", "--no-cache", "--tools", "tools"}, c.args...)...)
			cmd.Dir = proj
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
			stderr := &syncBuffer{}
			cmd.Stderr = stderr
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("initialize: %v\n%s", err, stderr)
			}
			if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "toolsrv could not start: ") || !strings.Contains(ins, c.want) {
				t.Errorf("instructions: %q, want the reason (%q)", ins, c.want)
			}
			var names []string
			for tl, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				names = append(names, tl.Name)
			}
			if strings.Join(names, ",") != "call_tool,find_tools" {
				t.Errorf("tools/list: %v, want call_tool and find_tools", names)
			}
			for _, name := range names {
				r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"query": "count the words", "tool": "word_count"}})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var text string
				for _, ct := range r.Content {
					if tc, ok := ct.(*sdk.TextContent); ok {
						text += tc.Text
					}
				}
				if !r.IsError || !strings.Contains(text, "toolsrv could not start: ") || !strings.Contains(text, c.want) {
					t.Errorf("%s: error %v, %q; want an error naming %q", name, r.IsError, text, c.want)
				}
			}
			if !strings.Contains(stderr.String(), "toolsrv mcp: ") || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("standard error does not say why:\n%s", stderr)
			}
			cs.Close()
			if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
		})
	}
}
