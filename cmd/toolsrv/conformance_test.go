package main

// The official MCP conformance suite (npm @modelcontextprotocol/conformance,
// pinned with the Node.js it runs on in mcp/testdata/conformance: make
// conformance-deps), run against toolsrv as a server
// (conformance_server_test.go) and as a client. What they share: finding
// the suite, running it, reading its results, and the files of expected
// failures (testdata/conformance/*.yml), each with its reason.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/internal/testdeps"
)

// conformanceSuite is the suite, ready to run.
type conformanceSuite struct {
	node, script string
}

// findConformance finds the suite and its Node.js (missing: the test
// skips, or fails where TOOLSRV_TEST_REQUIRE names "conformance").
func findConformance(t *testing.T) conformanceSuite {
	t.Helper()
	node, script := testdeps.ConformanceDir(t, "../../mcp/testdata/conformance")
	return conformanceSuite{node: node, script: script}
}

// conformanceCheck is one check of a scenario's results (checks.json).
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	ErrorMessage string `json:"errorMessage"`
}

// conformanceRun is what a run of the suite gave.
type conformanceRun struct {
	code   int
	output string
	// scenarios are the checks of each scenario run, by its name.
	scenarios map[string][]conformanceCheck
}

// failing are a scenario's failing checks: as the suite counts them
// against a list of expected failures, each FAILURE and WARNING.
func (r conformanceRun) failing(scenario string) []conformanceCheck {
	var out []conformanceCheck
	for _, c := range r.scenarios[scenario] {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			out = append(out, c)
		}
	}
	return out
}

// run runs the suite: leg is "server" or "client", args the rest of its
// command line (not --output-dir, which run gives). The suite's own exit
// status and output are kept; its results are read from its output
// directory.
func (s conformanceSuite) run(t *testing.T, ctx context.Context, leg string, args ...string) conformanceRun {
	t.Helper()
	out := t.TempDir()
	cmd := osexec.CommandContext(ctx, s.node, append([]string{s.script, leg, "--output-dir", out}, args...)...)
	cmd.Dir = t.TempDir()
	// The suite's own Node.js first on PATH; a HOME of its own.
	cmd.Env = []string{"PATH=" + filepath.Dir(s.node) + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8", "NO_COLOR=1"}
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	r := conformanceRun{output: b.String(), scenarios: map[string][]conformanceCheck{}}
	if err != nil {
		ee, ok := err.(*osexec.ExitError)
		if !ok {
			t.Fatalf("running the conformance suite: %v\n%s", err, b.String())
		}
		r.code = ee.ExitCode()
	}
	// Each scenario's results: OUT/LEG-SCENARIO-TIMESTAMP/checks.json.
	stamp := regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	for _, f := range files {
		name := strings.TrimPrefix(stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), ""), leg+"-")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r.scenarios[name] = append(r.scenarios[name], checks...)
	}
	if len(r.scenarios) == 0 {
		t.Fatalf("the conformance suite ran no scenario (exit status %d):\n%s", r.code, r.output)
	}
	return r
}

// expectedFailures reads a file of expected failures in the suite's format
// (a list under "server:" or "client:" of scenario names, or
// SCENARIO:CHECK for one check of a scenario), as this repository writes
// it: one "- ENTRY  # REASON" a line, each with its reason. Entries map
// to their reasons.
func expectedFailures(t *testing.T, file, leg string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(trimmed, ":"):
			in = trimmed == leg+":"
		case in && strings.HasPrefix(trimmed, "- "):
			entry, reason, _ := strings.Cut(strings.TrimPrefix(trimmed, "- "), "#")
			entry, reason = strings.TrimSpace(entry), strings.TrimSpace(reason)
			if reason == "" {
				t.Errorf("%s:%d: %s has no reason (- ENTRY  # REASON)", file, n, entry)
			}
			out[entry] = reason
		default:
			t.Errorf("%s:%d: not an entry of a list of expected failures: %q", file, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkExpected fails the test for every failing check that is not
// expected to fail (its scenario, or SCENARIO:CHECK, listed), and for
// every expected failure that passed (the list is stale: remove the
// entry), as the suite judges a run against such a list; and when the
// suite's own verdict (its exit status) is a failure.
func (r conformanceRun) checkExpected(t *testing.T, expected map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(r.scenarios)) {
		failing := r.failing(name)
		if reason, ok := expected[name]; ok {
			if len(failing) == 0 {
				t.Errorf("scenario %s passed, but is listed as an expected failure (%s): remove it from the list", name, reason)
			}
			continue
		}
		for _, c := range failing {
			if _, ok := expected[name+":"+c.ID]; !ok {
				t.Errorf("scenario %s: check %s failed, and is not an expected failure: %s %s", name, c.ID, c.Status, c.ErrorMessage)
			}
		}
		for _, c := range r.scenarios[name] {
			if reason, ok := expected[name+":"+c.ID]; ok && c.Status == "SUCCESS" {
				t.Errorf("scenario %s: check %s passed, but is listed as an expected failure (%s): remove it from the list", name, c.ID, reason)
			}
		}
	}
	if r.code != 0 {
		t.Errorf("the conformance suite exited %d:\n%s", r.code, tail(r.output, 60))
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
