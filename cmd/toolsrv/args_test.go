package main

import (
	"encoding/json"
	"flag"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/index"
)

func TestSplitArgs(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("json", false, "")
	fs.String("timeout", "", "")
	var v verbosity
	fs.Var(&v, "v", "")
	cases := []struct {
		args              []string
		flags, positional []string
	}{
		{[]string{"will it rain", "--json"}, []string{"--json"}, []string{"will it rain"}},
		{[]string{"NAME", "--timeout", "5s", "{}"}, []string{"--timeout", "5s"}, []string{"NAME", "{}"}},
		{[]string{"--timeout=5s", "NAME", "-v"}, []string{"--timeout=5s", "-v"}, []string{"NAME"}},
		// A flag's value is taken whatever it looks like, even "--".
		{[]string{"--timeout", "--", "a"}, []string{"--timeout", "--"}, []string{"a"}},
		{[]string{"a", "--", "--json", "-v"}, nil, []string{"a", "--json", "-v"}},
		{[]string{"-", "--json"}, []string{"--json"}, []string{"-"}},
		// Unknown flags stay flags, so that parsing reports them.
		{[]string{"a", "--bogus", "b"}, []string{"--bogus"}, []string{"a", "b"}},
		// A bool flag does not take the next argument.
		{[]string{"--json", "msg"}, []string{"--json"}, []string{"msg"}},
	}
	for _, c := range cases {
		flags, pos := splitArgs(fs, c.args)
		if !slices.Equal(flags, c.flags) || !slices.Equal(pos, c.positional) {
			t.Errorf("splitArgs(%q) = %q, %q; want %q, %q", c.args, flags, pos, c.flags, c.positional)
		}
	}
}

