package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/registry"
)

// safetyNet bounds a test's wait for an event (an answer, an exit, a
// connection): the test waits for the event itself, and this only ends a
// wait that would never end. Generous, because a loaded machine (load ~170
// on 2 cores) is that much slower; nothing is asserted on speed.
const safetyNet = 3 * time.Minute

// The test binary plays two extra roles: the sandbox helper, and small MCP
// servers written with the SDK (fakeServerEnv names the kind), for what
// the npm servers do not do: print garbage, hang, offer a broken schema,
// die, change their tools.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == exec.HelperArg {
		os.Exit(exec.HelperMain(os.Args[2:]))
	}
	if kind := os.Getenv(fakeServerEnv); kind != "" {
		os.Exit(fakeServer(kind))
	}
	dir, err := os.MkdirTemp("", "toolsrv-mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "a directory for the test's programs:", err)
		os.Exit(1)
	}
	fixture.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is testdata/mcpfixture, built once (mcpFixture).
var fixture struct {
	dir  string
	once sync.Once
	path string
	err  error
}

// mcpFixture builds testdata/mcpfixture (an MCP server that says what a
// well-behaved one would not: see its doc) once, and returns its path.
func mcpFixture(t testing.TB) string {
	t.Helper()
	fixture.once.Do(func() {
		bin := filepath.Join(fixture.dir, "mcpfixture")
		cmd := osexec.Command("go", "build", "-o", bin, "./testdata/mcpfixture")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fixture.err = fmt.Errorf("go build ./testdata/mcpfixture: %w\n%s", err, out)
			return
		}
		fixture.path = bin
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.path
}

const fakeServerEnv = "TOOLSRV_TEST_MCP_SERVER"

// fakeServer serves kind on standard input and output:
//
//	good       a tool "say" that echoes {"text"}, "fail" that reports an
//	           error (isError), "refuse" that answers with a JSON-RPC error
//	garbage    as good, after a banner line on standard output
//	hang       reads its input and never answers
//	badschema  "ok", and "broken" whose input schema does not compile
//	crash      as good, and exits half a second after it starts (it
//	           appends a line to $STARTS each start)
//	changing   "add_tool" adds a tool "extra" (the client gets
//	           notifications/tools/list_changed)
func fakeServer(kind string) int {
	if f := os.Getenv("STARTS"); f != "" {
		if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(fh, time.Now().Format(time.RFC3339Nano))
			fh.Close()
		}
	}
	switch kind {
	case "hang":
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "garbage":
		fmt.Println("Hello! fake server v1 starting up (this line is not JSON-RPC)")
	case "crash":
		go func() {
			time.Sleep(500 * time.Millisecond)
			fmt.Fprintln(os.Stderr, "fake server: crashing on purpose")
			os.Exit(3)
		}()
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "fake-" + kind, Version: "1"}, nil)
	say := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var a struct{ Text string }
		json.Unmarshal(req.Params.Arguments, &a)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "said: " + a.Text}}}, nil
	}
	textSchema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	switch kind {
	case "badschema":
		s.AddTool(&sdk.Tool{Name: "ok", Description: "a tool that works", InputSchema: textSchema}, say)
		s.AddTool(&sdk.Tool{Name: "broken", Description: "a tool whose schema does not compile",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":17}}}`)}, say)
	case "changing":
		s.AddTool(&sdk.Tool{Name: "add_tool", Description: "adds another tool to this server", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				s.AddTool(&sdk.Tool{Name: "extra", Description: "convert a temperature from celsius to fahrenheit", InputSchema: textSchema}, say)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil
			})
	default:
		s.AddTool(&sdk.Tool{Name: "say", Description: "say a text back", InputSchema: textSchema}, say)
		s.AddTool(&sdk.Tool{Name: "fail", Description: "always fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it went wrong"}}}, nil
			})
		s.AddTool(&sdk.Tool{Name: "refuse", Description: "always refuses, with a JSON-RPC error", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused: the server is tired"}
			})
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		return 1
	}
	return 0
}

// fakeEntry is a config entry that runs the fake server of kind.
func fakeEntry(t testing.TB, kind string, extraEnv map[string]string) map[string]any {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{fakeServerEnv: kind}
	for k, v := range extraEnv {
		env[k] = v
	}
	return map[string]any{"command": self, "env": env}
}

// npmDir is where the npm servers are installed ($TOOLSRV_TEST_NPM_DIR,
// else testdata/npm: make npm-deps). Where they are not, the tests that
// use them skip, unless TOOLSRV_TEST_REQUIRE names npm (as CI does): then
// they fail.
func npmDir(t testing.TB) string {
	t.Helper()
	return testdeps.NPMDir(t, "testdata/npm", "mcp-server-everything", "mcp-server-filesystem", "mcp-server-memory")
}

// testRunner is a sandbox runner whose helper is the test binary.
func testRunner(t testing.TB) *exec.Runner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := exec.NewRunner(exec.Options{SelfExe: self, KillGrace: 200 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// writeConfig writes {"mcpServers": servers} and returns its path.
func writeConfig(t testing.TB, servers map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinProblems(ps []registry.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Error())
		b.WriteString("\n")
	}
	return b.String()
}
