package main

import (
	"context"
	"net/http"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpListen is a "toolsrv mcp --listen" of a test.
type mcpListen struct {
	url    string
	stderr *syncBuffer
	pid    int
}

// startMCPListen runs toolsrv mcp --listen 127.0.0.1:0 with args, HOME a
// directory of the test's (unless env sets it) and env added, until the
// test ends; it returns once the server says where it serves.
func startMCPListen(t *testing.T, bin string, env []string, args ...string) *mcpListen {
	t.Helper()
	bg := startBackgroundServer(t, bin, t.TempDir(), env, regexp.MustCompile(`serving MCP on (http://\S+)`), "",
		append([]string{"mcp", "--listen", "127.0.0.1:0", "--no-cache"}, args...)...)
	return &mcpListen{url: bg.ready[1], stderr: bg.stderr, pid: bg.pid}
}

// bearerClient is an HTTP client that sends the bearer token.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearerRoundTripper(token)}
}

type bearerRoundTripper string

func (b bearerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpHTTPClient connects the SDK's client, with token.
func mcpHTTPClient(t *testing.T, ctx context.Context, url, token, version string) (*sdk.ClientSession, error) {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(token)}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// pythonPost is a client that is no part of toolsrv: python3 POSTs an
// initialize (with header, when set) and prints the status. cred, when
// set, runs it as another user.
func pythonPost(t *testing.T, url, header string, cred *syscall.Credential) int {
	t.Helper()
	requireTools(t, "python3")
	script := `import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], method="POST", data=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"1"}}}',
    headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
if sys.argv[2]:
    k, v = sys.argv[2].split(": ", 1)
    req.add_header(k, v)
try:
    print(urllib.request.urlopen(req, timeout=60).status)
except urllib.error.HTTPError as e:
    print(e.code)
`
	// The system's python3: another user may run it (a python3 of root's
	// own, such as pyenv's under /root, they may not).
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = "python3"
	}
	cmd := osexec.Command(python, "-c", script, url, header)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.Dir = "/"
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 client: %v\n%s", err, out)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("python3 client: %q", out)
	}
	return code
}

// nobody is the credential of the user nobody (for a client of another
// uid, as root).
func nobody(t *testing.T) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("a client of another uid needs the user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// mcp --listen requires a bearer token: without it (or with a wrong one)
// every request is answered 401, from another uid too (as root, a client
// running as nobody; as an ordinary user, one of the same uid); with it,
// initialize and tools/list work. With neither --token-file nor
// $TOOLSRV_MCP_TOKEN, toolsrv makes the token (0600, in its private state
// directory), says the file's path (never the token) and takes the same
// token at the next start.
func TestMCPListenToken(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	work := mcpProject(t)
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	home := t.TempDir()
	srv := startMCPListen(t, bin, []string{"HOME=" + home}, "--tools", tools, "--workdir", work)
	if code := pythonPost(t, srv.url, "", nil); code != http.StatusUnauthorized {
		t.Errorf("a client without the token: %d, want 401", code)
	}
	if code := pythonPost(t, srv.url, "Authorization: Bearer wrong-wrong-wrong-wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("a client with a wrong token: %d, want 401", code)
	}
	if os.Geteuid() == 0 {
		if code := pythonPost(t, srv.url, "", nobody(t)); code != http.StatusUnauthorized {
			t.Errorf("a client of another uid without the token: %d, want 401", code)
		}
	}
	file := filepath.Join(home, ".local", "state", "toolsrv", "mcp-token")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no token file made: %v\n%s", err, srv.stderr)
	}
	token := strings.TrimSpace(string(data))
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(srv.stderr.String(), file) || strings.Contains(srv.stderr.String(), token) {
		t.Errorf("start-up: want the token file named, never the token:\n%s", srv.stderr)
	}
	if code := pythonPost(t, srv.url, "Authorization: Bearer "+token, nil); code != http.StatusOK {
		t.Errorf("python3 with the token: %d, want 200", code)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs, err := mcpHTTPClient(t, ctx, srv.url, token, version)
		if err != nil {
			t.Fatalf("%s with the token: %v\n%s", version, err, srv.stderr)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) < 2 {
			t.Errorf("%s: tools/list: %v %v", version, res, err)
		}
	}
	if _, err := mcpHTTPClient(t, ctx, srv.url, "", "2025-11-25"); err == nil {
		t.Error("the SDK's client without the token connected")
	}
	if !strings.Contains(srv.stderr.String(), "refused an MCP request") {
		t.Errorf("refusals are not logged:\n%s", srv.stderr)
	}

	// The next start takes the same token.
	again := startMCPListen(t, bin, []string{"HOME=" + home}, "--tools", tools, "--workdir", work)
	if strings.Contains(again.stderr.String(), "made now") {
		t.Errorf("the second start made a new token:\n%s", again.stderr)
	}
	if _, err := mcpHTTPClient(t, ctx, again.url, token, "2025-11-25"); err != nil {
		t.Errorf("the second start with the first start's token: %v", err)
	}
}

