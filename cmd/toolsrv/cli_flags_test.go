package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// Every subcommand's usage line (what --help prints first, and what a
// usage error prints) names every flag the subcommand takes.
func TestUsageLinesListEveryFlag(t *testing.T) {
	defined := regexp.MustCompile(`^  -([A-Za-z0-9-]+)`)
	names := []string{"usage ls", "usage stats", "usage export", "usage import", "usage forget", "mcp login", "mcp logout"}
	for name := range commands() {
		names = append(names, name)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			args := strings.Fields(name)
			code, out, errs := runCLI(t, append(args, "--help")...)
			if code != 0 {
				t.Fatalf("%s --help: exit %d: %s", name, code, errs)
			}
			usage, flags, ok := strings.Cut(out, "\n\n")
			if !ok || !strings.HasPrefix(usage, "Usage: toolsrv "+name) {
				t.Fatalf("%s --help does not begin with its usage line:\n%s", name, out)
			}
			var n int
			for _, l := range strings.Split(flags, "\n") {
				m := defined.FindStringSubmatch(l)
				if m == nil || m[1] == "h" || m[1] == "help" {
					continue
				}
				n++
				if !namesFlag(usage, m[1]) {
					t.Errorf("the usage line of %s lacks -%s:\n%s", name, m[1], usage)
				}
			}
			if n == 0 && name != "version" && name != "usage" { // usage's flags are its subcommands'

				t.Errorf("%s --help lists no flags:\n%s", name, out)
			}
			// A usage error prints the same line.
			code, _, errs = runCLI(t, append(args, "--no-such-flag")...)
			if code != 2 || !strings.Contains(errs, usage) {
				t.Errorf("%s --no-such-flag: exit %d, want 2 and the usage line:\n%s", name, code, errs)
			}
		})
	}
}

func TestNamesFlag(t *testing.T) {
	for _, c := range []struct {
		usage, flag string
		want        bool
	}{
		{"rank [--agent NAME] MESSAGE", "agent", true},
		{"rank [--agents DIR] MESSAGE", "agent", false},
		{"rank [--agent NAME] MESSAGE", "agents", false},
		{"call [-v] NAME", "v", true},
		{"call [--verbose] NAME", "v", false},
		{"serve [--listen unix:PATH|tcp:HOST:PORT]...", "listen", true},
		{"tune --corpus DIR", "corpus", true},
		{"tune --show|--json", "json", true},
		{"x [--no-usage]", "usage", false},
	} {
		if got := namesFlag(c.usage, c.flag); got != c.want {
			t.Errorf("namesFlag(%q, %q) = %v, want %v", c.usage, c.flag, got, c.want)
		}
	}
}

// "toolsrv help --help" is help that was asked for: standard output, exit 0.
func TestHelpHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "--help"}, {"help", "-h"}, {"--help", "--help"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "Usage: toolsrv COMMAND") || errs != "" {
			t.Errorf("toolsrv %s: exit %d, stdout %q, stderr %q; want 0 and the command list on stdout", strings.Join(args, " "), code, out, errs)
		}
	}
	if code, _, _ := runCLI(t, "help", "--nope"); code != 2 {
		t.Errorf("toolsrv help --nope: exit %d, want 2", code)
	}
}

// rank --agents DIR reads the profile from DIR, as serve and mcp do.
func TestRankAgentsFlag(t *testing.T) {
	dir, agents := rankFixture(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "mailer.json"), []byte(`{"allowTools":["send_email","calculator"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "rank", "--tools", dir, "--no-cache", "--all", "--agents", agents, "--agent", "mailer", "--json", "weather in Rome")
	var r index.Ranking
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, errs)
	}
	if len(r.Hits) != 2 {
		t.Fatalf("the profile in --agents was not applied: %+v", r.Hits)
	}
	// Without --agents, the default directory (empty here) has no such profile.
	code, _, errs = runCLI(t, "rank", "--tools", dir, "--no-cache", "--agent", "mailer", "weather in Rome")
	if code != 1 || !strings.Contains(errs, filepath.Join(".config", "ollie", "agents", "mailer.json")) {
		t.Errorf("rank --agent without --agents: exit %d, want 1 naming the default profile file:\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "rank", "--tools", dir, "--no-cache", "--agents", agents, "--agent", "nobody", "weather in Rome")
	if code != 1 || !strings.Contains(errs, filepath.Join(agents, "nobody.json")) {
		t.Errorf("rank --agents DIR --agent nobody: exit %d, want 1 naming %s:\n%s", code, filepath.Join(agents, "nobody.json"), errs)
	}
}

// The user's thresholds file is looked for under $XDG_CONFIG_HOME: a file
// there that offers nothing makes rank say "no tool fits".
func TestRankThresholdsUnderXDGConfigHome(t *testing.T) {
	t.Parallel()
	bin := buildToolsrv(t)
	dir, cfg := rankFixture(t), t.TempDir()
	rank := func() string {
		t.Helper()
		cmd := osexec.Command(bin, "rank", "--tools", dir, "--no-cache", "what's the weather in Rome tomorrow")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + cfg}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("toolsrv rank: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := rank(); !strings.Contains(out, "get_weather") {
		t.Fatalf("with the shipped thresholds, get_weather should be offered:\n%s", out)
	}
	// tune --show says which file is in effect; make one that offers nothing.
	show := osexec.Command(bin, "tune", "--show", "--json")
	show.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	b, err := show.Output()
	if err != nil {
		t.Fatalf("tune --show: %v", err)
	}
	var shown map[string]any
	if err := json.Unmarshal(b, &shown); err != nil {
		t.Fatalf("tune --show --json: %v\n%s", err, b)
	}
	embedder, _ := shown["embedder"].(string)
	shipped := filepath.Join("..", "..", "thresholds", "defaults", strings.NewReplacer("/", "_").Replace(embedder)+".json")
	data, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatalf("the shipped thresholds of %q: %v", embedder, err)
	}
	var file map[string]any
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	file["policy"].(map[string]any)["minAnswerable"] = 0.9999
	data, _ = json.Marshal(file)
	tdir := filepath.Join(cfg, "toolsrv", "thresholds")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, filepath.Base(shipped)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := rank(); !strings.Contains(out, "no tool fits") {
		t.Errorf("the thresholds in $XDG_CONFIG_HOME/toolsrv/thresholds were not used:\n%s", out)
	}
}

// serve -v's catalog records count invalid files and their problems
// apart: one file with three problems is one invalid file.
func TestServeLogCountsInvalidFiles(t *testing.T) {
	cat := &registry.Catalog{Revision: 2, Problems: []registry.Problem{
		{Name: "a", File: "/t/a.meta", Msg: "one"}, {Name: "a", File: "/t/a.meta", Msg: "two"}, {Name: "a", File: "/t/a.meta", Msg: "three"},
		{Name: "b", File: "/t/b.meta", Msg: "one"},
	}}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	changes := make(chan registry.Change, 1)
	changes <- registry.Change{Catalog: cat}
	close(changes)
	logChanges(changes, log)
	if !strings.Contains(buf.String(), "invalid=2 problems=4") {
		t.Errorf("catalog changed record: %s; want invalid=2 problems=4", buf.String())
	}
}
