package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			[]string{defaultDir + " does not exist (from the default)", "--tools examples/tools"}},
		{"rank: missing --tools", nil, []string{"rank", "--tools", missing, "--no-cache", "will it rain"}, 1, "", []string{missing + " does not exist"}},
		{"rank: no .meta files", nil, []string{"rank", "--tools", empty, "--no-cache", "will it rain"}, 1, "", []string{"no .meta files in " + empty}},
		{"rank: every tool invalid", nil, []string{"rank", "--tools", broken, "--no-cache", "will it rain"}, 1, "", []string{"every tool is invalid"}},
		{"rank --batch: no .meta files", nil, []string{"rank", "--tools", empty, "--no-cache", "--batch", "-"}, 1, "", []string{"no .meta files"}},
		{"show: missing --tools", nil, []string{"show", "--tools", missing, "alpha"}, 1, "", []string{missing + " does not exist"}},
		{"show: no .meta files", nil, []string{"show", "--tools", empty, "alpha"}, 1, "", []string{"unknown tool: alpha", "no .meta files in " + empty}},
		{"show: a hidden tool still says why", nil, []string{"show", "--tools", hidden, "ghost"}, 1, "", []string{"not available", "plan9"}},
		{"call: missing --tools", nil, []string{"call", "--tools", missing, "alpha"}, 1, "", []string{missing + " does not exist"}},
		{"serve: missing --tools", nil, []string{"serve", "--tools", missing, "--listen", "unix:" + filepath.Join(root, "s", "9p.sock")}, 1, "",
			[]string{"toolsrv serve: no tool directory to read: " + missing + " does not exist"}},
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
