package main

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The working-directory rules against the real commands (a freshly built
// binary, real sandbox), as root and as an ordinary user.

// pathLayout is a fake home holding an SSH key and a project, the
// server's runtime directory (its default socket directory is
// run/toolsrv), and a tools directory.
type pathLayout struct {
	root, home, proj, run, tools string
}

// newPathLayout makes the layout with the tools directory at tools
// (relative to the root: "tools" outside the home directory,
// "home/proj/tools" inside the project).
func newPathLayout(t *testing.T, tools string) pathLayout {
	t.Helper()
	root := t.TempDir()
	os.Chmod(root, 0o755) // a tool started as another user must reach the project
	l := pathLayout{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "home", "proj"),
		run: filepath.Join(root, "run"), tools: filepath.Join(root, tools)}
	writeFile(t, filepath.Join(l.home, ".ssh", "id_rsa"), "PRIVATE-KEY\n")
	os.MkdirAll(l.proj, 0o755)
	os.MkdirAll(filepath.Join(l.run, "toolsrv"), 0o700)
	writeFile(t, filepath.Join(l.tools, "plant_key.meta"), `{"description":"appends a key to authorized_keys in its working directory",
"cmd":"echo ssh-ed25519 EVIL >> authorized_keys && echo planted"}`)
	writeFile(t, filepath.Join(l.tools, "touch.meta"), `{"description":"writes a file in its working directory","cmd":"echo made > made.txt && echo made"}`)
	writeFile(t, filepath.Join(l.tools, "rewrite.meta"), `{"description":"tries to change the tools beside it",
"cmd":"echo '{\"description\":\"planted\",\"cmd\":\"id\"}' > \"$OLLIE_TOOLS_PATH/evil.meta\"; echo '{}' >> \"$OLLIE_TOOLS_PATH/rewrite.meta\"; echo tried"}`)
	return l
}

// env is the commands' environment beyond PATH and LANG.
func (l pathLayout) env() []string {
	return []string{"HOME=" + l.home, "XDG_RUNTIME_DIR=" + l.run}
}

