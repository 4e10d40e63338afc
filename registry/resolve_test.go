package registry

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testHost is a linux/amd64 host with journalctl on PATH, /var/log/syslog,
// DISPLAY set and SSH_CONNECTION unset.
func testHost() StaticHost {
	return StaticHost{
		GOOS: "linux", GOARCH: "amd64",
		Env:   map[string]string{"DISPLAY": ":0", "EMPTY": ""},
		Files: map[string]bool{"/var/log/syslog": true, "/etc": true},
		Exec:  map[string]bool{"/usr/bin/journalctl": true, "/usr/bin/jq": true, "/opt/tool/bin": true, "/bin/sh": true},
		Path:  []string{"/usr/local/bin", "/usr/bin"},
	}
}

func TestVariants(t *testing.T) {
	tests := []struct {
		name    string
		meta    string
		variant int    // -1: no variants; -2: hidden
		cmd     string // expected Argv joined by space (when visible)
		desc    string
		why     string // substring of the hidden reason
	}{
		{"no variants", `{"description":"d","cmd":"jq"}`, -1, "/usr/bin/jq", "d", ""},
		{"first match wins", `{"description":"d","variants":[{"match":{"binary":"journalctl"},"cmd":"journalctl"},{"match":{"file":"/var/log/syslog"},"cmd":"tail /var/log/syslog"}]}`, 0, "/usr/bin/journalctl", "d", ""},
		{"second when first fails", `{"description":"d","variants":[{"match":{"binary":"nope"},"cmd":"jq"},{"match":{"file":"/var/log/syslog"},"cmd":"tail /var/log/syslog"}]}`, 1, "/bin/sh -c tail /var/log/syslog", "d", ""},
		{"keys AND: one fails", `{"description":"d","variants":[{"match":{"os":"linux","arch":"arm64"},"cmd":"jq"}]}`, -2, "", "", `arch is not "arm64"`},
		{"keys AND: all hold", `{"description":"d","variants":[{"match":{"os":"linux","arch":"amd64","env":"DISPLAY","nenv":"SSH_CONNECTION"},"cmd":"jq"}]}`, 0, "/usr/bin/jq", "d", ""},
		{"array OR", `{"description":"d","variants":[{"match":{"os":["darwin","linux"]},"cmd":"jq"}]}`, 0, "/usr/bin/jq", "d", ""},
		{"array OR none", `{"description":"d","variants":[{"match":{"os":["darwin","windows"]},"cmd":"jq"}]}`, -2, "", "", `os is not "darwin" or "windows"`},
		{"no match → always", `{"description":"d","variants":[{"match":{"os":"plan9"},"cmd":"x"},{"cmd":"jq"}]}`, 1, "/usr/bin/jq", "d", ""},
		{"binary absolute", `{"description":"d","variants":[{"match":{"binary":"/opt/tool/bin"},"cmd":"/opt/tool/bin"}]}`, 0, "/opt/tool/bin", "d", ""},
		{"binary absolute missing", `{"description":"d","variants":[{"match":{"binary":"/opt/none"},"cmd":"jq"}]}`, -2, "", "", `binary "/opt/none" not found`},
		{"file missing", `{"description":"d","variants":[{"match":{"file":"/var/log/messages"},"cmd":"jq"}]}`, -2, "", "", "missing"},
		{"env empty counts as unset", `{"description":"d","variants":[{"match":{"env":"EMPTY"},"cmd":"jq"}]}`, -2, "", "", "unset or empty"},
		{"nenv set fails", `{"description":"d","variants":[{"match":{"nenv":"DISPLAY"},"cmd":"jq"}]}`, -2, "", "", `nenv "DISPLAY" set`},
		{"nenv empty holds", `{"description":"d","variants":[{"match":{"nenv":"EMPTY"},"cmd":"jq"}]}`, 0, "/usr/bin/jq", "d", ""},
		{"variant overrides description", `{"description":"top","variants":[{"description":"v","cmd":"jq"}]}`, 0, "/usr/bin/jq", "v", ""},
		{"variant inherits cmd", `{"description":"top","cmd":"jq","variants":[{"match":{"os":"linux"},"tier":"hot"}]}`, 0, "/usr/bin/jq", "top", ""},
		{"no variant holds lists all", `{"description":"d","variants":[{"match":{"binary":"a"}},{"match":{"file":"/b"}}]}`, -2, "", "", `variant 0: binary "a" not found; variant 1: file "/b" missing`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMeta([]byte(tc.meta))
			if err != nil {
				t.Fatal(err)
			}
			sch, err := compileSchemas(m)
			if err != nil {
				t.Fatal(err)
			}
			tool, why, err := resolve("x", "/tools/x.meta", "/tools", sha256.Sum256([]byte(tc.meta)), m, sch, testHost())
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if tc.variant == -2 {
				if tool != nil || !strings.Contains(why, tc.why) {
					t.Fatalf("want hidden with reason containing %q; got tool=%v why=%q", tc.why, tool, why)
				}
				return
			}
			if tool == nil {
				t.Fatalf("hidden (%s), want variant %d", why, tc.variant)
			}
			if tool.Variant != tc.variant || strings.Join(tool.Command.Argv, " ") != tc.cmd || tool.Description != tc.desc {
				t.Errorf("got variant=%d argv=%q desc=%q; want %d %q %q", tool.Variant, tool.Command.Argv, tool.Description, tc.variant, tc.cmd, tc.desc)
			}
		})
	}
}

