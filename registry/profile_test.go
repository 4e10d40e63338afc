package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "coder.json"), []byte(`{"autoLoad":["file_read","shell"],"allowTools":["file_read","shell","git_diff"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "open.json"), []byte(`{"autoLoad":["file_read"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "locked.json"), []byte(`{"allowTools":[]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"autoLoad":"file_read"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "typo.json"), []byte(`{"autoload":["file_read"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "twice.json"), []byte(`{"allowTools":["file_read"],"allowTools":[]}`), 0o644)
	tests := []struct {
		agent    string
		autoLoad string
		allowed  []string
		denied   []string
		err      string
	}{
		{"coder", "file_read,shell", []string{"file_read", "git_diff"}, []string{"http_fetch"}, ""},
		{"open", "file_read", []string{"anything"}, nil, ""},
		{"locked", "", nil, []string{"file_read"}, ""},
		{"nobody", "", []string{"anything"}, nil, ""},
		{"bad", "", nil, nil, "must be an array of tool names"},
		{"typo", "", nil, nil, `field "autoload": is not a profile key: did you mean "autoLoad"?`},
		{"twice", "", nil, nil, `field "allowTools": is given twice`},
		{"../etc", "", nil, nil, "agent name"},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			p, err := LoadProfile(dir, tc.agent)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.AutoLoad, ","); got != tc.autoLoad {
				t.Errorf("autoLoad = %q, want %q", got, tc.autoLoad)
			}
			for _, n := range tc.allowed {
				if !p.Allows(n) {
					t.Errorf("%s should be allowed", n)
				}
			}
			for _, n := range tc.denied {
				if p.Allows(n) {
					t.Errorf("%s should be denied", n)
				}
			}
		})
	}
}

// TestParseProfileRefuses: a profile with an unknown key ("autoload" for
// autoLoad) used to be accepted silently, and the agent loaded nothing.
func TestParseProfileRefuses(t *testing.T) {
	tests := []struct {
		name, data string
		field      string
		line       int
		want       string
	}{
		{"autoload", `{"autoload": ["file_read"]}`, "autoload", 1, `did you mean "autoLoad"?`},
		{"allow_tools", "{\n \"autoLoad\": [],\n \"allow_tools\": []\n}", "allow_tools", 3, `did you mean "allowTools"?`},
		{"other key", `{"name": "coder"}`, "name", 1, `is not a profile key; a profile has only "autoLoad" and "allowTools"`},
		{"key twice", "{\"allowTools\": [\"a\"],\n\"allowTools\": [\"a\", \"b\"]}", "allowTools", 2, "is given twice (first on line 1)"},
		{"null allowTools", `{"allowTools": null}`, "allowTools", 1, "write [] to allow none"},
		{"not a list", `{"autoLoad": "file_read"}`, "autoLoad", 1, "must be an array of tool names"},
		{"not a name", "{\"autoLoad\": [\"a\",\n  3]}", "autoLoad[1]", 2, "must be a tool name (a string), not a number"},
		{"bad name", `{"allowTools": ["../etc/passwd"]}`, "allowTools[0]", 1, "cannot be a tool name"},
		{"not an object", `["file_read"]`, "", 0, "must hold a JSON object"},
		{"null", `null`, "", 0, "must hold a JSON object"},
		{"syntax", "{\"autoLoad\": [\"a\"]\n\"x\"}", "", 2, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProfile("coder", []byte(tc.data))
			var all FieldErrors
			if !errors.As(err, &all) || p != nil {
				t.Fatalf("ParseProfile = %+v, %v; want FieldErrors", p, err)
			}
			if all[0].Field != tc.field || all[0].Line != tc.line || !strings.Contains(all[0].Msg, tc.want) {
				t.Errorf("problem %+v, want field %q line %d saying %q", all[0], tc.field, tc.line, tc.want)
			}
		})
	}
	p, err := ParseProfile("coder", []byte(`{"autoLoad": null, "allowTools": []}`))
	if err != nil || p.AutoLoad != nil || p.AllowTools == nil || len(*p.AllowTools) != 0 {
		t.Errorf("null autoLoad, empty allowTools: %+v, %v", p, err)
	}
}

