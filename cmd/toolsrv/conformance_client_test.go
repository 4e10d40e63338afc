package main

// The official MCP conformance suite's client scenarios, run against
// toolsrv as an MCP client: the suite starts a server for each scenario
// and runs a command with the server's URL; that command (this test
// binary, in the role clientConformanceDriver) drives the real toolsrv as
// a person would: an --mcp-config naming the suite's server, then
// "toolsrv mcp login" where the server asks for OAuth (the browser is this
// test binary again, following the authorization server's redirects to
// toolsrv's loopback listener), "toolsrv ls", and "toolsrv call" of the
// scenario's tool; for elicitation, "toolsrv mcp" served to an MCP client
// that answers the question, so that toolsrv passes it on.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// The roles of this test binary in the client scenarios (set in the
// environment of the command the suite runs).
const (
	clientConformanceDriverEnv  = "TOOLSRV_TEST_CONFORMANCE_CLIENT"
	clientConformanceBrowserEnv = "TOOLSRV_TEST_CONFORMANCE_BROWSER"
)

func init() {
	// Roles, before the tests: the browser first (it runs with the
	// driver's environment too).
	if os.Getenv(clientConformanceBrowserEnv) != "" && len(os.Args) == 2 {
		os.Exit(clientConformanceBrowser(os.Args[1]))
	}
	if os.Getenv(clientConformanceDriverEnv) != "" && len(os.Args) == 2 {
		os.Exit(clientConformanceDriver(os.Args[1]))
	}
}

// clientConformanceDir is where make conformance-deps installs the suite
// and its Node.js.
var clientConformanceDir = filepath.Join("..", "..", "mcp", "testdata", "conformance")

// clientConformanceBaseline lists the client scenarios toolsrv is
// expected to fail, each with its reason.
var clientConformanceBaseline = filepath.Join("testdata", "conformance", "client-expected-failures.yaml")

// clientMustPass are the client scenarios issue 48 requires: none may be
// in the baseline.
var clientMustPass = []string{"sse-retry", "elicitation-sep1034-client-defaults", "auth/metadata-default",
	"auth/basic-cimd", "auth/pre-registration", "auth/client-credentials-basic"}

// TestConformanceClient runs every client scenario of the suite (one
// run of --suite all) against toolsrv; a scenario that fails and is not
// in the baseline, or passes and is, fails the test.
func TestConformanceClient(t *testing.T) {
	testdeps.Long(t, "the conformance suite's client scenarios: about 50 scenarios, each a few toolsrv runs")
	node, suite := clientConformanceSuite(t)
	bin := buildToolsrv(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	baseline, err := filepath.Abs(clientConformanceBaseline)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, suite, "client", "--command", self, "--suite", "all", "--expected-failures", baseline,
		"--timeout", "90000", "--output-dir", "results")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), clientConformanceDriverEnv+"=1", "TOOLSRV_TEST_BIN="+bin, "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	table := clientConformanceTable(work)
	t.Logf("client scenarios (pass/fail):\n%s", table)
	if err != nil {
		t.Fatalf("the conformance suite's client scenarios: %v (a scenario failed that the baseline %s does not list, or one it lists passed):\n%s",
			err, clientConformanceBaseline, clientTail(out.String(), 80))
	}
}

// TestConformanceClientBaseline checks the baseline itself: every entry
// gives its reason, and none of the scenarios that must pass is in it.
func TestConformanceClientBaseline(t *testing.T) {
	data, err := os.ReadFile(clientConformanceBaseline)
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`^  - ([a-z0-9/_.:-]+)\s*(#.*)?$`)
	n := 0
	for i, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "  - ") {
			continue
		}
		m := entry.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %d: %q is not \"  - SCENARIO # reason\"", i+1, l)
			continue
		}
		n++
		if len(strings.TrimSpace(strings.TrimPrefix(m[2], "#"))) < 10 {
			t.Errorf("line %d: %s has no reason (a comment after it)", i+1, m[1])
		}
		for _, must := range clientMustPass {
			if m[1] == must {
				t.Errorf("line %d: %s must pass, and is listed as an expected failure", i+1, must)
			}
		}
	}
	if !strings.HasPrefix(string(data), "#") || !strings.Contains(string(data), "\nclient:\n") || n == 0 {
		t.Errorf("%s: want a commented YAML file with a client: list of scenarios", clientConformanceBaseline)
	}
}

