package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/ninep"
)

// A missing or mistyped tool directory, or a catalog with nothing to
// offer, is said on stderr with a non-zero exit, never an empty answer.
func TestToolDirProblems(t *testing.T) {
	good := cliFixture(t)
	root := t.TempDir()
	missing := filepath.Join(root, "no-such-dir")
	empty := filepath.Join(root, "empty")
	broken := filepath.Join(root, "broken")
	hidden := filepath.Join(root, "hidden")
	file := filepath.Join(root, "alpha.meta")
	for d, files := range map[string]map[string]string{
		empty:  {"README": "not a tool"},
		broken: {"a.meta": "{nope", "b.meta": `{"description": 3}`},
		hidden: {"ghost.meta": `{"description":"Only on plan9.","cmd":"cat","variants":[{"match":{"os":"plan9"}}]}`},
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(d, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(file, []byte(`{"description":"a","cmd":"cat"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	defaultDir := filepath.Join(home, ".config", "ollie", "tools")

	cases := []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stdout string   // substring ("" = anything)
		stderr []string // substrings
	}{
		{"ls: missing --tools", nil, []string{"ls", "--tools", missing}, 1, "",
			[]string{"toolsrv ls: no tool directory to read: " + missing + " does not exist (from --tools); check the --tools path"}},
		{"ls: a file, not a directory", nil, []string{"ls", "--tools", file}, 1, "", []string{file + " is not a directory"}},
		{"ls: one missing among good ones", nil, []string{"ls", "--tools", missing, "--tools", good}, 0, "alpha",
			[]string{"toolsrv ls: warning: tool directory " + missing + " does not exist (from --tools); reading the others"}},
		{"ls: no .meta files", nil, []string{"ls", "--tools", empty}, 1, "", []string{"no .meta files in " + empty + " (from --tools)"}},
		{"ls: every tool invalid", nil, []string{"ls", "--tools", broken}, 1, "", []string{"every tool is invalid (2 .meta file(s)", `run "toolsrv validate"`}},
		{"ls: every tool hidden", nil, []string{"ls", "--tools", hidden}, 1, "", []string{"every tool is hidden on this host", `"toolsrv show ghost" says why`}},
		{"ls --json: the catalog, and the error", nil, []string{"ls", "--json", "--tools", broken}, 1, `"problems"`, []string{"every tool is invalid"}},
		{"ls: $OLLIE_TOOLS_PATH missing", map[string]string{"OLLIE_TOOLS_PATH": missing}, []string{"ls"}, 1, "",
			[]string{missing + " does not exist (from $OLLIE_TOOLS_PATH)", "pass --tools DIR or set $OLLIE_TOOLS_PATH"}},
		{"ls: $OLLIE_TOOLS_PATH with one good dir", map[string]string{"OLLIE_TOOLS_PATH": missing + ":" + good}, []string{"ls"}, 0, "beta",
			[]string{"warning: tool directory " + missing + " does not exist (from $OLLIE_TOOLS_PATH)"}},
		{"ls: the default missing", map[string]string{"HOME": home}, []string{"ls"}, 1, "",
			[]string{defaultDir + " does not exist (from the default); pass --tools DIR or set $OLLIE_TOOLS_PATH (colon separated)"}},
		{"rank: missing --tools", nil, []string{"rank", "--tools", missing, "--no-cache", "will it rain"}, 1, "", []string{missing + " does not exist"}},
		{"rank: no .meta files", nil, []string{"rank", "--tools", empty, "--no-cache", "will it rain"}, 1, "", []string{"no .meta files in " + empty}},
		{"rank: every tool invalid", nil, []string{"rank", "--tools", broken, "--no-cache", "will it rain"}, 1, "", []string{"every tool is invalid"}},
		{"rank --batch: no .meta files", nil, []string{"rank", "--tools", empty, "--no-cache", "--batch", "-"}, 1, "", []string{"no .meta files"}},
		{"show: missing --tools", nil, []string{"show", "--tools", missing, "alpha"}, 1, "", []string{missing + " does not exist"}},
		{"show: no .meta files", nil, []string{"show", "--tools", empty, "alpha"}, 1, "", []string{"unknown tool: alpha", "no .meta files in " + empty}},
		{"show: a hidden tool still says why", nil, []string{"show", "--tools", hidden, "ghost"}, 1, "", []string{"not available", "plan9"}},
		{"call: missing --tools", nil, []string{"call", "--tools", missing, "alpha"}, 1, "", []string{missing + " does not exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLIWith(t, "", c.env, c.args...)
			if code != c.code || !strings.Contains(out, c.stdout) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, c.code, out, errs)
			}
			if c.code != 0 && c.stdout == "" && out != "" {
				t.Errorf("stdout not empty: %s", out)
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
		})
	}
}

// serve keeps serving an empty catalog (its directories are watched) but
// says it is empty.
func TestServeEmptyCatalogWarns(t *testing.T) {
	_, stderr, _ := startServeIn(t, t.TempDir())
	if !strings.Contains(stderr.String(), "toolsrv serve: warning: no .meta files in") {
		t.Fatalf("no warning about the empty catalog:\n%s", stderr)
	}
}

// The hint names the directory the project keeps its tools in, when the
// current directory has one that holds .meta files and it is not on the
// tool path already: ./tools first, then ./examples/tools.
func TestToolPathHintNamesTheProjectsTools(t *testing.T) {
	write := func(dir string, names ...string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(`{"description":"x","cmd":"cat"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	proj, clone, bare, notes := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write(filepath.Join(proj, "tools"), "a.meta", "b.meta")
	write(filepath.Join(clone, "examples", "tools"), "a.meta")
	write(filepath.Join(notes, "tools"), "README")
	cases := []struct {
		name string
		p    toolPath
		want string
	}{
		{"./tools, from the default", toolPath{dirs: []string{"/nowhere/tools"}, from: "the default", cwd: proj},
			"pass --tools ./tools (it holds 2 .meta files), or set $OLLIE_TOOLS_PATH (colon separated)"},
		{"./tools, from --tools", toolPath{dirs: []string{"/nowhere/tools"}, from: "--tools", cwd: proj},
			"check the --tools path (./tools holds 2 .meta files: --tools ./tools)"},
		{"./tools is the path already", toolPath{dirs: []string{filepath.Join(proj, "tools")}, from: "--tools", cwd: proj},
			"check the --tools path"},
		{"a clone's examples", toolPath{dirs: []string{"/nowhere/tools"}, from: "$OLLIE_TOOLS_PATH", cwd: clone},
			"pass --tools ./examples/tools (it holds 1 .meta file), or set $OLLIE_TOOLS_PATH (colon separated)"},
		{"no tools here", toolPath{dirs: []string{"/nowhere/tools"}, from: "the default", cwd: bare},
			"pass --tools DIR or set $OLLIE_TOOLS_PATH (colon separated)"},
		{"./tools without .meta files", toolPath{dirs: []string{"/nowhere/tools"}, from: "the default", cwd: notes},
			"pass --tools DIR or set $OLLIE_TOOLS_PATH (colon separated)"},
	}
	for _, c := range cases {
		if got := c.p.hint(); got != c.want {
			t.Errorf("%s: hint %q, want %q", c.name, got, c.want)
		}
	}
}

// The checks read the directories the user gave, not the process's own
// environment.
func TestToolPathSource(t *testing.T) {
	cases := []struct {
		tools []string
		env   map[string]string
		dirs  []string
		from  string
	}{
		{[]string{"/a:/b", "/c"}, map[string]string{"OLLIE_TOOLS_PATH": "/x"}, []string{"/a", "/b", "/c"}, "--tools"},
		{nil, map[string]string{"OLLIE_TOOLS_PATH": "/x::/y"}, []string{"/x", "/y"}, "$OLLIE_TOOLS_PATH"},
		{nil, map[string]string{"HOME": "/home/u"}, []string{"/home/u/.config/ollie/tools"}, "the default"},
	}
	for _, c := range cases {
		var tools dirList
		for _, d := range c.tools {
			tools.Set(d)
		}
		env := &cliEnv{stderr: &bytes.Buffer{}, getenv: func(k string) string { return c.env[k] }}
		p := resolveToolPath(env, &tools)
		if strings.Join(p.dirs, ",") != strings.Join(c.dirs, ",") || p.from != c.from {
			t.Errorf("tools %v env %v: %v from %q; want %v from %q", c.tools, c.env, p.dirs, p.from, c.dirs, c.from)
		}
	}
}

// serve started before its tool directory exists serves all the same: a
// rank answer says why it has no tool and what to do, so does the
// connection's err, and the tools come once the directory is made.
func TestServeWithoutToolDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "tools")
	addr, stderr, _ := startServeIn(t, missing)
	want := "no tool directory to read: " + missing + " does not exist (from --tools); check the --tools path"
	if !strings.Contains(stderr.String(), "toolsrv serve: warning: "+want+"; serving anyway") {
		t.Errorf("start-up does not say why it serves no tool:\n%s", stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cl, err := ninep.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ans, err := cl.Transact("rank", []byte("will it rain tomorrow?"))
	if err != nil {
		t.Fatalf("rank: %v", err)
	}
	if !strings.Contains(string(ans), "# "+want+"\n") {
		t.Errorf("the rank answer does not say why it is empty:\n%s", ans)
	}
	if e, err := cl.Read("err"); err != nil || strings.TrimSpace(string(e)) != want {
		t.Errorf("err after the empty answer: %q, %v; want %q", e, err, want)
	}

	// The directory is watched (through its parent): a tool written there
	// is ranked, and the reason goes.
	if err := os.MkdirAll(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(missing, "weather.meta"), []byte(`{"description":"Current weather forecast for a city","keywords":["rain"],"cmd":"/bin/cat"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(safetyNet); ; time.Sleep(50 * time.Millisecond) {
		ans, err = cl.Transact("rank", []byte("will it rain tomorrow?"))
		if err != nil {
			t.Fatalf("rank: %v", err)
		}
		if strings.Contains(string(ans), "weather\t") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool written into the new directory is never ranked:\n%s", ans)
		}
	}
	if strings.Contains(string(ans), "no tool directory") {
		t.Errorf("the reason stays once tools are there:\n%s", ans)
	}
}
