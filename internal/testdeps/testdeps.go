// Package testdeps is the one rule for tests that need something Go does
// not bring: the npm MCP servers (make npm-deps), the MCP conformance
// suite (make conformance-deps), OpenSSH (an sshd to log in to), Debian's
// diod 9P client and a PostgreSQL server (StartPostgres). Where it is
// missing, such a test skips and says how to install it, so that "go test
// ./..." passes on a fresh clone; where the environment variable
// TOOLSRV_TEST_REQUIRE names it, a missing dependency fails the test
// instead. CI sets TOOLSRV_TEST_REQUIRE=npm,conformance,sshd,diod,postgres
// (.ci/run), so it never skips them.
//
// Long is the rule for long tests: go test -short skips them.
package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireEnv is the environment variable listing the dependencies that
// must be there: names separated by commas or spaces, or "all".
const RequireEnv = "TOOLSRV_TEST_REQUIRE"

// The dependencies, by the names RequireEnv takes.
const (
	// NPM: the npm MCP servers and the MCP Inspector in mcp/testdata/npm
	// (make npm-deps), and Node.js to run them.
	NPM = "npm"
	// Conformance: the official MCP conformance suite and the Node.js it
	// runs on, in mcp/testdata/conformance (make conformance-deps).
	Conformance = "conformance"
	// SSHD: OpenSSH's sshd, ssh and ssh-keygen.
	SSHD = "sshd"
	// Diod: Debian diod's 9P clients, diodls and diodcat.
	Diod = "diod"
)

// NPMDirEnv, when set, is where the npm packages are installed instead of
// mcp/testdata/npm.
const NPMDirEnv = "TOOLSRV_TEST_NPM_DIR"

// Required reports whether RequireEnv names dep (or says "all").
func Required(dep string) bool {
	for _, f := range strings.FieldsFunc(os.Getenv(RequireEnv), func(r rune) bool { return r == ',' || r == ' ' }) {
		if f == dep || f == "all" {
			return true
		}
	}
	return false
}

// Missing ends the test because dep is missing: problem says what is
// missing, install how to get it. It skips, unless RequireEnv names dep:
// then the test fails.
func Missing(t testing.TB, dep, problem, install string) {
	t.Helper()
	if Required(dep) {
		t.Fatalf("%s; install it: %s (%s=%s requires it)", problem, install, RequireEnv, os.Getenv(RequireEnv))
		return
	}
	t.Skipf("%s; install it to run this test: %s (with %s=%s a missing %s fails the test)", problem, install, RequireEnv, dep, dep)
}

// Install says how to install dep.
func Install(dep string) string {
	switch dep {
	case NPM:
		return "apt-get install -y nodejs npm, then make npm-deps"
	case Conformance:
		return "apt-get install -y npm, then make conformance-deps"
	case SSHD:
		return "apt-get install -y openssh-server openssh-client"
	case Diod:
		return "apt-get install -y diod"
	case Postgres:
		return "apt-get install -y postgresql"
	}
	return "see docs/development.md"
}

// Program finds the program name of dep: on $PATH, or in the sbin and bin
// directories that are not on an ordinary user's $PATH. Missing if it is
// not there.
func Program(t testing.TB, dep, name string) string {
	t.Helper()
	if p, ok := lookProgram(name); ok {
		return p
	}
	what := name
	if name != dep {
		what = fmt.Sprintf("%s (%s)", name, dep)
	}
	Missing(t, dep, what+" is not installed", Install(dep))
	return ""
}

func lookProgram(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// NPMDir is the directory holding the npm packages' node_modules, with
// each of bins in node_modules/.bin: $TOOLSRV_TEST_NPM_DIR, else def
// (mcp/testdata/npm, relative to the test's package). Missing if one is
// not there, or Node.js is not on $PATH to run it.
func NPMDir(t testing.TB, def string, bins ...string) string {
	t.Helper()
	dir := os.Getenv(NPMDirEnv)
	if dir == "" {
		dir = def
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(abs, "node_modules", ".bin", bin)); err != nil {
			Missing(t, NPM, fmt.Sprintf("%s is not installed in %s (or set %s)", bin, abs, NPMDirEnv), Install(NPM))
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		Missing(t, NPM, "node (Node.js) is not on $PATH to run the npm MCP servers", Install(NPM))
	}
	return abs
}

// ConformanceDir is the directory holding the conformance suite's
// node_modules (mcp/testdata/conformance, relative to the test's package:
// def), with the Node.js the suite runs on (node_modules/.bin/node, pinned
// beside it) and the suite's script: the paths of both. Missing if either
// is not there.
func ConformanceDir(t testing.TB, def string) (node, suite string) {
	t.Helper()
	abs, err := filepath.Abs(def)
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(abs, "node_modules", ".bin", "node")
	suite = filepath.Join(abs, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			Missing(t, Conformance, fmt.Sprintf("the MCP conformance suite is not installed in %s (%s is missing)", abs, filepath.Base(p)), Install(Conformance))
		}
	}
	return node, suite
}

// Long skips a long test under go test -short (what says what makes it
// long: a fork bomb, a memory hog, timeouts, real ssh logins): the quick
// suite skips it, the full one (make test, CI) runs it.
func Long(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("long (%s): skipped under -short; go test without -short (make test, CI) runs it", what)
	}
}