// clientConformanceSuite is the pinned suite's Node.js and entry point;
// missing (skip, or fail where required) when make conformance-deps has
// not installed them.
func clientConformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	dir, err := filepath.Abs(clientConformanceDir)
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", "node", "bin", "node")
	suite = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			testdeps.Missing(t, "conformance", fmt.Sprintf("the MCP conformance suite is not installed (%s is missing)", p),
				"apt-get install -y nodejs npm, then make conformance-deps")
		}
	}
	return node, suite
}

// clientConformanceTable is each scenario's outcome, from the checks the
// suite wrote under dir/results: pass, or fail with the failed checks.
func clientConformanceTable(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "results", "*", "checks.json"))
	more, _ := filepath.Glob(filepath.Join(dir, "results", "*", "*", "checks.json")) // auth/NAME-TIME
	files = append(files, more...)
	var rows []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var checks []struct{ ID, Status string }
		if json.Unmarshal(data, &checks) != nil {
			continue
		}
		var failed []string
		for _, c := range checks {
			if c.Status == "FAILURE" {
				failed = append(failed, c.ID)
			}
		}
		rel, _ := filepath.Rel(filepath.Join(dir, "results"), filepath.Dir(f))
		scenario := regexp.MustCompile(`-\d{4}-\d\d-\d\dT.*$`).ReplaceAllString(rel, "")
		if len(failed) == 0 {
			rows = append(rows, "pass  "+scenario)
		} else {
			rows = append(rows, "FAIL  "+scenario+" ("+strings.Join(failed, ", ")+")")
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][6:] < rows[j][6:] })
	return strings.Join(rows, "\n")
}

func clientTail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// clientConformanceDriver is the command the suite runs for a scenario,
// with the server's URL: it drives $TOOLSRV_TEST_BIN as a person would.
// Its output goes to the suite's results (stdout.txt, stderr.txt).
func clientConformanceDriver(url string) int {
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cctx map[string]any
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cctx)
	d, err := newClientConformanceRun(url, scenario, cctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		return 1
	}
	defer os.RemoveAll(d.dir)
	if err := d.run(); err != nil {
		fmt.Fprintf(os.Stderr, "driver: scenario %s: %v\n", scenario, err)
		return 1
	}
	return 0
}

// clientConformanceRun is one scenario's toolsrv: its configuration, its state
// directory and its environment.
type clientConformanceRun struct {
	url, scenario string
	context       map[string]any
	bin, dir      string
	config, tools string
	env           []string
}

func newClientConformanceRun(url, scenario string, cctx map[string]any) (*clientConformanceRun, error) {
	bin := os.Getenv("TOOLSRV_TEST_BIN")
	if bin == "" {
		return nil, fmt.Errorf("no TOOLSRV_TEST_BIN")
	}
	dir, err := os.MkdirTemp("", "toolsrv-conformance-client-")
	if err != nil {
		return nil, err
	}
	d := &clientConformanceRun{url: url, scenario: scenario, context: cctx, bin: bin, dir: dir,
		config: filepath.Join(dir, "mcp.json"), tools: filepath.Join(dir, "tools")}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"tools", "home", "state", "cache", "work"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	d.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8",
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		// The person's browser: this binary, which follows the
		// authorization server's redirects back to toolsrv.
		"BROWSER=" + self, clientConformanceBrowserEnv + "=1"}
	entry := map[string]any{"url": url}
	id, _ := cctx["client_id"].(string)
	secret, _ := cctx["client_secret"].(string)
	switch {
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		entry["oauth"] = map[string]any{"grant": "client_credentials", "clientId": id, "clientSecret": secret}
	case id != "":
		oauth := map[string]any{"clientId": id}
		if secret != "" {
			oauth["clientSecret"] = secret
		}
		entry["oauth"] = oauth
	case strings.HasPrefix(scenario, "auth/"):
		// The suite's authorization servers take this client ID
		// metadata document where they support them; the others get a
		// client registered dynamically.
		entry["oauth"] = map[string]any{"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"conf": entry}})
	return d, os.WriteFile(d.config, b, 0o600)
}

// toolsrv runs one toolsrv command, its output relayed (standard output
// also returned).
func (d *clientConformanceRun) toolsrv(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, d.bin, args...)
	cmd.Env, cmd.Dir = d.env, d.dir
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &out), io.MultiWriter(os.Stderr, &errs)
	fmt.Fprintf(os.Stderr, "driver: toolsrv %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("toolsrv %s: %w: %s", args[0], err, errs.Bytes())
	}
	return out.Bytes(), nil
}