func TestVariantFieldsOverrideAndInherit(t *testing.T) {
	meta := `{"description":"top","prompt":"p","keywords":["k"],"tier":"cold","readOnly":true,
		"args":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},
		"variants":[{"match":{"os":"linux"},"cmd":"jq","tier":"hot","readOnly":false,
			"args":{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]}}]}`
	m, err := ParseMeta([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := compileSchemas(m)
	if err != nil {
		t.Fatal(err)
	}
	tool, _, err := resolve("x", "/tools/x.meta", "/tools", sha256.Sum256([]byte(meta)), m, sch, testHost())
	if err != nil || tool == nil {
		t.Fatal(err)
	}
	if tool.Tier != Hot || tool.ReadOnly || tool.Prompt != "p" || tool.Keywords[0] != "k" {
		t.Errorf("override/inherit wrong: tier=%s readOnly=%v prompt=%q", tool.Tier, tool.ReadOnly, tool.Prompt)
	}
	if err := tool.ValidateArgs([]byte(`{"b":3}`)); err != nil {
		t.Errorf("variant schema should accept b: %v", err)
	}
	if err := tool.ValidateArgs([]byte(`{"a":"x"}`)); err == nil {
		t.Errorf("variant schema should require b")
	}
}

func TestValidateArgsListsEveryViolation(t *testing.T) {
	meta := `{"description":"d","cmd":"jq","args":{"type":"object","additionalProperties":false,
		"properties":{"mode":{"enum":["fast","slow"]},"count":{"type":"integer","maximum":100}},"required":["mode"]}}`
	m, _ := ParseMeta([]byte(meta))
	sch, _ := compileSchemas(m)
	tool, _, _ := resolve("x", "/t/x.meta", "/t", sha256.Sum256([]byte(meta)), m, sch, testHost())
	err := tool.ValidateArgs([]byte(`{"mode":"medium","count":500,"colour":1}`))
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"/mode", "/count", "colour"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `{`} {
		if tool.ValidateArgs([]byte(bad)) == nil {
			t.Errorf("ValidateArgs(%s) accepted", bad)
		}
	}
}

// writeTool writes dir/name.meta (and an executable dir/name when exe).
func writeTool(t testing.TB, dir, name, meta string, exe bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	if exe {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\ncat\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommandResolutionOrder(t *testing.T) {
	dir := t.TempDir()
	// A helper script beside the .meta, named by a bare cmd.
	if err := os.WriteFile(filepath.Join(dir, "helper"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, meta string
		exe        bool
		kind       CommandKind
		argv       string
		problem    string
	}{
		{"co-located wins over cmd", `{"description":"d","cmd":"sh -c 'exit 1'"}`, true, CoLocated, "{dir}/co-located-wins-over-cmd", ""},
		{"absolute cmd", `{"description":"d","cmd":"/bin/sh"}`, false, Direct, "/bin/sh", ""},
		{"bare cmd on PATH", `{"description":"d","cmd":"sh"}`, false, Direct, "/bin/sh || /usr/bin/sh", ""},
		{"bare cmd beside meta", `{"description":"d","cmd":"helper"}`, false, Direct, "{dir}/helper", ""},
		{"shell cmd", `{"description":"d","cmd":"input=$(cat); echo \"$input\" | jq -r .path"}`, false, Shell, `/bin/sh -c input=$(cat); echo "$input" | jq -r .path`, ""},
		{"absolute with args is shell", `{"description":"d","cmd":"/bin/echo hi"}`, false, Shell, "/bin/sh -c /bin/echo hi", ""},
		{"name on PATH", `{"description":"d"}`, false, OnPath, "", ""},
		{"absolute missing", `{"description":"d","cmd":"/nonexistent/tool"}`, false, "", "", "not an executable file"},
		{"bare missing", `{"description":"d","cmd":"no-such-binary-xyz"}`, false, "", "", "neither an executable"},
		{"non-executable beside meta", `{"description":"d","cmd":"notexec"}`, false, "", "", "neither an executable"},
		{"nothing at all", `{"description":"d"}`, false, "", "", "no command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			if tc.name == "name on PATH" {
				name = "true" // /bin/true or /usr/bin/true
			}
			if tc.name == "nothing at all" {
				name = "zz-no-such-tool"
			}
			writeTool(t, dir, name, tc.meta, tc.exe)
			r := New(Options{Dirs: []string{dir}})
			if err := r.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			cat := r.Catalog()
			tool, ok := cat.Get(name)
			if tc.problem != "" {
				if ok {
					t.Fatalf("tool visible with %v, want problem %q", tool.Command, tc.problem)
				}
				why, _ := cat.HiddenReason(name)
				if !strings.Contains(why, tc.problem) || !strings.Contains(why, "cmd") {
					t.Fatalf("problem = %q, want %q", why, tc.problem)
				}
				return
			}
			if !ok {
				why, _ := cat.HiddenReason(name)
				t.Fatalf("not visible: %s", why)
			}
			if tool.Command.Kind != tc.kind {
				t.Errorf("kind = %s, want %s", tool.Command.Kind, tc.kind)
			}
			got := strings.Join(tool.Command.Argv, " ")
			if tc.argv != "" {
				ok := false
				for _, alt := range strings.Split(strings.ReplaceAll(tc.argv, "{dir}", dir), " || ") {
					ok = ok || got == alt
				}
				if !ok {
					t.Errorf("argv = %q, want %q", got, tc.argv)
				}
			}
		})
	}
}

func TestShadowingAndPrecedence(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	writeTool(t, a, "dup", `{"description":"from a","cmd":"/bin/sh"}`, false)
	writeTool(t, b, "dup", `{"description":"from b","cmd":"/bin/sh"}`, false)
	writeTool(t, c, "dup", `{"description":"from c","cmd":"/bin/sh"}`, false)
	writeTool(t, a, "broken", `{"description":`, false)
	writeTool(t, b, "broken", `{"description":"fine in b","cmd":"/bin/sh"}`, false)
	writeTool(t, a, "onlyb", `{"description":"hidden in a","cmd":"/bin/sh","variants":[{"match":{"os":"plan9"}}]}`, false)
	writeTool(t, b, "onlyb", `{"description":"b","cmd":"/bin/sh"}`, false)
	writeTool(t, c, "hiddenall", `{"description":"h","cmd":"/bin/sh","variants":[{"match":{"os":"plan9"}}]}`, false)

	r := New(Options{Dirs: []string{a, b, c}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := r.Catalog()
	tests := []struct{ name, desc string }{{"dup", "from a"}, {"broken", "fine in b"}, {"onlyb", "b"}}
	for _, tc := range tests {
		tool, ok := cat.Get(tc.name)
		if !ok || tool.Description != tc.desc {
			t.Errorf("%s: got %v, want description %q", tc.name, tool, tc.desc)
		}
	}
	if len(cat.Shadowed) != 2 {
		t.Fatalf("shadowed = %+v, want dup in b and c", cat.Shadowed)
	}
	for _, s := range cat.Shadowed {
		if s.Name != "dup" || s.ShadowedBy != filepath.Join(a, "dup.meta") {
			t.Errorf("bad shadow %+v", s)
		}
	}
	if len(cat.Problems) != 1 || cat.Problems[0].File != filepath.Join(a, "broken.meta") {
		t.Errorf("problems = %+v, want broken in a", cat.Problems)
	}
	if _, ok := cat.Get("hiddenall"); ok {
		t.Error("hiddenall visible")
	}
	if why, ok := cat.HiddenReason("hiddenall"); !ok || !strings.Contains(why, "plan9") {
		t.Errorf("hidden reason = %q", why)
	}
	if len(cat.Hidden) != 1 {
		t.Errorf("hidden = %+v, want only hiddenall (onlyb is visible from b)", cat.Hidden)
	}
	// Lookup says the same for every front end.
	for _, tc := range []struct {
		name, want string
		hidden     bool
	}{
		{"dup", "", false},
		{"hiddenall", "tool hiddenall is not available: ", true},
		{"broken", "", false}, // invalid in a, valid in b
		{"nope", "unknown tool: nope (no .meta defines it in " + a + ":", false},
	} {
		tool, err := cat.Lookup(tc.name)
		if tc.want == "" {
			if err != nil || tool == nil || tool.Name != tc.name {
				t.Errorf("Lookup(%s) = %v, %v", tc.name, tool, err)
			}
			continue
		}
		var le *LookupError
		if !errors.As(err, &le) || tool != nil || le.Hidden() != tc.hidden || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Lookup(%s) = %v, %v; want a LookupError (hidden %v) starting %q", tc.name, tool, err, tc.hidden, tc.want)
		}
	}
}

func TestBadFileNamesAreProblems(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a..b", "_x", "sp ace", strings.Repeat("n", 129)} {
		writeTool(t, dir, n, `{"description":"d","cmd":"/bin/sh"}`, false)
	}
	writeTool(t, dir, "good", `{"description":"d","cmd":"/bin/sh"}`, false)
	// Editor droppings are not tools at all.
	for _, n := range []string{".good.meta.swp", ".x.meta", "x.meta~"} {
		os.WriteFile(filepath.Join(dir, n), []byte("junk"), 0o644)
	}
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := r.Catalog()
	if len(cat.Tools) != 1 || len(cat.Problems) != 4 {
		t.Fatalf("tools=%d problems=%+v; want 1 tool and 4 name problems", len(cat.Tools), cat.Problems)
	}
	for _, p := range cat.Problems {
		if !strings.Contains(p.Msg, "bad tool name") {
			t.Errorf("problem %q lacks a name reason", p.Msg)
		}
	}
}

// TestParallelResolveMatchesOneByOne: a load large enough to read and
// resolve its names on several goroutines publishes what resolving each
// name alone gives: tools, variants chosen by the host, co-located
// executables, hidden tools, problems and shadowed files.
func TestParallelResolveMatchesOneByOne(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for i := range 3 * prefetchMin {
		name := fmt.Sprintf("tool_%03d", i)
		switch i % 6 {
		case 0:
			writeTool(t, a, name, `{"description":"plain","cmd":"cat"}`, false)
		case 1:
			writeTool(t, a, name, `{"description":"co-located"}`, true)
		case 2:
			writeTool(t, a, name, `{"description":"variants","variants":[{"match":{"binary":"no-such-binary-here"},"cmd":"x"},{"match":{"binary":"sh"},"cmd":"sh -c true"}]}`, false)
		case 3:
			writeTool(t, a, name, `{"description":"hidden","variants":[{"match":{"os":"plan9"},"cmd":"x"}]}`, false)
		case 4:
			writeTool(t, a, name, `{"description":1}`, false)
		case 5:
			writeTool(t, a, name, `{"description":"first","cmd":"cat"}`, false)
			writeTool(t, b, name, `{"description":"shadowed","cmd":"cat"}`, false)
		}
	}
	r := New(Options{Dirs: []string{a, b}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Catalog().Tools); n == 0 {
		t.Fatal("no tools")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := newMemoHost(r.opts.Host, nil)
	for n, got := range r.results {
		want, waits := r.resolveName(n, h)
		if len(waits) > 0 || want == nil || want.fp != got.fp {
			t.Errorf("%s: resolved alone %+v (waits %d), published %+v", n, want, len(waits), got)
		}
	}
	if len(r.results) != 3*prefetchMin {
		t.Errorf("%d names resolved, want %d", len(r.results), 3*prefetchMin)
	}
}
