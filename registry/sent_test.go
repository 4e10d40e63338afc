package registry

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A definition sent to a session resolves against the receiving host, as a
// file would, and can bring nothing with it.
func TestResolveSent(t *testing.T) {
	host := StaticHost{GOOS: "linux", GOARCH: "amd64", Path: []string{"/srv/bin", "/usr/bin"},
		Exec:  map[string]bool{"/srv/bin/journalctl": true, "/usr/bin/tail": true, "/usr/bin/logs": true},
		Files: map[string]bool{"/var/log/syslog": true}}
	twoVariants := `{"description": "Recent system logs",
  "variants": [
    {"match": {"binary": "journalctl"}, "cmd": "journalctl"},
    {"match": {"file": "/var/log/syslog"}, "cmd": "tail -n 50 /var/log/syslog"}
  ]}`
	cases := []struct {
		name, data string
		// variant and argv of the tool; hidden or problem: a fragment of
		// the reason.
		variant int
		argv    []string
		hidden  string
		problem string
		line    int
	}{
		{name: "system_logs", data: twoVariants, variant: 0, argv: []string{"/srv/bin/journalctl"}},
		{name: "shell", data: `{"description":"d","cmd":"echo hi | tr a-z A-Z"}`, variant: -1, argv: []string{"/bin/sh", "-c", "echo hi | tr a-z A-Z"}},
		{name: "logs", data: `{"description":"on PATH by its name"}`, variant: -1, argv: []string{"/usr/bin/logs"}},
		{name: "mac_only", data: `{"description":"d","variants":[{"match":{"os":"darwin"},"cmd":"log show"}]}`, hidden: `os is not "darwin"`},
		{name: "helper", data: `{"description":"d","cmd":"helper.sh"}`, problem: "cannot bring an executable"},
		{name: "beside", data: `{"description":"its executable would be beside the .meta"}`, problem: "executables are not sent"},
		{name: "broken", data: "{\n  \"description\": \"d\",\n  \"cmd\": \"true\",,\n}", problem: "not valid JSON", line: 3},
		{name: "typo", data: `{"description":"d","cmd":"true","readonly":true}`, problem: `did you mean "readOnly"`},
		{name: "deep", data: `{"description":"d","cmd":"true","args":` + strings.Repeat(`{"not":`, MaxSchemaDepth+1) + `{}` + strings.Repeat(`}`, MaxSchemaDepth+1) + `}`, problem: "levels deep"},
		{name: "bad/name", data: `{"description":"d"}`, problem: "bad tool name"},
		{name: "big", data: `{"description":"d","prompt":"` + strings.Repeat("x", MaxSentSize) + `"}`, problem: "at most 262144"},
	}
	r := New(Options{Dirs: []string{t.TempDir()}, Host: host})
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, "/", "_"), func(t *testing.T) {
			file := "session/s/meta/" + tc.name
			s, err := r.ResolveSent(ctx, tc.name, file, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.problem != "":
				if len(s.Problems) == 0 || s.Tool != nil {
					t.Fatalf("want a problem with %q, got %+v", tc.problem, s)
				}
				p := s.Problems[0]
				if !strings.Contains(p.Msg, tc.problem) || p.File != file || p.Name != tc.name {
					t.Errorf("problem %+v, want %q in file %s", p, tc.problem, file)
				}
				if tc.line != 0 && p.Line != tc.line {
					t.Errorf("line %d, want %d", p.Line, tc.line)
				}
			case tc.hidden != "":
				if s.Hidden == nil || !strings.Contains(s.Hidden.Reason, tc.hidden) {
					t.Fatalf("want hidden with %q, got %+v", tc.hidden, s)
				}
			default:
				if s.Tool == nil {
					t.Fatalf("no tool: %+v", s)
				}
				if s.Tool.Variant != tc.variant || !slices.Equal(s.Tool.Command.Argv, tc.argv) {
					t.Errorf("variant %d argv %q, want %d %q", s.Tool.Variant, s.Tool.Command.Argv, tc.variant, tc.argv)
				}
				if s.Tool.Dir != "" || s.Tool.File != file || s.Tool.Command.Kind == CoLocated {
					t.Errorf("a sent tool has no directory: %+v", s.Tool)
				}
			}
		})
	}

	// The same definition on a host without journalctl takes the other
	// variant: variants are the receiver's.
	other := New(Options{Dirs: []string{t.TempDir()}, Host: StaticHost{GOOS: "linux", Path: []string{"/usr/bin"},
		Files: map[string]bool{"/var/log/syslog": true}}})
	s, err := other.ResolveSent(ctx, "system_logs", "session/s/meta/system_logs", []byte(twoVariants))
	if err != nil || s.Tool == nil || s.Tool.Variant != 1 || s.Tool.Command.Kind != Shell {
		t.Errorf("on a syslog host: %+v, %v", s.Tool, err)
	}
}

// A session's catalog is the host's plus its sent tools: a sent tool wins
// over the host's of the same name (reported as a shadow), a hidden or
// invalid sent definition shadows nothing.
func TestWithSent(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"deploy":  `{"description":"host deploy","cmd":"/bin/true"}`,
		"status":  `{"description":"host status","cmd":"/bin/true"}`,
		"backup":  `{"description":"host backup","cmd":"/bin/true"}`,
		"mac_app": `{"description":"host mac","variants":[{"match":{"os":"plan9"},"cmd":"x"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	r := New(Options{Dirs: []string{dir}})
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(name, data string) Sent {
		s, err := r.ResolveSent(ctx, name, "session/s/meta/"+name, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	host := r.Catalog()
	sent := []Sent{
		send("deploy", `{"description":"sent deploy","cmd":"/bin/echo"}`),
		send("status", `{"description":"sent status","variants":[{"match":{"os":"plan9"},"cmd":"x"}]}`),
		send("backup", `{"description":"sent backup","cmd":"true",}`),
		send("mac_app", `{"description":"sent mac","cmd":"/bin/true"}`),
		send("extra", `{"description":"sent extra","cmd":"/bin/true"}`),
	}
	cat := WithSent(host, sent, host.Revision+7)
	if cat.Revision != host.Revision+7 {
		t.Errorf("revision %d", cat.Revision)
	}
	want := map[string]string{"deploy": "sent deploy", "status": "host status", "backup": "host backup", "mac_app": "sent mac", "extra": "sent extra"}
	if len(cat.Tools) != len(want) {
		t.Errorf("tools %v", catalogNames(cat))
	}
	for name, desc := range want {
		if tl, ok := cat.Get(name); !ok || tl.Description != desc {
			t.Errorf("%s: %+v, want %q", name, tl, desc)
		}
	}
	if len(cat.Shadowed) != 1 || cat.Shadowed[0].Name != "deploy" || cat.Shadowed[0].ShadowedBy != "session/s/meta/deploy" ||
		cat.Shadowed[0].File != filepath.Join(dir, "deploy.meta") {
		t.Errorf("shadowed %+v", cat.Shadowed)
	}
	if len(cat.Hidden) != 0 {
		t.Errorf("hidden %+v: the sent mac_app is visible", cat.Hidden)
	}
	if ps := problemsOfFile(cat, "session/s/meta/backup"); len(ps) != 1 {
		t.Errorf("backup's problems %+v", ps)
	}
	// The host's catalog is untouched.
	if tl, _ := host.Get("deploy"); tl.Description != "host deploy" || len(host.Shadowed) != 0 || len(host.Hidden) != 1 {
		t.Errorf("the host catalog changed: %+v", host)
	}
}