// call calls the server's tool; when toolsrv says to log in (the server
// asks for more than the saved login has), it logs in and calls again,
// as a person would.
func (d *clientConformanceRun) call(tool, args string) error {
	call := []string{"call", "--tools", d.tools, "--mcp-config", d.config, "--cwd", filepath.Join(d.dir, "work"), "conf:" + tool, args}
	_, err := d.toolsrv(call...)
	if err == nil || !strings.Contains(err.Error(), `log in with "toolsrv mcp login conf"`) {
		return err
	}
	if err := d.login(); err != nil {
		return err
	}
	_, err = d.toolsrv(call...)
	return err
}

func (d *clientConformanceRun) login() error {
	_, err := d.toolsrv("mcp", "login", "--mcp-config", d.config, "--timeout", "60s", "conf")
	return err
}

func (d *clientConformanceRun) run() error {
	if strings.HasPrefix(d.scenario, "auth/") {
		if err := d.login(); err != nil {
			return err
		}
	}
	out, err := d.toolsrv("ls", "--json", "--tools", d.tools, "--mcp-config", d.config)
	if err != nil {
		return err
	}
	var cat struct {
		Tools []struct {
			Name string
			Args json.RawMessage
		}
	}
	if err := json.Unmarshal(out, &cat); err != nil {
		return fmt.Errorf("toolsrv ls --json: %w", err)
	}
	schemas := map[string]json.RawMessage{}
	var names []string
	for _, t := range cat.Tools {
		if n, ok := strings.CutPrefix(t.Name, "conf:"); ok {
			schemas[n] = t.Args
			names = append(names, n)
		}
	}
	switch {
	case d.scenario == "tools_call":
		return d.call("add_numbers", `{"a": 5, "b": 3}`)
	case d.scenario == "sse-retry":
		return d.call("test_reconnection", "{}")
	case strings.HasPrefix(d.scenario, "auth/"):
		return d.call("test-tool", "{}")
	case d.scenario == "elicitation-sep1034-client-defaults":
		return d.viaMCP(map[string]any{}, "test_client_elicitation_defaults")
	case d.scenario == "sep-2322-client-request-state":
		// Some of its tools answer in ways a client must refuse.
		d.viaMCP(map[string]any{"confirmed": true}, "test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type")
		return nil
	case d.scenario == "json-schema-2020-12-preservation":
		// The schema as toolsrv holds it, echoed to the server.
		schema := schemas["json_schema_2020_12_tool"]
		if schema == nil {
			return fmt.Errorf("toolsrv lists no json_schema_2020_12_tool")
		}
		return d.call("json_schema_echo", `{"schema": `+string(schema)+`}`)
	case d.scenario == "http-invalid-tool-headers":
		for _, n := range names {
			d.call(n, `{"region": "us-west1"}`)
		}
		return nil
	}
	// Others: the calls the suite asks for, if any.
	calls, _ := d.context["toolCalls"].([]any)
	for _, c := range calls {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		args, _ := json.Marshal(m["arguments"])
		if string(args) == "null" {
			args = []byte("{}")
		}
		d.call(name, string(args))
	}
	return nil
}

// viaMCP serves toolsrv to an MCP client that declares elicitation and
// accepts what it is asked with content, and calls tools through it:
// toolsrv passes the suite's questions on to that client.
func (d *clientConformanceRun) viaMCP(content map[string]any, tools ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	cmd := osexec.Command(d.bin, "mcp", "-v", "--tools", d.tools, "--mcp-config", d.config, "--workdir", filepath.Join(d.dir, "work"))
	cmd.Env, cmd.Dir, cmd.Stderr = d.env, d.dir, os.Stderr
	var asked atomic.Int32
	client := sdk.NewClient(&sdk.Implementation{Name: "conformance-person", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Add(1)
			fmt.Fprintf(os.Stderr, "driver: asked %q\n", req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: maps.Clone(content)}, nil
		},
	})
	sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	var errs []error
	for _, tool := range tools {
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"tool": "conf:" + tool, "arguments": map[string]any{}}})
		if err != nil {
			errs = append(errs, fmt.Errorf("call_tool %s: %w", tool, err))
			continue
		}
		b, _ := json.Marshal(res)
		fmt.Printf("%s: %s\n", tool, b)
		if res.IsError {
			errs = append(errs, fmt.Errorf("call_tool %s: %s", tool, b))
		}
	}
	if asked.Load() == 0 {
		errs = append(errs, errors.New("the client was asked nothing"))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		return err
	}
	return nil
}

// clientConformanceBrowser is the person's browser in the auth
// scenarios: it opens the authorization URL and follows the redirects,
// which end at toolsrv's loopback listener.
func clientConformanceBrowser(url string) int {
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	resp.Body.Close()
	return 0
}
