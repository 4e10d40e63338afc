package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/registry"
)

// The starter catalog and agent profiles shipped in examples/, relative to
// this package's directory (where go test runs).
const (
	exampleToolsDir  = "../../examples/tools"
	exampleAgentsDir = "../../examples/agents"
)

// exampleCase is one call of one example tool through the real
// "toolsrv call" under the real sandbox, and what it must have done.
type exampleCase struct {
	tool string
	name string // what this case shows
	// setup prepares the working directory before the call (may be nil).
	setup func(t *testing.T, dir string)
	// args is the call's JSON; {{URL}} becomes the loopback test server's URL.
	args string
	// fail: the call must fail (non-zero exit of toolsrv call).
	fail bool
	// want are substrings of standard output (of standard error when fail).
	want []string
	// check inspects the working directory and output afterwards (may be nil).
	check func(t *testing.T, dir, out string)
	// sub, when set, is the subdirectory of the prepared directory the call
	// runs in.
	sub string
}

func exampleCases() []exampleCase {
	return []exampleCase{
		// Files.
		{tool: "file_read", name: "numbered lines", setup: files("notes.txt", "alpha\nbeta\ngamma\n"),
			args: `{"path":"notes.txt"}`, want: []string{"     1\talpha", "     2\tbeta", "     3\tgamma"}},
		{tool: "file_read", name: "offset and limit", setup: files("notes.txt", "alpha\nbeta\ngamma\ndelta\n"),
			args: `{"path":"notes.txt","offset":2,"limit":2}`, want: []string{"     2\tbeta", "     3\tgamma", "pass offset=4"},
			check: notContains("alpha", "delta")},
		{tool: "file_read", name: "missing file fails", args: `{"path":"nope.txt"}`, fail: true, want: []string{"nope.txt does not exist"}},
		{tool: "file_write", name: "creates file and parents", args: `{"path":"sub/dir/new.txt","content":"hello\nworld\n"}`,
			want: []string{"created sub/dir/new.txt"}, check: fileIs("sub/dir/new.txt", "hello\nworld\n")},
		{tool: "file_write", name: "append", setup: files("log.txt", "one\n"), args: `{"path":"log.txt","content":"two\n","append":true}`,
			check: fileIs("log.txt", "one\ntwo\n")},
		{tool: "file_write", name: "outside the working directory is denied", args: `{"path":"../escaped.txt","content":"x"}`,
			fail: true, want: []string{"permission denied"}, check: func(t *testing.T, dir, _ string) {
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped.txt")); err == nil {
					t.Error("file_write created a file outside its working directory")
				}
			}},
		{tool: "file_edit", name: "exact replace", setup: files("main.go", "package main\n\nfunc f() int { return 1 }\n"),
			args: `{"path":"main.go","old_string":"return 1","new_string":"return 42"}`,
			want: []string{"replaced 1 occurrence", "return 42"}, check: fileIs("main.go", "package main\n\nfunc f() int { return 42 }\n")},
		{tool: "file_edit", name: "ambiguous match refused", setup: files("x.txt", "a\nb\na\n"),
			args: `{"path":"x.txt","old_string":"a","new_string":"c"}`, fail: true, want: []string{"occurs 2 times", "lines 1, 3"},
			check: fileIs("x.txt", "a\nb\na\n")},
		{tool: "file_edit", name: "replace_all", setup: files("x.txt", "a\nb\na\n"),
			args: `{"path":"x.txt","old_string":"a","new_string":"c","replace_all":true}`, check: fileIs("x.txt", "c\nb\nc\n")},
		{tool: "file_glob", name: "newest first, pattern only", setup: aged(map[string]time.Duration{
			"old.go": 3 * time.Hour, "pkg/mid.go": 2 * time.Hour, "pkg/deep/new.go": time.Hour, "readme.txt": 0}),
			args: `{"pattern":"**/*.go"}`, check: func(t *testing.T, _, out string) {
				want := "pkg/deep/new.go\npkg/mid.go\nold.go\n"
				if out != want {
					t.Errorf("file_glob output %q, want %q", out, want)
				}
			}},
		{tool: "file_grep", name: "finds the line", setup: files("a.txt", "nothing\n", "src/b.go", "package b\n// needle here\n"),
			args: `{"pattern":"need+le"}`, want: []string{"src/b.go:2:// needle here"}, check: notContains("a.txt")},
		{tool: "file_grep", name: "glob and ignore_case", setup: files("a.txt", "NEEDLE\n", "b.go", "Needle\n"),
			args: `{"pattern":"needle","ignore_case":true,"glob":"*.go"}`, want: []string{"b.go:1:Needle"}, check: notContains("a.txt")},
		{tool: "file_grep", name: "no match is an answer", setup: files("a.txt", "x\n"), args: `{"pattern":"absent"}`, want: []string{"no matches"}},
		{tool: "file_list", name: "tree with sizes", setup: files("a.txt", "12345", "sub/b.txt", "x"),
			args: `{}`, want: []string{"sub/", "a.txt (5B)", "b.txt (1B)"}},
		{tool: "file_stat", name: "size and type", setup: files("a.txt", "123456\n"),
			args: `{"path":"a.txt"}`, want: []string{"type: regular file", "size: 7 bytes", "content: ASCII text"}},
		{tool: "file_move", name: "rename into new directory", setup: files("a.txt", "data"),
			args: `{"source":"a.txt","destination":"moved/b.txt"}`, check: func(t *testing.T, dir, _ string) {
				fileIs("moved/b.txt", "data")(t, dir, "")
				absent("a.txt")(t, dir, "")
			}},
		{tool: "file_move", name: "no overwrite", setup: files("a.txt", "new", "b.txt", "old"),
			args: `{"source":"a.txt","destination":"b.txt"}`, fail: true, want: []string{"already exists"}, check: fileIs("b.txt", "old")},
		{tool: "file_copy", name: "copies a tree", setup: files("src/a.txt", "A", "src/in/b.txt", "B"),
			args: `{"source":"src","destination":"dst"}`, check: func(t *testing.T, dir, _ string) {
				fileIs("dst/in/b.txt", "B")(t, dir, "")
				fileIs("src/a.txt", "A")(t, dir, "")
			}},
		{tool: "file_delete", name: "recursive", setup: files("gone/a.txt", "x", "gone/b/c.txt", "y", "kept.txt", "z"),
			args: `{"path":"gone","recursive":true}`, check: func(t *testing.T, dir, _ string) {
				absent("gone")(t, dir, "")
				fileIs("kept.txt", "z")(t, dir, "")
			}},
		{tool: "file_delete", name: "refuses the working directory", args: `{"path":".","recursive":true}`, fail: true,
			want: []string{"refusing"}},
		{tool: "dir_make", name: "with parents", args: `{"path":"a/b/c"}`, check: func(t *testing.T, dir, _ string) {
			if fi, err := os.Stat(filepath.Join(dir, "a/b/c")); err != nil || !fi.IsDir() {
				t.Errorf("a/b/c is not a directory: %v", err)
			}
		}},
		{tool: "file_diff", name: "unified diff", setup: files("old.txt", "same\nold line\n", "new.txt", "same\nnew line\n"),
			args: `{"a":"old.txt","b":"new.txt"}`, want: []string{"--- old.txt", "+++ new.txt", "-old line", "+new line", " same"}},
		{tool: "file_diff", name: "identical", setup: files("a.txt", "x\n", "b.txt", "x\n"),
			args: `{"a":"a.txt","b":"b.txt"}`, want: []string{"files are identical"}},
		{tool: "file_patch", name: "applies a git-style diff", setup: files("hello.txt", "one\ntwo\nthree\n"),
			args: mustJSON(map[string]any{"patch": "--- a/hello.txt\n+++ b/hello.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"}),
			want: []string{"patching file hello.txt"}, check: fileIs("hello.txt", "one\nTWO\nthree\n")},
		{tool: "text_replace", name: "regex across files", setup: files("a.go", "oldName()\n", "sub/b.go", "x := oldName\n", "c.txt", "oldName\n"),
			args: `{"pattern":"old(Name)","replacement":"new\\1","glob":"*.go"}`, want: []string{"replaced 2 matches in 2 files"},
			check: func(t *testing.T, dir, _ string) {
				fileIs("a.go", "newName()\n")(t, dir, "")
				fileIs("sub/b.go", "x := newName\n")(t, dir, "")
				fileIs("c.txt", "oldName\n")(t, dir, "")
			}},
		{tool: "text_replace", name: "dry run writes nothing", setup: files("a.go", "foo\n"),
			args: `{"pattern":"foo","replacement":"bar","dry_run":true}`, want: []string{"would replace 1 match"}, check: fileIs("a.go", "foo\n")},
		{tool: "word_count", name: "file", setup: files("a.txt", "one two\nthree\n"),
			args: `{"path":"a.txt"}`, want: []string{"lines: 2", "words: 3", "bytes: 14"}},
		{tool: "word_count", name: "text", args: `{"text":"a b c d"}`, want: []string{"lines: 0", "words: 4", "bytes: 7"}},
		{tool: "file_hash", name: "sha256", setup: files("a.bin", "checksum me"),
			args: `{"path":"a.bin"}`, want: []string{sha256Hex("checksum me") + "  a.bin"}},
		{tool: "file_hash", name: "md5", setup: files("a.bin", "checksum me"),
			args: `{"path":"a.bin","algorithm":"md5"}`, want: []string{"  a.bin"}, check: notContains(sha256Hex("checksum me"))},

		{tool: "code_stats", name: "structured content output", setup: files("a.go", "package a\n\n// doc\nfunc A() {}\n", "b/b.go", "package b\n", "s.py", "# c\nx = 1\n"),
			args: `{}`, check: func(t *testing.T, _, out string) {
				var res struct {
					Content []struct{ Type, Text string } `json:"content"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
					t.Fatalf("want {\"content\":[{\"type\":\"text\",...}]}, got %q (%v)", out, err)
				}
				for _, row := range [][]string{{"Go", "2", "3", "1", "1"}, {"Python", "1", "1", "1", "0"}, {"total", "3", "4", "2", "1"}} {
					if !containsFields(res.Content[0].Text, row) {
						t.Errorf("no row %v in:\n%s", row, res.Content[0].Text)
					}
				}
			}},

		// Archives.
		{tool: "archive_list", name: "tar.gz", setup: tarGz("pack.tgz", map[string]string{"pkg/a.txt": "aaa", "pkg/b.txt": "bb"}),
			args: `{"path":"pack.tgz"}`, want: []string{"tar archive, 2 entries, 5 bytes", "pkg/a.txt", "pkg/b.txt"}},
		{tool: "archive_extract", name: "tar.gz into a directory", setup: tarGz("pack.tgz", map[string]string{"pkg/a.txt": "aaa"}),
			args: `{"path":"pack.tgz","destination":"out"}`, check: fileIs("out/pkg/a.txt", "aaa")},
		{tool: "archive_extract", name: "refuses path traversal", setup: tarGz("evil.tgz", map[string]string{"../evil.txt": "x"}),
			args: `{"path":"evil.tgz"}`, fail: true, want: []string{"outside"}, check: func(t *testing.T, dir, _ string) {
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "evil.txt")); err == nil {
					t.Error("archive_extract wrote outside its destination")
				}
			}},
		{tool: "archive_create", name: "zip of a tree", setup: files("src/a.txt", "A", "src/b/c.txt", "C"),
			args: `{"path":"out.zip","inputs":["src"]}`, want: []string{"created out.zip"}, check: func(t *testing.T, dir, _ string) {
				z, err := zip.OpenReader(filepath.Join(dir, "out.zip"))
				if err != nil {
					t.Fatalf("out.zip: %v", err)
				}
				defer z.Close()
				var names []string
				for _, f := range z.File {
					names = append(names, f.Name)
				}
				got := strings.Join(names, " ")
				for _, n := range []string{"src/a.txt", "src/b/c.txt"} {
					if !strings.Contains(got, n) {
						t.Errorf("out.zip holds %q, missing %s", got, n)
					}
				}
			}},

		// Programs.
		{tool: "shell", name: "runs in the working directory", args: `{"command":"echo made > made.txt; pwd; echo to-stderr >&2"}`,
			want: []string{"to-stderr"}, check: func(t *testing.T, dir, out string) {
				fileIs("made.txt", "made\n")(t, dir, "")
				if !strings.Contains(out, dir) {
					t.Errorf("pwd printed %q, want the working directory %s", out, dir)
				}
			}},
		{tool: "shell", name: "non-zero exit fails with output", args: `{"command":"echo partial; exit 3"}`, fail: true,
			want: []string{"partial", "[exit status 3]"}},
		{tool: "shell", name: "no network without network: true", args: `{"command":"exec 3<>/dev/tcp/{{HOSTPORT}} && echo connected"}`,
			fail: true, check: notContains("connected")},
		{tool: "python_run", name: "prints and writes", args: `{"code":"import sys\nopen('py.txt','w').write('from python')\nprint(sum(range(10)), sys.argv[1:])","args":["x"]}`,
			want: []string{"45 ['x']"}, check: fileIs("py.txt", "from python")},
		{tool: "python_run", name: "exception fails", args: `{"code":"raise ValueError('bad input')"}`, fail: true,
			want: []string{"ValueError: bad input"}},
		{tool: "calc", name: "arithmetic and math", args: `{"expression":"2^10 + sqrt(16) * 2"}`, check: outputIs("1032\n")},
		{tool: "calc", name: "no arbitrary code", args: `{"expression":"__import__('os').system('true')"}`, fail: true,
			want: []string{"unsupported"}},
		{tool: "datetime", name: "epoch in a time zone", args: `{"time":"1700000000","timezone":"Asia/Tokyo"}`,
			want: []string{"UTC:   2023-11-14 22:13:20 UTC", "Asia/Tokyo: 2023-11-15 07:13:20 JST", "unix:  1700000000"}},
		{tool: "datetime", name: "format", args: `{"time":"0","format":"%Y-%m-%d %A"}`, check: outputIs("1970-01-01 Thursday\n")},
		{tool: "base64", name: "encode", args: `{"text":"hello?>"}`, check: outputIs("aGVsbG8/Pg==")},
		{tool: "base64", name: "decode url-safe without padding", args: `{"text":"aGVsbG8_Pg","decode":true,"url_safe":true}`,
			check: outputIs("hello?>")},
		{tool: "url_encode", name: "encode", args: `{"text":"a b&c/d"}`, check: outputIs("a%20b%26c%2Fd")},
		{tool: "url_encode", name: "parse", args: `{"text":"https://example.org:8080/p?q=1&r=a+b#frag","mode":"parse"}`,
			want: []string{"host: example.org", "port: 8080", "path: /p", "query: q = 1", "query: r = a b", "fragment: frag"}},
		{tool: "json_value", name: "from a file", setup: files("package.json", `{"name":"demo","version":"1.2.3","deps":{"b":1,"a":2}}`),
			args: `{"file":"package.json","filter":".version"}`, check: outputIs("1.2.3\n")},
		{tool: "json_value", name: "inline JSON", args: `{"json":{"items":[{"id":7},{"id":9}]},"filter":"[.items[].id] | add"}`,
			check: outputIs("16\n")},
		{tool: "json_value", name: "JSON in a string", args: `{"json":"{\"a\":{\"b\":\"deep\"}}","filter":".a.b"}`, check: outputIs("deep\n")},

		// System.
		{tool: "system_info", name: "describes this host", args: `{}`,
			want: []string{"os: ", "cpus: " + strconv.Itoa(runtime.NumCPU()), "memory: ", "working directory: "}},
		{tool: "process_list", name: "sees this test process", args: fmt.Sprintf(`{"filter":"%s","limit":500}`, filepath.Base(os.Args[0])),
			want: []string{"PID", "COMMAND"}, check: func(t *testing.T, _, out string) {
				pid := strconv.Itoa(os.Getpid())
				for _, l := range strings.Split(out, "\n") {
					if f := strings.Fields(l); len(f) > 0 && f[0] == pid {
						return
					}
				}
				t.Errorf("process_list does not list this test (pid %s):\n%s", pid, out)
			}},

		// Network: loopback only, to a server the test runs.
		{tool: "http_fetch", name: "GET from loopback", args: `{"url":"{{URL}}/hello"}`,
			want: []string{"HTTP 200", "Content-Type: text/plain", "hello from the loopback server"}},
		{tool: "http_fetch", name: "POST body and headers", args: `{"url":"{{URL}}/echo","method":"POST","body":"{\"k\":1}","headers":{"X-Test":"yes"}}`,
			want: []string{"HTTP 200", `method=POST x-test=yes ctype=application/json body={"k":1}`}},
		{tool: "http_fetch", name: "error status is an answer", args: `{"url":"{{URL}}/missing"}`, want: []string{"HTTP 404"}},

		// Git, in a repository the test makes.
		{tool: "git_status", name: "modified and untracked", setup: gitRepo, args: `{}`, want: []string{"## main", " M tracked.txt", "?? untracked.txt"}},
		{tool: "git_diff", name: "unstaged change", setup: gitRepo, args: `{}`,
			want: []string{"diff --git a/tracked.txt b/tracked.txt", "-first line", "+changed line"}},
		{tool: "git_diff", name: "stat against HEAD~1", setup: gitRepo, args: `{"ref":"HEAD~1","stat":true}`,
			want: []string{"second.txt", "tracked.txt", "files changed"}},
		{tool: "git_log", name: "shows the commits", setup: gitRepo, args: `{}`,
			want: []string{"Test Author: add second file", "Test Author: initial commit"}},
		{tool: "git_log", name: "history of one path", setup: gitRepo, args: `{"path":"second.txt","format":"full"}`,
			want: []string{"add second file", "Author: Test Author <test@example.org>"}, check: notContains("initial commit")},
		{tool: "git_show", name: "file at an older commit", setup: gitRepo, args: `{"ref":"HEAD~1","path":"tracked.txt"}`,
			check: outputIs("first line\n")},
		{tool: "git_commit", name: "commits the given paths", setup: gitRepo,
			args: `{"message":"agent change\n\nbody text","paths":["tracked.txt"]}`, want: []string{"committed", "tracked.txt"},
			check: func(t *testing.T, dir, _ string) {
				if got := gitOut(t, dir, "log", "-1", "--format=%s|%ae"); got != "agent change|agent@toolsrv.invalid" {
					t.Errorf("last commit is %q", got)
				}
				if got := gitOut(t, dir, "status", "--porcelain"); got != "?? untracked.txt" {
					t.Errorf("after commit, status is %q; want only the untracked file left", got)
				}
			}},
		{tool: "git_status", name: "outside a repository fails", args: `{}`, fail: true, want: []string{"not inside a git work tree"}},
		// In a subdirectory of the repository: the sandbox lets tools read
		// the enclosing repository.
		{tool: "git_status", name: "in a subdirectory of the repository", setup: gitRepo, sub: "pkg/sub", args: `{}`,
			want: []string{"## main", " M ../../tracked.txt"}},
		{tool: "git_log", name: "in a subdirectory of the repository", setup: gitRepo, sub: "pkg", args: `{}`,
			want: []string{"Test Author: add second file"}},
		{tool: "git_diff", name: "in a subdirectory of the repository", setup: gitRepo, sub: "pkg", args: `{}`,
			want: []string{"-first line", "+changed line"}},
		// The sandbox reads /sys (lscpu, for one, needs it).
		{tool: "shell", name: "lscpu reads /sys", args: `{"command":"lscpu | head -3; cat /sys/devices/system/cpu/online"}`,
			want: []string{"Architecture:"}},
		// A denial says it was the sandbox, and what to change.
		{tool: "file_read", name: "a file outside the sandbox", args: `{"path":"/etc/shadow"}`, fail: true,
			want: []string{"denied by the sandbox: /etc/shadow is outside what this tool may read", "--read /etc/shadow"}},

		// Agent plumbing: without a 9P session tool_load explains itself.
		{tool: "tool_load", name: "needs an agent session", args: `{"name":"git_log"}`, fail: true,
			want: []string{"OLLIE_SESSION_ID and OLLIE_UNAME are not set"}},
	}
}

// TestExampleTools calls every tool of examples/tools through the real
// "toolsrv call" (a freshly built binary, so the sandbox helper is real)
// with Landlock applied, in a fresh working directory per case.
func TestExampleTools(t *testing.T) {
	requireTools(t, "jq", "git", "python3", "patch", "diff", "file", "ps", "grep", "tar")
	bin := buildToolsrv(t)
	tools, err := filepath.Abs(exampleToolsDir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(loopbackHandler))
	t.Cleanup(srv.Close) // after the parallel subtests, unlike defer
	hostport := strings.TrimPrefix(srv.URL, "http://")
	// Landlock must really be in force: a call that tries to read this
	// package's source (outside its working directory and the system)
	// must be refused, else the cases below prove nothing about the sandbox.
	self, _ := filepath.Abs("examples_test.go")
	if r := callTool(t, bin, tools, t.TempDir(), "file_read", mustJSON(map[string]any{"path": self})); r.code == 0 {
		t.Fatalf("file_read read %s outside its sandbox: Landlock is not applied:\n%s", self, r.stdout)
	}

	// Under -short, only each tool's first case runs (every tool still
	// runs once): the rest are about 20 s more on 2 cores.
	covered := map[string]bool{}
	cases, left := exampleCases(), 0
	for _, c := range cases {
		if testing.Short() && covered[c.tool] {
			left++
			continue
		}
		covered[c.tool] = true
		t.Run(c.tool+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(t, dir)
			}
			args := strings.NewReplacer("{{URL}}", srv.URL, "{{HOSTPORT}}", strings.Replace(hostport, ":", "/", 1)).Replace(c.args)
			cwd := dir
			if c.sub != "" {
				cwd = filepath.Join(dir, c.sub)
				if err := os.MkdirAll(cwd, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r := callTool(t, bin, tools, cwd, c.tool, args)
			out := r.stdout
			if c.fail {
				if r.code == 0 {
					t.Fatalf("call succeeded, want a failure; stdout:\n%s", r.stdout)
				}
				out = r.stderr
			} else if r.code != 0 {
				t.Fatalf("call failed (exit %d):\n%s", r.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if c.check != nil {
				c.check(t, dir, r.stdout)
			}
			if t.Failed() && !c.fail && r.stderr != "" {
				t.Logf("standard error of the call:\n%s", r.stderr)
			}
		})
	}
	t.Run("system_logs/variant for this host", func(t *testing.T) {
		t.Parallel()
		testSystemLogs(t, bin, tools)
	})
	t.Run("tool_load/over 9P from a sandboxed call", func(t *testing.T) {
		t.Parallel()
		testToolLoadOver9P(t, bin, tools)
	})

	// Every tool of the catalog has at least one case above.
	names, err := filepath.Glob(filepath.Join(tools, "*.meta"))
	if err != nil {
		t.Fatal(err)
	}
	covered["system_logs"] = true // tested by its own subtest
	for _, n := range names {
		name := strings.TrimSuffix(filepath.Base(n), ".meta")
		if !covered[name] {
			t.Errorf("example tool %s has no test case in examples_test.go", name)
		}
	}
	if left > 0 {
		t.Logf("-short: %d of the %d cases ran, one per tool; go test without -short runs them all", len(cases)-left, len(cases))
	}
}

// testSystemLogs checks that system_logs resolves to the variant this host
// supports (journald if journalctl is on PATH, else /var/log/syslog, else
// hidden with the reason) and that a call returns log lines or says that
// none match.
func testSystemLogs(t *testing.T, bin, tools string) {
	want := -1
	if _, err := osexec.LookPath("journalctl"); err == nil {
		want = 0
	} else if _, err := os.Stat("/var/log/syslog"); err == nil {
		want = 1
	}
	show := runToolsrv(t, bin, "", "show", "--json", "--tools", tools, "system_logs")
	if want < 0 {
		if show.code == 0 || !strings.Contains(show.stderr, "journalctl") || !strings.Contains(show.stderr, "/var/log/syslog") {
			t.Fatalf("on a host with neither journalctl nor /var/log/syslog, system_logs must be hidden with the reason; show said (exit %d):\n%s%s",
				show.code, show.stdout, show.stderr)
		}
		return
	}
	var shown struct {
		Variant int `json:"variant"`
		Command struct {
			Argv []string `json:"argv"`
		} `json:"command"`
	}
	if err := json.Unmarshal([]byte(show.stdout), &shown); err != nil {
		t.Fatalf("show --json system_logs: %v\n%s%s", err, show.stdout, show.stderr)
	}
	helper := []string{"system_logs_journald", "system_logs_syslog"}[want]
	if shown.Variant != want || len(shown.Command.Argv) == 0 || filepath.Base(shown.Command.Argv[0]) != helper {
		t.Fatalf("system_logs resolved to variant %d %v, want variant %d running %s", shown.Variant, shown.Command.Argv, want, helper)
	}
	args := `{"lines":5}`
	if want == 1 {
		args = `{"lines":"5"}` // the syslog variant's schema, as in the seeds, takes lines as a string
	}
	r := callTool(t, bin, tools, t.TempDir(), "system_logs", args)
	if r.code != 0 {
		t.Fatalf("system_logs (%s) failed:\n%s", helper, r.stderr)
	}
	if lines := strings.Count(strings.TrimSpace(r.stdout), "\n") + 1; r.stdout == "" || lines > 5 && !strings.Contains(r.stdout, "no log entries") {
		t.Errorf("system_logs returned %d lines for lines=5:\n%s", lines, r.stdout)
	}
}

// testToolLoadOver9P runs the whole path of the seeds' tool_load with the
// real "toolsrv serve": an agent whose profile auto-loads tool_load calls it
// through its call/tool_load file; the call runs sandboxed, and the script
// writes "tool_load git_log" to that agent's ctl with "toolsrv 9p" at
// $TOOLSRV_ADDR (set by serve); afterwards the agent's tools file lists
// git_log. A name outside the profile's allowTools is refused, and the
// refusal reaches the caller.
//
// The binary lives in a temporary directory, outside what the sandbox lets
// tools execute: serve passes it as $TOOLSRV_BIN and lets tools run it.
func testToolLoadOver9P(t *testing.T, bin, examples string) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	for _, f := range []string{"tool_load", "tool_load.meta", "git_log", "git_log.meta", "file_read", "file_read.meta", "shell", "shell.meta"} {
		copyFile(t, filepath.Join(examples, f), filepath.Join(tools, f))
	}
	agents := filepath.Join(dir, "agents")
	// Not shell: the refusal case below needs a tool the agent may not load.
	writeFile(t, filepath.Join(agents, "coder.json"), `{"autoLoad":["tool_load"],"allowTools":["tool_load","git_log","file_read"]}`)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "9p.sock")

	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	serve := osexec.Command(bin, "serve", "--tools", tools, "--agents", agents, "--listen", "unix:"+sock)
	serve.Dir = work
	serve.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "LANG=C.UTF-8"}
	var serveLog bytes.Buffer
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(os.Interrupt)
		if err := serve.Wait(); err != nil {
			t.Errorf("toolsrv serve: %v\n%s", err, serveLog.String())
		}
		if t.Failed() {
			t.Logf("toolsrv serve output:\n%s", serveLog.String())
		}
	}()
	var cl *ninep.Client
	for {
		var err error
		if cl, err = ninep.Connect(ctx, "unix:"+sock); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("toolsrv serve never answered on %s: %v", sock, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer cl.Close()
	for _, d := range []string{"session/s1", "session/s1/agent/coder"} {
		if err := cl.Mkdir(d); err != nil {
			t.Fatalf("mkdir %s: %v", d, err)
		}
	}
	loaded := func() string {
		b, err := cl.Read("session/s1/agent/coder/tools")
		if err != nil {
			t.Fatalf("reading the agent's tools: %v", err)
		}
		return string(b)
	}
	if l := loaded(); !strings.Contains(l, "tool_load") || strings.Contains(l, "git_log") {
		t.Fatalf("before the call the agent has %q; want tool_load (autoLoad) and not git_log", l)
	}

	ans, err := cl.Transact("session/s1/agent/coder/call/tool_load", []byte(`{"name":"git_log"}`))
	if err != nil {
		t.Fatalf("call/tool_load: %v", err)
	}
	var res struct {
		ExitCode    int    `json:"exitCode"`
		Output      string `json:"output"`
		Stderr      string `json:"stderr"`
		Unsandboxed bool   `json:"unsandboxed"`
	}
	if err := json.Unmarshal(ans, &res); err != nil {
		t.Fatalf("call answer %q: %v", ans, err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Output, "loaded git_log") || res.Unsandboxed {
		t.Fatalf("tool_load git_log answered %+v", res)
	}
	if l := loaded(); !strings.Contains(l, "git_log") {
		t.Fatalf("after tool_load git_log the agent's tools are %q", l)
	}

	// shell is not in the profile's allowTools: the server refuses the
	// ctl write, and tool_load fails with the server's reason.
	ans, err = cl.Transact("session/s1/agent/coder/call/tool_load", []byte(`{"name":"shell"}`))
	if err != nil {
		t.Fatalf("call/tool_load: %v", err)
	}
	if err := json.Unmarshal(ans, &res); err != nil {
		t.Fatalf("call answer %q: %v", ans, err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "tool_load shell refused") {
		t.Errorf("tool_load shell (not allowed) answered %+v", res)
	}
	if l := loaded(); strings.Contains(l, "shell") {
		t.Errorf("a tool outside allowTools was loaded: %q", l)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// TestExampleToolsValidate: the shipped catalog has no invalid tool, none
// hidden on a Linux host with the test dependencies, and every .meta carries
// what a model and the ranker need.
func TestExampleToolsValidate(t *testing.T) {
	code, out, errOut := runCLI(t, "validate", "--tools", exampleToolsDir)
	if code != 0 || !strings.Contains(out+errOut, " 0 invalid") {
		t.Fatalf("toolsrv validate --tools examples/tools: exit %d\n%s%s", code, out, errOut)
	}
	reg := registry.New(registry.Options{Dirs: []string{exampleToolsDir}})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := reg.Catalog()
	if n := len(cat.Tools); n < 25 {
		t.Errorf("the starter catalog has %d tools; it must have at least 25", n)
	}
	kinds := map[registry.CommandKind]int{}
	for _, tool := range cat.Tools {
		kinds[tool.Command.Kind]++
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tool.Args, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: args must be an object schema (%v)", tool.Name, err)
		}
		for p, raw := range schema.Properties {
			var prop struct {
				Description string `json:"description"`
			}
			if json.Unmarshal(raw, &prop); prop.Description == "" {
				t.Errorf("%s: argument %q has no description", tool.Name, p)
			}
		}
		if !strings.HasPrefix(tool.Prompt, "## "+tool.Name+"\n") {
			t.Errorf("%s: prompt must start with \"## %s\"", tool.Name, tool.Name)
		}
		if len(tool.Keywords) < 5 {
			t.Errorf("%s: only %d keywords; give the words users ask with", tool.Name, len(tool.Keywords))
		}
		if len(tool.Warnings) > 0 {
			t.Errorf("%s: warnings %v", tool.Name, tool.Warnings)
		}
	}
	// Both forms of the seeds are represented: scripts beside the .meta and
	// metadata-only shell commands.
	if kinds[registry.CoLocated] < 5 || kinds[registry.Shell] < 5 {
		t.Errorf("command kinds %v: want both co-located scripts and metadata-only shell commands", kinds)
	}
	for name, flag := range map[string]func(*registry.Tool) bool{
		"http_fetch": func(t *registry.Tool) bool { return t.Network },
		"file_read":  func(t *registry.Tool) bool { return t.ReadOnly && !t.Network },
		"file_write": func(t *registry.Tool) bool { return !t.ReadOnly },
		"json_value": func(t *registry.Tool) bool { return t.Command.Kind == registry.Shell && strings.Contains(t.Cmd, "jq") },
	} {
		if tool, ok := cat.Get(name); !ok || !flag(tool) {
			t.Errorf("%s is missing or has the wrong flags/kind", name)
		}
	}
}

// TestExampleAgents: every example profile parses, names only catalog
// tools, auto-loads only tools it allows, and explorer allows only
// read-only tools.
func TestExampleAgents(t *testing.T) {
	reg := registry.New(registry.Options{Dirs: []string{exampleToolsDir}})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := reg.Catalog()
	files, err := filepath.Glob(filepath.Join(exampleAgentsDir, "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 example agent profiles, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		p, err := registry.LoadProfile(exampleAgentsDir, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(p.AutoLoad) == 0 {
			t.Errorf("%s: autoLoad is empty", name)
		}
		named := append([]string(nil), p.AutoLoad...)
		if p.AllowTools != nil {
			named = append(named, *p.AllowTools...)
		}
		for _, tool := range named {
			if _, ok := cat.Get(tool); !ok {
				t.Errorf("%s names %q, which is not in examples/tools", name, tool)
			}
		}
		for _, tool := range p.AutoLoad {
			if !p.Allows(tool) {
				t.Errorf("%s auto-loads %q but does not allow it", name, tool)
			}
		}
	}
	p, err := registry.LoadProfile(exampleAgentsDir, "explorer")
	if err != nil || p.AllowTools == nil {
		t.Fatalf("explorer profile must exist with allowTools: %v", err)
	}
	for _, tool := range *p.AllowTools {
		if tt, ok := cat.Get(tool); ok && !tt.ReadOnly {
			t.Errorf("explorer allows %s, which is not readOnly", tool)
		}
	}
}

// ---- helpers ----

type toolRun struct {
	stdout, stderr string
	code           int
}

// buildToolsrv builds this command, once per test binary, into the
// directory TestMain made (and removes when the tests are done). The
// sandbox helper re-executes the running binary, so calls must go through
// a real toolsrv binary rather than the test binary.
//
// TOOLSRV_TEST_BIN, when set, names a binary to use instead (to run these
// tests against another build, such as an older release, and see which
// fail).
func buildToolsrv(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("TOOLSRV_TEST_BIN"); bin != "" {
		return bin
	}
	built.once.Do(func() { built.path, built.err = goBuildToolsrv(built.dir) })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// goBuildToolsrv builds this command into dir.
func goBuildToolsrv(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no directory to build toolsrv into (TestMain makes it)")
	}
	goBin, err := osexec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building toolsrv for the sandboxed calls needs go on PATH: %w", err)
	}
	bin := filepath.Join(dir, "toolsrv")
	cmd := osexec.Command(goBin, "build", "-o", bin, ".")
	// As make build builds it: without cgo (the helper then drops its
	// capabilities on every thread, see package exec/sandbox).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/toolsrv: %w\n%s", err, out)
	}
	return bin, nil
}

// runToolsrv runs the built binary with a scrubbed environment: PATH, a
// fake empty HOME, and LANG.
func runToolsrv(t *testing.T, bin, stdin string, args ...string) toolRun {
	t.Helper()
	return runToolsrvEnv(t, bin, nil, stdin, args...)
}

// runToolsrvEnv is runToolsrv with the KEY=VALUE entries env added to the
// environment.
func runToolsrvEnv(t *testing.T, bin string, env []string, stdin string, args ...string) toolRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*osexec.ExitError)
		if !ok {
			t.Fatalf("toolsrv %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return toolRun{stdout: out.String(), stderr: errb.String(), code: code}
}

func callTool(t *testing.T, bin, tools, dir, name, args string) toolRun {
	t.Helper()
	return runToolsrv(t, bin, "", "call", "--tools", tools, "--cwd", dir, name, args)
}

func requireTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := osexec.LookPath(n); err != nil {
			t.Fatalf("the example tools need %s on PATH (.ci/run installs it): %v", n, err)
		}
	}
}

// loopbackHandler serves the http_fetch cases.
func loopbackHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/hello":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "hello from the loopback server\n")
	case "/echo":
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "method=%s x-test=%s ctype=%s body=%s\n", r.Method, r.Header.Get("X-Test"), r.Header.Get("Content-Type"), body)
	default:
		http.NotFound(w, r)
	}
}

// files writes pairs of (relative path, content) into the working directory.
func files(pairs ...string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		for i := 0; i+1 < len(pairs); i += 2 {
			writeFile(t, filepath.Join(dir, pairs[i]), pairs[i+1])
		}
	}
}

// aged writes files whose modification time lies the given age in the past.
func aged(ages map[string]time.Duration) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		now := time.Now()
		for name, age := range ages {
			p := filepath.Join(dir, name)
			writeFile(t, p, name)
			if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tarGz writes a gzipped tar archive with the given members (names are
// written as given, "../" included, to test refusal).
func tarGz(name string, members map[string]string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			hdr := &tar.Header{Name: k, Mode: 0o644, Size: int64(len(members[k])), ModTime: time.Now(), Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(hdr); err != nil {
				t.Fatal(err)
			}
			io.WriteString(tw, members[k])
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), buf.String())
	}
}

// gitRepo makes a repository with two commits, then modifies a tracked file
// and adds an untracked one.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	gitOut(t, dir, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "tracked.txt"), "first line\n")
	gitOut(t, dir, "add", "tracked.txt")
	gitOut(t, dir, "commit", "-q", "-m", "initial commit")
	writeFile(t, filepath.Join(dir, "second.txt"), "second\n")
	gitOut(t, dir, "add", "second.txt")
	gitOut(t, dir, "commit", "-q", "-m", "add second file")
	writeFile(t, filepath.Join(dir, "tracked.txt"), "changed line\n")
	writeFile(t, filepath.Join(dir, "untracked.txt"), "new\n")
}

// gitOut runs git (unsandboxed, as the test's own setup) with a fixed
// identity and no user or system configuration.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := osexec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=test@example.org",
		"GIT_COMMITTER_NAME=Test Author", "GIT_COMMITTER_EMAIL=test@example.org")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func fileIs(rel, want string) func(t *testing.T, dir, out string) {
	return func(t *testing.T, dir, _ string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return
		}
		if string(got) != want {
			t.Errorf("%s holds %q, want %q", rel, got, want)
		}
	}
}

func absent(rel string) func(t *testing.T, dir, out string) {
	return func(t *testing.T, dir, _ string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
			t.Errorf("%s still exists", rel)
		}
	}
}

func outputIs(want string) func(t *testing.T, dir, out string) {
	return func(t *testing.T, _, out string) {
		t.Helper()
		if out != want {
			t.Errorf("output %q, want %q", out, want)
		}
	}
}

func notContains(subs ...string) func(t *testing.T, dir, out string) {
	return func(t *testing.T, _, out string) {
		t.Helper()
		for _, s := range subs {
			if strings.Contains(out, s) {
				t.Errorf("output contains %q:\n%s", s, out)
			}
		}
	}
}

// containsFields reports whether some line of text has exactly these
// whitespace-separated fields.
func containsFields(text string, fields []string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.Join(strings.Fields(l), " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