// What a hostile tool can do about the token: nothing. $TOOLSRV_MCP_TOKEN
// never reaches a tool's environment, nor can a tool that sees the host's
// processes read it from toolsrv's; the token file toolsrv made is out of
// a sandboxed tool's reach; and a --token-file inside the calls' working
// directory makes that directory refused, as a --usage-db there does.
func TestMCPListenTokenSecrecy(t *testing.T) {
	bin := buildToolsrv(t)
	tools := t.TempDir()
	for name, meta := range map[string]string{
		"show_env":     `{"description": "print the environment", "cmd": "env"}`,
		"read_path":    `{"description": "print a file", "cmd": "cat \"$(jq -r .path)\"", "args": {"type": "object", "properties": {"path": {"type": "string"}}}}`,
		"proc_environ": `{"description": "print a process's environment", "hostProcesses": true, "cmd": "tr '\\0' '\\n' < /proc/$(jq -r .pid)/environ", "args": {"type": "object", "properties": {"pid": {"type": "integer"}}}}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, name+".meta"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	const envToken = "env-token-that-tools-must-never-see"
	srv := startMCPListen(t, bin, []string{"TOOLSRV_MCP_TOKEN=" + envToken}, "--tools", tools, "--workdir", mcpProject(t))
	if !strings.Contains(srv.stderr.String(), "TOKEN is $TOOLSRV_MCP_TOKEN") {
		t.Errorf("start-up does not say the token is the variable's:\n%s", srv.stderr)
	}
	cs, err := mcpHTTPClient(t, ctx, srv.url, envToken, "2025-11-25")
	if err != nil {
		t.Fatalf("with $TOOLSRV_MCP_TOKEN's token: %v\n%s", err, srv.stderr)
	}
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"tool": tool, "arguments": args}})
		if err != nil {
			t.Fatalf("call_tool %s: %v", tool, err)
		}
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), r.IsError
	}
	if out, failed := call("show_env", nil); failed || !strings.Contains(out, "OLLIE_TOOLS_PATH=") || strings.Contains(out, envToken) || strings.Contains(out, "TOOLSRV_MCP_TOKEN") {
		t.Errorf("a tool's environment (failed %v): want no token:\n%s", failed, out)
	}
	if out, failed := call("proc_environ", map[string]any{"pid": srv.pid}); !failed || strings.Contains(out, envToken) {
		t.Errorf("a tool read toolsrv's environment, token and all:\n%s", out)
	}

	// The token file toolsrv made, in its private state directory.
	home := t.TempDir()
	made := startMCPListen(t, bin, []string{"HOME=" + home}, "--tools", tools, "--workdir", mcpProject(t))
	file := filepath.Join(home, ".local", "state", "toolsrv", "mcp-token")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(data))
	cs, err = mcpHTTPClient(t, ctx, made.url, token, "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	if out, failed := call("read_path", map[string]any{"path": file}); !failed || strings.Contains(out, token) {
		t.Errorf("a sandboxed tool read the token file (failed %v):\n%s", failed, out)
	}

	// A --token-file inside the working directory: calls there are
	// refused, as with the usage history there.
	work := mcpProject(t)
	secret := filepath.Join(work, "secrets", "token")
	os.MkdirAll(filepath.Dir(secret), 0o700)
	if err := os.WriteFile(secret, []byte("file-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inside := startMCPListen(t, bin, nil, "--tools", tools, "--workdir", work, "--token-file", secret)
	if !strings.Contains(inside.stderr.String(), "every call will be refused") {
		t.Errorf("start-up does not warn that calls will be refused:\n%s", inside.stderr)
	}
	cs, err = mcpHTTPClient(t, ctx, inside.url, "file-token-0123456789abcdef", "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	if out, failed := call("read_path", map[string]any{"path": secret}); !failed || strings.Contains(out, "file-token") || !strings.Contains(out, secret) {
		t.Errorf("a call whose working directory holds the token file (failed %v):\n%s", failed, out)
	}
}

// The flags of mcp --listen: bad values and flags without --listen are
// usage errors; a token that is too short, or a token file others may
// read, is refused with what to do.
func TestMCPListenFlags(t *testing.T) {
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	loose := filepath.Join(t.TempDir(), "token")
	os.WriteFile(loose, []byte("file-token-0123456789abcdef\n"), 0o644)
	os.Chmod(loose, 0o644)
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{nil, []string{"--token-file", loose}, 2, "--token-file is for --listen"},
		{nil, []string{"--max-sessions", "3"}, 2, "--max-sessions is for --listen"},
		{nil, []string{"--listen", "127.0.0.1:0", "--max-sessions", "0"}, 2, "--max-sessions 0"},
		{nil, []string{"--listen", "127.0.0.1:0", "--session-timeout", "-1s"}, 2, "--session-timeout -1s"},
		{nil, []string{"--listen", "0.0.0.0:1"}, 2, "--allow-remote"},
		{[]string{"TOOLSRV_MCP_TOKEN=short"}, []string{"--listen", "127.0.0.1:0"}, 1, "at least 16 characters"},
		{nil, []string{"--listen", "127.0.0.1:0", "--token-file", loose}, 1, "chmod 600"},
		{nil, []string{"--listen", "127.0.0.1:0", "--token-file", loose + ".none"}, 1, "does not exist"},
	} {
		r := runToolsrvEnv(t, bin, c.env, "", append([]string{"mcp", "--tools", tools}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("mcp %v: exit %d, want %d with %q:\n%s", c.args, r.code, c.code, c.want, r.stderr)
		}
	}
}