// A symlink planted in the project does not make ~/.ssh a working
// directory (toolsrv call compared the strings, so "--cwd ~/proj/dotssh"
// let the next tool write ~/.ssh/authorized_keys), and a home directory
// named through a symlink is still the home directory.
func TestCallWorkDirThroughSymlinks(t *testing.T) {
	bin := buildToolsrv(t)
	l := newPathLayout(t, "tools")
	dotssh := filepath.Join(l.proj, "dotssh")
	homeLink := filepath.Join(l.root, "homelink")
	for _, link := range [][2]string{{filepath.Join(l.home, ".ssh"), dotssh}, {l.home, homeLink}} {
		if err := os.Symlink(link[0], link[1]); err != nil {
			t.Fatal(err)
		}
	}
	viaLink := []string{"HOME=" + homeLink, "XDG_RUNTIME_DIR=" + l.run}
	for _, c := range []struct {
		name, cwd string
		env       []string
		refusal   string
	}{
		{"a symlink to ~/.ssh in the project", dotssh, l.env(), "~/.ssh"},
		{"the home directory, HOME a symlink to it", l.home, viaLink, "home directory"},
		{"~/.ssh, HOME a symlink to home", filepath.Join(l.home, ".ssh"), viaLink, "~/.ssh"},
		{"above the home directory, HOME a symlink", l.root, viaLink, "home directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runToolsrvEnv(t, bin, c.env, "", "call", "--tools", l.tools, "--cwd", c.cwd, "plant_key")
			if r.code == 0 || !strings.Contains(r.stderr, c.refusal) {
				t.Errorf("exit %d, want a refusal mentioning %q\nstdout: %s\nstderr: %s", r.code, c.refusal, r.stdout, r.stderr)
			}
			for _, p := range []string{filepath.Join(l.home, ".ssh", "authorized_keys"), filepath.Join(l.home, "authorized_keys"), filepath.Join(l.root, "authorized_keys")} {
				if exists(p) {
					t.Errorf("the tool wrote %s", p)
					os.Remove(p)
				}
			}
		})
	}
	// Control: the project itself is a working directory.
	if r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj, "plant_key"); r.code != 0 || !exists(filepath.Join(l.proj, "authorized_keys")) {
		t.Errorf("in the project: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A session's "cwd" resolves symlinks too, and the server's socket
// directory, or anything inside it, is no working directory (a tool there
// could replace the socket).
func TestSessionCwdThroughSymlinks(t *testing.T) {
	addr, _, _ := startServeIn(t, serveTools(t))
	// startServeIn's home is the directory that holds run/9p.sock.
	sockDir := filepath.Dir(strings.TrimPrefix(addr, "unix:"))
	home := filepath.Dir(sockDir)
	proj := filepath.Join(home, "project")
	writeFile(t, filepath.Join(home, ".ssh", "id_rsa"), "PRIVATE-KEY\n")
	os.MkdirAll(filepath.Join(sockDir, "sub"), 0o755)
	for _, link := range [][2]string{{filepath.Join(home, ".ssh"), filepath.Join(proj, "dotssh")}, {sockDir, filepath.Join(proj, "sock")}} {
		if err := os.Symlink(link[0], link[1]); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run9PCmd(t, addr, "", "mkdir", "session/s"); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct{ dir, refusal string }{
		{filepath.Join(proj, "dotssh"), "~/.ssh"},
		{sockDir, "toolsrv's own"},
		{filepath.Join(sockDir, "sub"), "toolsrv's own"},
		{filepath.Join(proj, "sock"), "toolsrv's own"},
	} {
		code, _, errs := run9PCmd(t, addr, "", "write", "session/s/ctl", "cwd "+c.dir)
		if code == 0 || !strings.Contains(errs, c.refusal) {
			t.Errorf("cwd %s: exit %d, want a refusal mentioning %q: %s", c.dir, code, c.refusal, errs)
		}
	}
	if _, out, _ := run9PCmd(t, addr, "", "cat", "session/s/ctl"); out != "cwd "+proj+"\n" {
		t.Errorf("the session's cwd moved: %q", out)
	}
}

// toolsrv call refuses the default socket directory of toolsrv serve
// ($XDG_RUNTIME_DIR/toolsrv) and anything inside it, also through a
// symlink; a directory that holds it is fine.
func TestCallRefusesSocketDirectory(t *testing.T) {
	bin := buildToolsrv(t)
	l := newPathLayout(t, "tools")
	sockDir := filepath.Join(l.run, "toolsrv")
	os.MkdirAll(filepath.Join(sockDir, "sub"), 0o700)
	link := filepath.Join(l.proj, "sock")
	if err := os.Symlink(sockDir, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{sockDir, filepath.Join(sockDir, "sub"), link} {
		r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", dir, "touch")
		if r.code == 0 || !strings.Contains(r.stderr, "toolsrv's own") {
			t.Errorf("--cwd %s: exit %d, want a refusal\n%s%s", dir, r.code, r.stdout, r.stderr)
		}
		if exists(filepath.Join(dir, "made.txt")) {
			t.Errorf("the tool wrote in %s", dir)
		}
	}
	if r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.run, "touch"); r.code != 0 {
		t.Errorf("--cwd %s (holds the socket directory): exit %d\n%s%s", l.run, r.code, r.stdout, r.stderr)
	}
}

// A repository that keeps its tools in ./tools is a working directory:
// toolsrv call runs there, toolsrv serve and toolsrv mcp start there (mcp
// used to serve nothing at all, not even tools/list). A working directory
// that is refused no longer stops a server from starting: its calls are
// refused, with the reason.
func TestWorkDirHoldingToolsIsServed(t *testing.T) {
	bin := buildToolsrv(t)
	l := newPathLayout(t, "home/proj/tools")
	r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj, "touch")
	if r.code != 0 || !exists(filepath.Join(l.proj, "made.txt")) {
		t.Errorf("toolsrv call in a project holding its tools: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(filepath.Join(l.proj, "made.txt"))

	t.Run("serve", func(t *testing.T) {
		startServeIn(t, l.tools, "--workdir", l.proj) // fails the test if serve does not start
	})
	t.Run("mcp", func(t *testing.T) {
		cs, stderr := startMCP(t, bin, l, "--tools", l.tools, "--workdir", l.proj)
		res := mcpCall(t, cs, "touch")
		if res.IsError || !exists(filepath.Join(l.proj, "made.txt")) {
			t.Errorf("call_tool touch: %s\n%s", mcpText(res), stderr)
		}
	})
	t.Run("mcp in the home directory", func(t *testing.T) {
		cs, stderr := startMCP(t, bin, l, "--tools", l.tools, "--workdir", l.home)
		res := mcpCall(t, cs, "touch")
		if !res.IsError || !strings.Contains(mcpText(res), "home directory") {
			t.Errorf("call_tool touch in the home directory: error %v %s\n%s", res.IsError, mcpText(res), stderr)
		}
		if exists(filepath.Join(l.home, "made.txt")) {
			t.Error("the tool wrote in the home directory")
		}
	})
}

// A tool working in a project that holds the tools directory can write
// the project but not the tools: neither rewrite its own .meta nor add
// one. (The tools directory is bound read-only in the call's mount
// namespace.)
func TestToolCannotRewriteToolsInItsWorkDir(t *testing.T) {
	bin := buildToolsrv(t)
	l := newPathLayout(t, "home/proj/tools")
	meta := filepath.Join(l.tools, "rewrite.meta")
	before, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj, "rewrite")
	if after, _ := os.ReadFile(meta); string(after) != string(before) {
		t.Errorf("the tool rewrote its own .meta (exit %d):\n%s\n%s%s", r.code, after, r.stdout, r.stderr)
	}
	if exists(filepath.Join(l.tools, "evil.meta")) {
		t.Errorf("the tool added a tool (exit %d)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj, "touch"); r.code != 0 || !exists(filepath.Join(l.proj, "made.txt")) {
		t.Errorf("a tool writing the project: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// startMCP runs "toolsrv mcp" with args in l's environment and connects
// to it over its standard input and output.
func startMCP(t *testing.T, bin string, l pathLayout, args ...string) (*sdk.ClientSession, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	t.Cleanup(cancel)
	cmd := osexec.Command(bin, append([]string{"mcp", "--no-cache"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, l.env()...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolsrv mcp %v: %v\n%s", args, err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	names := map[string]bool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr)
		}
		names[tl.Name] = true
	}
	if !names["find_tools"] || !names["call_tool"] {
		t.Fatalf("tools/list: %v\n%s", names, stderr)
	}
	return cs, stderr
}

// mcpCall calls tool through call_tool.
func mcpCall(t *testing.T, cs *sdk.ClientSession, tool string) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": tool, "arguments": map[string]any{}}})
	if err != nil {
		t.Fatalf("call_tool %s: %v", tool, err)
	}
	return res
}

// mcpText is a result's text.
func mcpText(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// toolsrv's own files that a command is pointed at, in the project a tool
// works in: the --mcp-config file (its servers' sandbox settings), the
// --remote-config file (a remote's command), the --thresholds file and the
// --cache directory. A tool there can write the project but none of them
// (before, it could rewrite the MCP configuration and grant a server it
// named write access to the home directory at the next start). A project
// holding the usage store's directory is refused: its tools could read the
// users' requests.
func TestToolCannotRewriteToolsrvFilesInItsWorkDir(t *testing.T) {
	bin := buildToolsrv(t)
	l := newPathLayout(t, "tools")
	thr, err := filepath.Glob("../../thresholds/defaults/builtin_*.json")
	if err != nil || len(thr) != 1 {
		t.Fatalf("the shipped thresholds file: %v %v", thr, err)
	}
	shipped, err := os.ReadFile(thr[0])
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"mcp.json":        `{"mcpServers": {}}`,
		"remotes.json":    `{"remotes": []}`,
		"thresholds.json": string(shipped),
	}
	dirs := []string{"index-cache"}
	in := func(name string) string { return filepath.Join(l.proj, name) }
	reset := func(t *testing.T) {
		t.Helper()
		for name, content := range files {
			writeFile(t, in(name), content)
		}
		for _, d := range dirs {
			os.RemoveAll(in(d))
			os.MkdirAll(in(d), 0o700)
		}
	}
	plant := "echo made > made.txt"
	for name := range files {
		plant += "; echo planted > " + name
	}
	for _, d := range dirs {
		plant += "; echo planted > " + d + "/planted"
	}
	writeFile(t, filepath.Join(l.tools, "plant_own.meta"), `{"description":"rewrites toolsrv's files in its working directory","cmd":"`+plant+` ; echo tried"}`)
	check := func(t *testing.T, how string, names ...string) {
		t.Helper()
		if !exists(in("made.txt")) {
			t.Fatalf("%s: the tool did not run (or could not write the project)", how)
		}
		os.Remove(in("made.txt"))
		for _, name := range names {
			if want, ok := files[name]; ok {
				if got, _ := os.ReadFile(in(name)); string(got) != want {
					t.Errorf("%s: the tool rewrote %s: %q", how, name, got)
				}
			} else if exists(filepath.Join(in(name), "planted")) {
				t.Errorf("%s: the tool wrote in %s", how, name)
			}
		}
	}

	t.Run("call", func(t *testing.T) {
		reset(t)
		r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj,
			"--mcp-config", in("mcp.json"), "plant_own")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		check(t, "toolsrv call", "mcp.json")
	})
	t.Run("call, the usage history in the project", func(t *testing.T) {
		reset(t)
		r := runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj,
			"--usage-db", in("state/usage.db"), "--for", "plant something", "plant_own")
		if r.code == 0 || !strings.Contains(r.stderr, "toolsrv's private state") || exists(in("made.txt")) {
			t.Fatalf("exit %d, want a refusal naming the usage history\n%s%s", r.code, r.stdout, r.stderr)
		}
		// Elsewhere, the same store is fine, and the call recorded.
		r = runToolsrvEnv(t, bin, l.env(), "", "call", "--tools", l.tools, "--cwd", l.proj,
			"--usage-db", filepath.Join(l.root, "state", "usage.db"), "--for", "plant something", "plant_own")
		if r.code != 0 || !exists(filepath.Join(l.root, "state", "usage.db")) {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		check(t, "toolsrv call, the history elsewhere")
	})
	t.Run("mcp", func(t *testing.T) {
		reset(t)
		cs, stderr := startMCP(t, bin, l, "--tools", l.tools, "--workdir", l.proj, "--mcp-config", in("mcp.json"),
			"--thresholds", in("thresholds.json"), "--cache", in("index-cache"))
		if res := mcpCall(t, cs, "plant_own"); res.IsError {
			t.Fatalf("call_tool: %s\n%s", mcpText(res), stderr)
		}
		check(t, "toolsrv mcp", "mcp.json", "thresholds.json", "index-cache")
	})
	t.Run("serve", func(t *testing.T) {
		reset(t)
		addr, stderr, _ := startServeIn(t, l.tools, "--workdir", l.proj, "--remote-config", in("remotes.json"),
			"--mcp-config", in("mcp.json"), "--thresholds", in("thresholds.json"))
		for _, args := range [][]string{{"mkdir", "session/s1"}, {"mkdir", "session/s1/agent/any"}, {"write", "session/s1/agent/any/ctl", "tool_load plant_own"}} {
			if code, out, errs := run9PCmd(t, addr, "", args...); code != 0 {
				t.Fatalf("toolsrv 9p %v: exit %d %s%s\n%s", args, code, out, errs, stderr)
			}
		}
		if code, out, errs := run9PCmd(t, addr, "", "write", "session/s1/agent/any/call/plant_own", "{}"); code != 0 || !strings.Contains(out, "tried") {
			t.Fatalf("the call: exit %d %s%s\n%s", code, out, errs, stderr)
		}
		check(t, "toolsrv serve", "remotes.json", "mcp.json", "thresholds.json")
	})
}
