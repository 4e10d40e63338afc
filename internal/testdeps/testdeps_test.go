package testdeps

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want map[string]bool
	}{
		{"", map[string]bool{NPM: false, SSHD: false, Diod: false}},
		{"npm", map[string]bool{NPM: true, SSHD: false, Diod: false}},
		{"npm,sshd,diod", map[string]bool{NPM: true, SSHD: true, Diod: true}},
		{"npm,sshd,diod,postgres", map[string]bool{NPM: true, SSHD: true, Diod: true, Postgres: true}},
		{"sshd diod", map[string]bool{NPM: false, SSHD: true, Diod: true}},
		{" diod, ", map[string]bool{NPM: false, SSHD: false, Diod: true}},
		{"all", map[string]bool{NPM: true, SSHD: true, Diod: true, Postgres: true, Conformance: true}},
		{"npm,conformance", map[string]bool{NPM: true, Conformance: true, SSHD: false}},
		{"npmx,sshd2,postgresql", map[string]bool{NPM: false, SSHD: false, Diod: false, Postgres: false}},
	} {
		t.Setenv(RequireEnv, tc.env)
		for dep, want := range tc.want {
			if got := Required(dep); got != want {
				t.Errorf("%s=%q: Required(%q) = %v, want %v", RequireEnv, tc.env, dep, got, want)
			}
		}
	}
}

// recorder is a testing.TB that records how Missing ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	if r.skipped == "" {
		r.skipped = fmt.Sprintf(format, args...)
	}
}

func (r *recorder) Fatalf(format string, args ...any) {
	if r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

// A missing dependency skips the test with how to install it, unless
// TOOLSRV_TEST_REQUIRE names it: then it fails the test.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantFail bool
	}{
		{"", false},
		{"npm,sshd", false},
		{"npm,diod", true},
		{"all", true},
	} {
		t.Setenv(RequireEnv, tc.env)
		r := &recorder{TB: t}
		Missing(r, Diod, "diodls (diod) is not installed", Install(Diod))
		msg := r.skipped
		if tc.wantFail {
			msg = r.failed
		}
		if msg == "" || (r.skipped != "" && r.failed != "") {
			t.Errorf("%s=%q: skipped %q, failed %q; want it to fail: %v", RequireEnv, tc.env, r.skipped, r.failed, tc.wantFail)
			continue
		}
		for _, want := range []string{"diodls (diod) is not installed", "apt-get install -y diod", RequireEnv} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s=%q: %q lacks %q", RequireEnv, tc.env, msg, want)
			}
		}
	}
}

// A program that is there is found; one that is not is missing.
func TestProgram(t *testing.T) {
	t.Setenv(RequireEnv, "")
	if p := Program(&recorder{TB: t}, SSHD, "sh"); !strings.HasSuffix(p, "/sh") {
		t.Errorf("Program(sh) = %q", p)
	}
	r := &recorder{TB: t}
	if p := Program(r, SSHD, "no-such-program-here"); p != "" || !strings.Contains(r.skipped, "no-such-program-here (sshd) is not installed") {
		t.Errorf("Program(no-such-program-here) = %q, skipped %q", p, r.skipped)
	}
	r = &recorder{TB: t}
	if d := NPMDir(r, t.TempDir(), "mcp-server-memory"); d == "" || !strings.Contains(r.skipped, "mcp-server-memory is not installed") {
		t.Errorf("NPMDir of an empty directory: %q, skipped %q", d, r.skipped)
	}
	r = &recorder{TB: t}
	if node, _ := ConformanceDir(r, t.TempDir()); node == "" || !strings.Contains(r.skipped, "conformance suite is not installed") ||
		!strings.Contains(r.skipped, "make conformance-deps") {
		t.Errorf("ConformanceDir of an empty directory: %q, skipped %q", node, r.skipped)
	}
}

// CI never skips: .ci/run requires every dependency, in both its runs
// (root's, and the ordinary user's, whose environment su sets anew).
func TestCIRequiresEverything(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	run := string(b)
	m := regexp.MustCompile(`(?m)^export ` + RequireEnv + `=(\S+)$`).FindStringSubmatch(run)
	if m == nil {
		t.Fatalf(".ci/run does not export %s", RequireEnv)
	}
	t.Setenv(RequireEnv, m[1])
	for _, dep := range []string{NPM, SSHD, Diod} {
		if !Required(dep) {
			t.Errorf(".ci/run's %s=%s does not require %s", RequireEnv, m[1], dep)
		}
	}
	if !strings.Contains(run, RequireEnv+"='$"+RequireEnv+"' make test") {
		t.Errorf(".ci/run does not pass %s to the ordinary user's make test", RequireEnv)
	}
}

// StartPostgres runs a server of the test's own, reached by its socket
// alone, that keeps its data across Stop and Start.
func TestStartPostgres(t *testing.T) {
	pg := StartPostgres(t)
	pg.SQL(t, `CREATE TABLE kept (v text)`, `INSERT INTO kept VALUES ('here')`)
	if got := pg.SQL(t, `SHOW listen_addresses`); strings.TrimSpace(got) != "" {
		t.Errorf("listen_addresses %q: the server listens on TCP", got)
	}
	pg.Stop(t)
	pg.Start(t)
	if got := strings.TrimSpace(pg.SQL(t, `SELECT v FROM kept`)); got != "here" {
		t.Errorf("after a restart: %q", got)
	}
	if u := pg.URL("postgres", PostgresPassword, "postgres"); !strings.Contains(u, "host=%2F") {
		t.Errorf("URL %s does not name the socket directory", u)
	}
}
