package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs toolsrv in-process with an empty environment (HOME a fresh
// temporary directory) and returns exit code, stdout, stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIWith(t, "", nil, args...)
}

func cliFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"alpha.meta":  `{"description":"Alpha does a.","tier":"hot","cmd":"cat","keywords":["first"],"args":{"type":"object","properties":{"x":{"type":"string"}}}}`,
		"beta.meta":   `{"description":"Beta does b.","cmd":"input=$(cat); echo \"$input\"","readOnly":true}`,
		"broken.meta": "{\n \"description\": \"b\",\n nope\n}",
		"ghost.meta":  `{"description":"Only on plan9.","cmd":"cat","variants":[{"match":{"os":"plan9"}}]}`,
		"weird.meta":  `{"description":"Has an unknown field.","cmd":"cat","colour":"blue"}`,
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLsShowValidate(t *testing.T) {
	dir := cliFixture(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		noStdout []string
	}{
		{"ls", []string{"ls", "--tools", dir}, 0, []string{"alpha", "hot", "Alpha does a.", "beta", "warm"}, []string{"1 invalid", "1 tool(s) hidden"}, []string{"ghost", "broken"}},
		{"show", []string{"show", "--tools", dir, "alpha"}, 0, []string{"file:", filepath.Join(dir, "alpha.meta"), "tier:        hot", "command:     cmd:", "keywords:    first", `"x"`}, nil, nil},
		{"show shell", []string{"show", "--tools", dir, "beta"}, 0, []string{"command:     shell: /bin/sh -c", "readOnly"}, nil, nil},
		{"show hidden says why", []string{"show", "--tools", dir, "ghost"}, 1, nil, []string{"not available", "plan9"}, nil},
		{"show invalid says why", []string{"show", "--tools", dir, "broken"}, 1, nil, []string{"invalid", "broken.meta:3"}, nil},
		{"show unknown", []string{"show", "--tools", dir, "nope"}, 1, nil, []string{"unknown tool: nope"}, nil},
		{"validate", []string{"validate", dir}, 1, []string{"error: " + filepath.Join(dir, "broken.meta") + ":3", "warning:", `"colour"`, "hidden:", "3 valid, 1 invalid, 1 hidden"}, nil, nil},
		{"validate a missing directory", []string{"validate", "--tools", filepath.Join(dir, "none")}, 1, nil, []string{"no tool directory to read", "none"}, nil},
		{"validate an empty directory", []string{"validate", "--tools", t.TempDir()}, 0, []string{"0 valid, 0 invalid"}, nil, nil},
		{"unknown command", []string{"frobnicate"}, 2, nil, []string{"unknown command"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			for _, s := range tc.noStdout {
				if strings.Contains(out, s) {
					t.Errorf("stdout has %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestLsJSON(t *testing.T) {
	dir := cliFixture(t)
	code, out, _ := runCLI(t, "ls", "--json", "--tools", dir)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Revision uint64
		Tools    []struct {
			Name    string          `json:"name"`
			Args    json.RawMessage `json:"args"`
			Command struct{ Kind string }
		}
		Problems []struct{ File, Error string }
		Hidden   []struct{ Name, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(v.Tools) != 3 || v.Tools[0].Name != "alpha" || len(v.Problems) != 1 || len(v.Hidden) != 1 || v.Revision == 0 {
		t.Errorf("unexpected catalog: %+v", v)
	}
}

func TestToolsPathEnv(t *testing.T) {
	a, b := cliFixture(t), t.TempDir()
	os.WriteFile(filepath.Join(b, "alpha.meta"), []byte(`{"description":"Shadowed alpha.","cmd":"cat"}`), 0o644)
	var out bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &bytes.Buffer{}, getenv: func(k string) string {
		if k == "OLLIE_TOOLS_PATH" {
			return a + ":" + b
		}
		return ""
	}}
	if code := dispatch(context.Background(), env, []string{"validate"}); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), "shadowed: "+filepath.Join(b, "alpha.meta")+" is overridden by "+filepath.Join(a, "alpha.meta")) {
		t.Errorf("shadowing not reported:\n%s", out.String())
	}
}

// Every subcommand answers --help with its usage on standard output and
// exit status 0.
func TestHelpOnEverySubcommand(t *testing.T) {
	for name := range commands() {
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, name, "--help")
			if code != 0 || errs != "" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			if !strings.Contains(out, "Usage: toolsrv "+name) || !strings.Contains(out, "-tools") {
				t.Errorf("no usage line and flags for %s on stdout:\n%s", name, out)
			}
			if strings.Contains(out, "-help") {
				t.Errorf("the help lists -help as a flag:\n%s", out)
			}
		})
	}
	if code, out, _ := runCLI(t, "help"); code != 0 || !strings.Contains(out, "Commands:") {
		t.Errorf("toolsrv help: exit %d\n%s", code, out)
	}
}

// The pass-through fields are carried to the catalog unchanged and shown.
func TestShowPassThroughFields(t *testing.T) {
	dir := t.TempDir()
	meta := `{"description":"Lists mail.","cmd":"cat","scope":"mailbox","outputFormat":"markdown","resetsCounter":true}`
	if err := os.WriteFile(filepath.Join(dir, "mail.meta"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "show", "--tools", dir, "mail")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"scope:       mailbox", "output:      markdown (outputFormat)", "resetsCounter"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "ls", "--json", "--tools", dir)
	for _, want := range []string{`"scope": "mailbox"`, `"outputFormat": "markdown"`, `"resetsCounter": true`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("ls --json lacks %s:\n%s", want, out)
		}
	}
}