// TestReadProfileMissing: LoadProfile keeps giving an agent without a
// profile file an empty one (the 9P server relies on it); ReadProfile lets a
// caller (the CLI's --agent) tell a missing profile apart.
func TestReadProfileMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadProfile(dir, "nobody")
	if !errors.Is(err, ErrNoProfile) || !strings.Contains(err.Error(), filepath.Join(dir, "nobody.json")) {
		t.Errorf("ReadProfile of a missing profile = %v, want ErrNoProfile naming the file", err)
	}
	p, err := LoadProfile(dir, "nobody")
	if err != nil || p.Name != "nobody" || p.File != "" || p.AutoLoad != nil || p.AllowTools != nil {
		t.Errorf("LoadProfile of a missing profile = %+v, %v; want an empty one", p, err)
	}
	os.WriteFile(filepath.Join(dir, "coder.json"), []byte(`{"autoLoad":["a"]}`), 0o644)
	p, err = ReadProfile(dir, "coder")
	if err != nil || p.File != filepath.Join(dir, "coder.json") {
		t.Errorf("ReadProfile = %+v, %v", p, err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "piped.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, "LoadProfile of a named pipe", func() { _, err = LoadProfile(dir, "piped") })
	if !errors.Is(err, fileio.ErrNotRegular) || errors.Is(err, ErrNoProfile) {
		t.Errorf("LoadProfile of a named pipe = %v, want not a regular file", err)
	}
}

func profileCatalog(t *testing.T) *Catalog {
	t.Helper()
	dir := t.TempDir()
	writeTool(t, dir, "file_read", `{"description":"read","cmd":"/bin/sh"}`, false)
	writeTool(t, dir, "file_grep", `{"description":"grep","cmd":"/bin/sh"}`, false)
	writeTool(t, dir, "plan9_only", `{"description":"p","cmd":"/bin/sh","variants":[{"match":{"os":"plan9"}}]}`, false)
	writeTool(t, dir, "broken", `{"description":"b","tier":"boiling"}`, false)
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r.Catalog()
}

// TestProfileCheck: names that are not tools are reported against the
// catalog (errors), as are autoLoad names allowTools forbids; hidden and
// invalid tools are warnings.
func TestProfileCheck(t *testing.T) {
	cat := profileCatalog(t)
	p, err := ParseProfile("coder", []byte(`{
  "autoLoad": ["file_read", "fiel_grep", "plan9_only", "file_grep"],
  "allowTools": ["file_read", "plan9_only",
                 "broken", "nope"]
}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		field   string
		line    int
		warning bool
		msg     string
	}{
		{"autoLoad[1]", 2, false, `"fiel_grep" is not a tool: no .meta defines it in ` + cat.Dirs[0] + `; did you mean "file_grep"?`},
		{"autoLoad[2]", 2, true, `tool "plan9_only" is not available on this host: no variant matches`},
		{"autoLoad[3]", 2, false, `"file_grep" is not in allowTools, so it can never be loaded`},
		{"allowTools[1]", 3, true, `tool "plan9_only" is not available`},
		{"allowTools[2]", 4, true, `tool "broken" is not available on this host: invalid`},
		{"allowTools[3]", 4, false, `"nope" is not a tool`},
	}
	got := p.Check(cat)
	if len(got) != len(want) {
		t.Fatalf("Check = %v, want %d problems", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Field != w.field || g.Line != w.line || g.Warning != w.warning || !strings.Contains(g.Msg, w.msg) || g.Agent != "coder" {
			t.Errorf("problem %d = %+v, want %s line %d warning=%v %q", i, g, w.field, w.line, w.warning, w.msg)
		}
	}
}

func TestCheckProfiles(t *testing.T) {
	cat := profileCatalog(t)
	dir := t.TempDir()
	files := map[string]string{
		"good.json":     `{"autoLoad": ["file_read"], "allowTools": ["file_read", "file_grep"]}`,
		"typo.json":     `{"autoload": ["file_read"], "allowTools": []}`,
		"unknown.json":  `{"autoLoad": ["file_raed"]}`,
		".hidden.json":  `{"nonsense": 1}`,
		"notes.txt":     `not a profile`,
		"bad name.json": `{}`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "piped.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	var n int
	var ps []ProfileProblem
	var err error
	within(t, "CheckProfiles", func() { n, ps, err = CheckProfiles(dir, cat) })
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("checked %d profiles, want 5", n)
	}
	want := map[string]string{
		"bad name": "bad agent name",
		"piped":    "not a regular file (a named pipe)",
		"typo":     `did you mean "autoLoad"?`,
		"unknown":  `"file_raed" is not a tool`,
	}
	if len(ps) != len(want) {
		t.Fatalf("problems %v, want %d", ps, len(want))
	}
	for _, p := range ps {
		if w, ok := want[p.Agent]; !ok || !strings.Contains(p.Msg, w) || p.Warning || p.File != filepath.Join(dir, p.Agent+".json") {
			t.Errorf("problem %+v, want one for %s saying %q", p, p.Agent, w)
		}
	}
	if n, ps, err := CheckProfiles(filepath.Join(dir, "none"), cat); n != 0 || ps != nil || err != nil {
		t.Errorf("missing directory: %d %v %v", n, ps, err)
	}
}
