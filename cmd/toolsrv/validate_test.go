package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// validateTools is a tools directory where each file has problems that
// validate on main reported only the first of, or not at all.
func validateTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"ok.meta":       `{"description":"fine","cmd":"cat"}`,
		"many.meta":     "{\n  \"description\": \"d\",\n  \"tier\": \"boiling\",\n  \"readOnly\": \"yes\",\n  \"args\": {\"type\": \"strin\"}\n}",
		"readonly.meta": "{\"description\": \"d\", \"cmd\": \"cat\",\n \"readonly\": true}",
		"twice.meta":    "{\"description\": \"d\", \"cmd\": \"cat\",\n \"tier\": \"hot\",\n \"tier\": \"cold\"}",
		"deep.meta":     `{"description":"d","cmd":"cat","args":` + strings.Repeat(`{"not":`, 2000) + `{}` + strings.Repeat(`}`, 2000) + `}`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.meta"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runCLIWithin is runCLIWith that fails the test instead of hanging when
// the command has not returned after 30 s.
func runCLIWithin(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := runCLIWith(t, "", env, args...)
		done <- result{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(safetyNet):
		t.Fatalf("toolsrv %s: still running after %s", strings.Join(args, " "), safetyNet)
		return 0, "", ""
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	dir := validateTools(t)
	f := func(name string) string { return filepath.Join(dir, name+".meta") }
	code, out, errs := runCLIWithin(t, nil, "validate", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"error: " + f("many") + `:3: field "tier": is "boiling"`,
		"error: " + f("many") + `:4: field "readOnly": must be true or false`,
		"error: " + f("many") + `:5: field "args": does not compile as a JSON Schema`,
		"error: " + f("readonly") + `:2: field "readonly": did you mean "readOnly"?`,
		"error: " + f("twice") + `:3: field "tier": is given twice (first on line 2)`,
		"error: " + f("deep") + `:1: field "args": nests 2001 levels deep; the limit for a schema is 64`,
		"error: " + f("fifo") + ": not a regular file (a named pipe)",
		"1 valid, 5 invalid, 0 hidden, 0 shadowed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "agent profiles") {
		t.Errorf("profiles checked without --agents for a DIR argument:\n%s", out)
	}
}

func TestValidateAgentProfiles(t *testing.T) {
	tools := t.TempDir()
	for n, c := range map[string]string{
		"file_read.meta": `{"description":"read","cmd":"cat"}`,
		"file_grep.meta": `{"description":"grep","cmd":"cat"}`,
	} {
		if err := os.WriteFile(filepath.Join(tools, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	agents := filepath.Join(home, ".config", "ollie", "agents")
	good := t.TempDir()
	for dir, files := range map[string]map[string]string{
		agents: {
			"typo.json":    `{"autoload": ["file_read"]}`,
			"unknown.json": "{\"autoLoad\": [\"file_read\",\n  \"fiel_grep\"]}",
			"fine.json":    `{"autoLoad": ["file_read"], "allowTools": ["file_read", "file_grep"]}`,
		},
		good: {"fine.json": `{"autoLoad": ["file_grep"]}`},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := map[string]string{"HOME": home}
	tests := []struct {
		name   string
		args   []string
		code   int
		want   []string
		absent []string
	}{
		{"default directory", []string{"validate", "--tools", tools}, 1, []string{
			"error: agent typo: " + filepath.Join(agents, "typo.json") + `:1: field "autoload": is not a profile key: did you mean "autoLoad"?`,
			"error: agent unknown: " + filepath.Join(agents, "unknown.json") + `:2: field "autoLoad[1]": "fiel_grep" is not a tool`,
			`did you mean "file_grep"?`,
			"agent profiles in " + agents + ": 3 checked, 2 invalid",
			"2 valid, 0 invalid",
		}, []string{"agent fine"}},
		{"--agents", []string{"validate", "--tools", tools, "--agents", good}, 0, []string{"agent profiles in " + good + ": 1 checked, 0 invalid"}, []string{"error"}},
		{"DIR and --agents", []string{"validate", "--agents", agents, tools}, 1, []string{"3 checked, 2 invalid"}, nil},
		{"DIR alone checks no profiles", []string{"validate", tools}, 0, []string{"2 valid, 0 invalid"}, []string{"agent"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLIWithin(t, env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("output has %q:\n%s", a, out)
				}
			}
		})
	}

	code, out, _ := runCLIWithin(t, env, "validate", "--tools", tools, "--json")
	var v struct {
		Tools    []json.RawMessage `json:"tools"`
		Profiles struct {
			Dir      string `json:"dir"`
			Checked  int    `json:"checked"`
			Problems []struct {
				Agent, File, Field string
				Line               int
				Error              string
			} `json:"problems"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if len(v.Tools) != 2 || v.Profiles.Dir != agents || v.Profiles.Checked != 3 || len(v.Profiles.Problems) != 2 ||
		v.Profiles.Problems[1].Field != "autoLoad[1]" || v.Profiles.Problems[1].Line != 2 {
		t.Errorf("--json = %+v", v)
	}
}
