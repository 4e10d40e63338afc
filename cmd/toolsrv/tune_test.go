package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What "tune --show --json" prints is a thresholds file: saved as it is,
// "rank --thresholds" takes it and ranks as with the thresholds it came
// from; an edit of it takes effect; and the output of --show for that
// file (its source and path) is taken again.
func TestTuneShowJSONRoundTrip(t *testing.T) {
	tools, home := rankFixture(t), t.TempDir()
	env := map[string]string{"HOME": home}
	const query = "what's the weather in Rome tomorrow"
	show := func(env map[string]string) []byte {
		t.Helper()
		code, out, errs := runCLIWith(t, "", env, "tune", "--show", "--json")
		if code != 0 {
			t.Fatalf("tune --show --json: exit %d\n%s", code, errs)
		}
		return []byte(out)
	}
	rank := func(thr string) string {
		t.Helper()
		args := []string{"rank", "--tools", tools, "--no-cache", query}
		if thr != "" {
			args = append(args, "--thresholds", thr)
		}
		code, out, errs := runCLIWith(t, "", env, args...)
		if code != 0 || errs != "" {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	save := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	shown := show(env)
	file := save("shown.json", shown)
	if got, want := rank(file), rank(""); got != want || !strings.Contains(got, "get_weather") {
		t.Errorf("with the shown thresholds:\n%s\nwith those in effect:\n%s", got, want)
	}

	var edited map[string]any
	if err := json.Unmarshal(shown, &edited); err != nil {
		t.Fatal(err)
	}
	if edited["source"] != "shipped" {
		t.Errorf("--show --json source %v, want shipped", edited["source"])
	}
	edited["policy"].(map[string]any)["minAnswerable"] = 0.9999
	b, _ := json.MarshalIndent(edited, "", "  ")
	strict := save("strict.json", b)
	if out := rank(strict); !strings.Contains(out, "no tool fits") {
		t.Errorf("the edited file (minAnswerable 0.9999) was not used:\n%s", out)
	}

	// The file in effect through $TOOLSRV_THRESHOLDS, shown with its
	// source and path, and taken again as it is.
	again := show(map[string]string{"HOME": home, "TOOLSRV_THRESHOLDS": strict})
	var a map[string]any
	if err := json.Unmarshal(again, &a); err != nil {
		t.Fatal(err)
	}
	if a["source"] != "env" || a["path"] != strict {
		t.Errorf("--show --json with $TOOLSRV_THRESHOLDS: source %v, path %v", a["source"], a["path"])
	}
	if out := rank(save("again.json", again)); !strings.Contains(out, "no tool fits") {
		t.Errorf("the file shown from $TOOLSRV_THRESHOLDS was not taken as it is:\n%s", out)
	}
}