// Flags after the positional arguments are flags, for every subcommand;
// "--" ends them.
func TestFlagsAnywhere(t *testing.T) {
	dir, cache := rankFixture(t), t.TempDir()
	reg := cliFixture(t)
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		json   bool   // stdout must be a ranking in JSON with the calculator first
	}{
		{"rank: flags after the message", []string{"rank", "please use the calculator tool", "--json", "--all", "--tools", dir, "--cache", cache}, 0, "", true},
		{"rank: flags between words", []string{"rank", "--tools", dir, "please use the", "--cache", cache, "calculator tool", "--all", "--json"}, 0, "", true},
		{"rank: -- ends the flags", []string{"rank", "--tools", dir, "--cache", cache, "--all", "--", "--json", "use the calculator tool"}, 0, "calculator (named)", false},
		{"show: flags after the name", []string{"show", "alpha", "--tools", reg}, 0, "tier:        hot", false},
		{"ls: --json last", []string{"ls", "--tools", reg, "--json"}, 0, `"revision"`, false},
		// validate exits 1: the fixture has a broken .meta.
		{"validate: flags after the directory", []string{"validate", reg, "--json"}, 1, `"problems"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			if !strings.Contains(out, c.stdout) {
				t.Fatalf("stdout lacks %q:\n%s\nstderr: %s", c.stdout, out, errs)
			}
			if c.json {
				var r index.Ranking
				if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Hits) == 0 || r.Hits[0].Name != "calculator" || !r.Hits[0].Named {
					t.Fatalf("not the JSON ranking of the whole message (%v):\n%s", err, out)
				}
			}
		})
	}
}

// Usage errors exit 2 with the reason on standard error and nothing on
// standard output, for every subcommand.
func TestUsageErrors(t *testing.T) {
	dir := cliFixture(t)
	cases := []struct {
		args   []string
		stderr string
	}{
		{nil, "Usage: toolsrv COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"ls", "--bogus"}, "toolsrv ls: flag provided but not defined: -bogus"},
		{[]string{"ls", "--tools", dir, "alpha"}, `unexpected argument "alpha"`},
		{[]string{"show", "--tools", dir}, "give exactly one tool NAME"},
		{[]string{"show", "--tools", dir, "a", "b"}, "give exactly one tool NAME"},
		{[]string{"validate", "--bogus"}, "flag provided but not defined"},
		{[]string{"rank", "--tools", dir}, "give either a MESSAGE"},
		{[]string{"rank", "--tools", dir, "--k", "many", "x"}, `invalid value "many" for flag -k`},
		{[]string{"rank", "--tools", dir, "--k", "-1", "x"}, "--limit -1"},
		{[]string{"rank", "--tools", dir, "--format", "gemini", "x"}, `unknown --format "gemini"`},
		{[]string{"rank", "--tools", dir, "--mode", "fuzzy", "x"}, "--mode"},
		{[]string{"rank", "--tools", dir, "--embedder", "magic", "x"}, `unknown embedder "magic": toolsrv has builtin, ollama`},
		{[]string{"rank", "--tools", dir, "--lexical-weight", "0", "x"}, "--lexical-weight 0"},
		{[]string{"rank", "--tools", dir, "--timeout", "0s", "x"}, "--timeout 0s"},
		{[]string{"rank", "--tools", dir, "--agent", "../etc", "x"}, `--agent "../etc"`},
		{[]string{"rank", "--tools", dir, "--batch", "-", "x"}, "give either a MESSAGE"},
		{[]string{"eval"}, "--corpus DIR is required"},
		{[]string{"eval", "--corpus", dir, "--mode", "fuzzy"}, "--mode"},
		{[]string{"eval", "--corpus", dir, "--embedder", "magic"}, `unknown embedder "magic": toolsrv has builtin, ollama`},
		{[]string{"call", "--tools", dir}, "give a tool NAME"},
		{[]string{"call", "--tools", dir, "alpha", "{}", "extra"}, "give a tool NAME"},
		{[]string{"call", "--tools", dir, "--max-output", "0", "alpha"}, "--max-output 0"},
		{[]string{"call", "--tools", dir, "--timeout", "soon", "alpha"}, `invalid value "soon" for flag -timeout`},
		{[]string{"broker", "extra"}, `unexpected argument "extra"`},
		{[]string{"broker"}, "no socket: pass --socket PATH"},
		{[]string{"serve", "--tools", dir, "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--tools", dir, "--rank-timeout", "0s"}, "--rank-timeout 0s"},
		{[]string{"serve", "--tools", dir, "--embedder", "magic"}, `unknown embedder "magic": toolsrv has builtin, ollama`},
		{[]string{"serve", "--tools", dir, "--warm-turns", "0"}, "--warm-turns 0"},
		{[]string{"9p"}, "give an operation and a PATH"},
		{[]string{"9p", "frob", "x"}, `unknown operation "frob"`},
		{[]string{"9p", "cat", "a", "b"}, "wrong number of arguments"},
		{[]string{"tune"}, "give at least one --corpus DIR"},
		{[]string{"tune", "--corpus", dir, "--holdout", "2"}, "--holdout 2"},
		{[]string{"tune", "--embedder", "magic", "--show"}, `unknown embedder "magic": toolsrv has builtin, ollama`},
		{[]string{"bench"}, "give at least one --corpus DIR"},
		{[]string{"bench", "--corpus", dir, "--sizes", "lots"}, `--sizes: "lots"`},
		{[]string{"version", "extra"}, "takes no arguments"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != 2 || out != "" || !strings.Contains(errs, c.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr ∋ %q", code, out, errs, c.stderr)
			}
			if len(c.args) == 0 {
				return
			}
			if _, sub := commands()[c.args[0]]; sub && !strings.Contains(errs, "Usage: toolsrv "+c.args[0]) {
				t.Errorf("no synopsis of %s on stderr:\n%s", c.args[0], errs)
			}
		})
	}
}

// Help that was asked for goes to standard output with exit status 0.
func TestHelpOnStdout(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "Commands:"},
		{[]string{"--help"}, "Commands:"},
		{[]string{"-h"}, "Commands:"},
		{[]string{"help", "rank"}, "Usage: toolsrv rank"},
		{[]string{"rank", "--help"}, "-thresholds"},
		{[]string{"call", "NAME", "-h"}, "Usage: toolsrv call"},
		{[]string{"serve", "--help"}, "-bypass-socket"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if code != 0 || !strings.Contains(out, c.want) || errs != "" {
			t.Errorf("toolsrv %s: exit %d, stderr %q; want exit 0 and %q on stdout:\n%s", strings.Join(c.args, " "), code, errs, c.want, out)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(out, "toolsrv ") || strings.Count(out, "\n") != 1 || errs != "" {
			t.Errorf("toolsrv %s: exit %d, stdout %q, stderr %q", args[0], code, out, errs)
		}
	}
}

func TestVersionLine(t *testing.T) {
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "toolsrv (devel)"},
		{"devel build without VCS", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "toolsrv", Version: "(devel)"}}, true,
			"toolsrv (devel) go1.26.1"},
		{"tagged module", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "toolsrv", Version: "v1.2.3"}}, true,
			"toolsrv v1.2.3 go1.26.1"},
		{"VCS stamped, modified tree", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "toolsrv", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "937331bdeadbeef"},
				{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"toolsrv (devel) (revision 937331bdeadbeef, 2026-01-02T03:04:05Z, modified) go1.26.1"},
		{"empty main version", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, true,
			"toolsrv (devel) (revision abc)"},
	}
	for _, c := range cases {
		if got := versionLine(c.bi, c.ok); got != c.want {
			t.Errorf("%s: versionLine = %q, want %q", c.name, got, c.want)
		}
	}
}
