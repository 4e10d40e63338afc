package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/sshtest"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/remote"
)

// The documentation's examples are run, so none can drift from what
// toolsrv does. In README.md and docs/*.md:
//
//   - a ```console block is run: a line "$ CMD" is a command (run by
//     /bin/sh in a directory of the file's own, with the toolsrv under test
//     first on PATH and a fresh HOME), the lines after it are its output
//     (standard output and error together). A line "..." stands for any
//     number of lines, and "..." inside a line for any text (times, ids,
//     scores). A command that exits non-zero ends its output with the line
//     "[exit status N]".
//   - a block (```json, ```meta, …) preceded by <!-- file: PATH --> is
//     written to PATH in that directory before the commands after it run.
//   - a command that ends in " &" runs in the background (a server) until
//     the file's examples end; it shows no output. The command after it is
//     run again until it succeeds (the server is then ready; a reader who
//     types it right away may have to do the same), then compared.
//   - <!-- ssh host: NAME --> anywhere in a file gives its examples a host
//     NAME reachable over ssh (an sshd on loopback; "ssh NAME" logs in as
//     the user running the test) with a toolsrv of its own: its tools,
//     $PATH and directories are its own, as another machine's would be.
//   - a ```sh block is never run, and says why: <!-- synopsis --> (a usage
//     summary) or <!-- not run: REASON --> (needs Claude Code, a real
//     server elsewhere, …) before it.
//
// Each file's blocks run in order, in one directory.

// docsFiles are the documentation files whose examples run.
func docsFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

// docStep is one thing a documentation file does, in order: write a file,
// or run a command and compare its output.
type docStep struct {
	line int // of the block or the command, for messages
	// file, when set: write body there.
	file, body string
	// cmd, when set: run it; want is its expected output. background: it
	// runs until the file's examples end.
	cmd        string
	want       []string
	background bool
}

// doc is what a documentation file runs.
type doc struct {
	steps []docStep
	// sshHost, when set, is the name of the ssh host its examples reach.
	sshHost string
}

var (
	fenceRe  = regexp.MustCompile("^```([A-Za-z0-9_-]*)\\s*$")
	markerRe = regexp.MustCompile(`^<!--\s*(file:|synopsis|not run:)\s*(.*?)\s*-->$`)
	sshRe    = regexp.MustCompile(`^<!--\s*ssh host:\s*([A-Za-z0-9.-]+)\s*-->$`)
)

// parseDoc reads a documentation file's steps; problems are the blocks
// that break the conventions above.
func parseDoc(text string) (d doc, problems []string) {
	var steps []docStep
	defer func() { d.steps = steps }()
	lines := strings.Split(text, "\n")
	marker, markerArg := "", ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		m := fenceRe.FindStringSubmatch(line)
		if mm := sshRe.FindStringSubmatch(strings.TrimSpace(line)); mm != nil {
			d.sshHost = mm[1]
			continue
		}
		if m == nil {
			if mm := markerRe.FindStringSubmatch(strings.TrimSpace(line)); mm != nil {
				marker, markerArg = mm[1], mm[2]
			} else if strings.TrimSpace(line) != "" {
				marker, markerArg = "", ""
			}
			continue
		}
		lang, start := m[1], i+1
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			problems = append(problems, fmt.Sprintf("line %d: a ``` block that never ends", start))
			break
		}
		mk, arg := marker, markerArg
		marker, markerArg = "", ""
		switch {
		case mk == "file:":
			if arg == "" || filepath.IsAbs(arg) || strings.Contains(arg, "..") {
				problems = append(problems, fmt.Sprintf("line %d: <!-- file: PATH --> needs a relative path inside the example's directory", start))
				continue
			}
			steps = append(steps, docStep{line: start, file: arg, body: strings.Join(body, "\n") + "\n"})
		case lang == "console":
			if mk != "" {
				problems = append(problems, fmt.Sprintf("line %d: a console block is run; a block that is not run is ```sh with <!-- not run: REASON -->", start))
				continue
			}
			for j, l := range body {
				if cmd, ok := strings.CutPrefix(l, "$ "); ok {
					bg, background := strings.CutSuffix(strings.TrimSpace(cmd), " &")
					if background {
						cmd = bg
					}
					steps = append(steps, docStep{line: start + 1 + j, cmd: cmd, background: background})
					continue
				}
				if len(steps) == 0 || steps[len(steps)-1].cmd == "" {
					problems = append(problems, fmt.Sprintf("line %d: output before any \"$ \" command in a console block", start+1+j))
					continue
				}
				if steps[len(steps)-1].background {
					problems = append(problems, fmt.Sprintf("line %d: output after a command run in the background (\" &\"), which shows none", start+1+j))
					continue
				}
				steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
			}
		case lang == "sh":
			if mk == "" || (mk == "not run:" && arg == "") {
				problems = append(problems, fmt.Sprintf("line %d: a ```sh block without <!-- synopsis --> or <!-- not run: REASON --> before it (make it a console block that runs, or say why it cannot)", start))
			}
		}
	}
	return d, problems
}

// matchOutput says whether got (lines) is what want describes, "..." lines
// and "..." inside lines being wildcards.
func matchOutput(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "..." {
		for k := 0; k <= len(got); k++ {
			if matchOutput(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(want[0], got[0]) && matchOutput(want[1:], got[1:])
}

func matchLine(want, got string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		k := strings.Index(got, p)
		if k < 0 {
			return false
		}
		got = got[k+len(p):]
	}
	return strings.HasSuffix(got, last)
}

// outputLines is text as lines to compare: trailing white space of each
// line and trailing empty lines dropped.
func outputLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " \t\r")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func TestDocsConventions(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		problems  int
		steps     int
	}{
		{"bare sh block", "text\n\n```sh\nrm -rf /\n```\n", 1, 0},
		{"synopsis", "<!-- synopsis -->\n```sh\ntoolsrv rank MESSAGE\n```\n", 0, 0},
		{"not run without a reason", "<!-- not run: -->\n```sh\nclaude\n```\n", 1, 0},
		{"not run, marker before a blank line", "<!-- not run: needs Claude Code -->\n\n```sh\nclaude\n```\n", 0, 0},
		{"a marker does not carry past text", "<!-- synopsis -->\nsome words\n```sh\nx\n```\n", 1, 0},
		{"console", "```console\n$ toolsrv version\ntoolsrv ...\n$ true\n```\n", 0, 2},
		{"console marked not run", "<!-- not run: x -->\n```console\n$ true\n```\n", 1, 0},
		{"output before a command", "```console\nhello\n```\n", 1, 0},
		{"file", "<!-- file: tools/a.meta -->\n```json\n{}\n```\n", 0, 1},
		{"file outside", "<!-- file: ../a.meta -->\n```json\n{}\n```\n", 1, 0},
		{"unended", "```console\n$ true\n", 1, 0},
		{"background", "```console\n$ toolsrv serve &\n$ toolsrv 9p ls /\ntools\n```\n", 0, 2},
		{"output of a background command", "```console\n$ toolsrv serve &\nlistening\n```\n", 1, 1},
		{"ssh host", "<!-- ssh host: build-server -->\n```console\n$ true\n```\n", 0, 1},
	} {
		d, problems := parseDoc(c.doc)
		if len(problems) != c.problems || len(d.steps) != c.steps {
			t.Errorf("%s: %d steps, problems %q; want %d steps, %d problems", c.name, len(d.steps), problems, c.steps, c.problems)
		}
	}
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a\n...\nd", "a\nb\nc\nd", true},
		{"a\n...\nd", "a\nd", true},
		{"a\n...", "a", true},
		{"a\n...\nd", "a\nb", false},
		{"took ...ms", "took 12ms", true},
		{"took ...ms", "took 12s", false},
		{"x ... y ... z", "x 1 y 2 z", true},
		{"x ... y ... z", "x 1 z 2 y", false},
		{"a", "a\nb", false},
	} {
		if got := matchOutput(outputLines(c.want), outputLines(c.got)); got != c.ok {
			t.Errorf("match(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}

// TestDocs runs every example of README.md and docs/*.md.
func TestDocs(t *testing.T) {
	// Its commands mostly wait on the processes they start: alongside the
	// package's other parallel tests, not after them.
	t.Parallel()
	files := docsFiles(t)
	type parsed struct {
		name string
		doc
	}
	var docs []parsed
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, problems := parseDoc(string(b))
		for _, p := range problems {
			t.Errorf("%s: %s", f, p)
		}
		docs = append(docs, parsed{name: filepath.Base(f), doc: d})
	}
	if t.Failed() {
		return
	}
	bin := buildToolsrv(t)
	requireTools(t, "jq")
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			runDoc(t, bin, d.doc)
		})
	}
}

// runDoc runs one file's steps in a directory of its own.
func runDoc(t *testing.T, bin string, d doc) {
	// The home directory is not inside the working directory: calls are
	// refused in a directory that holds it.
	dir, home := t.TempDir(), t.TempDir()
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	env := []string{
		"PATH=" + path, "HOME=" + home, "LANG=C.UTF-8", "TZ=UTC",
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
	}
	if d.sshHost != "" {
		env = append(env, sshHostEnv(t, bin, d.sshHost)...)
	}
	retry := false
	for _, s := range d.steps {
		if s.file != "" {
			p := filepath.Join(dir, s.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(s.body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if s.background {
			startBackground(t, s, dir, env)
			retry = true
			continue
		}
		got := runStep(t, s, dir, env, retry)
		retry = false
		if !matchOutput(outputLines(strings.Join(s.want, "\n")), got) {
			t.Errorf("line %d: $ %s\n--- the docs show:\n%s\n--- it printed:\n%s", s.line, s.cmd, strings.Join(s.want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// runStep runs one command and returns its output lines ("[exit status N]"
// last when it failed). untilOK runs it again until it succeeds, as the
// command after a server started in the background.
func runStep(t *testing.T, s docStep, dir string, env []string, untilOK bool) []string {
	t.Helper()
	// A safety net only: a command that hangs fails here rather than
	// holding the whole test binary until go test's own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	for {
		cmd := osexec.CommandContext(ctx, "/bin/sh", "-c", s.cmd)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *osexec.ExitError
		switch {
		case errors.As(err, &ee) && untilOK && ctx.Err() == nil:
			time.Sleep(50 * time.Millisecond) // the pace of the retries, not what they wait for
			continue
		case errors.As(err, &ee):
			fmt.Fprintf(&out, "[exit status %d]\n", ee.ExitCode())
		case err != nil:
			t.Fatalf("line %d: %s: %v", s.line, s.cmd, err)
		}
		return outputLines(out.String())
	}
}

// startBackground starts a command that runs until the test ends (then it
// is asked to stop, as Ctrl-C would, and killed if it does not).
func startBackground(t *testing.T, s docStep, dir string, env []string) {
	t.Helper()
	cmd := osexec.Command("/bin/sh", "-c", "exec "+s.cmd)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("line %d: %s: %v", s.line, s.cmd, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(safetyNet):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("line %d: %s did not stop on SIGINT", s.line, s.cmd)
		}
		if t.Failed() {
			t.Logf("line %d: $ %s &\n%s", s.line, s.cmd, out.String())
		}
	})
}

// sshHostEnv makes host reachable from the examples over ssh: an sshd on
// loopback, an ssh configuration that names it host, and a toolsrv there
// with a world of its own. It returns the environment that reaches it.
func sshHostEnv(t *testing.T, bin, host string) []string {
	t.Helper()
	testdeps.Long(t, "real ssh logins")
	s := sshtest.Start(t)
	h := sshtest.NewHost(t, bin, nil)
	ssh, cfg, ok := strings.Cut(s.SSHCommand, " -F ")
	if !ok {
		t.Fatalf("sshtest's ssh command %q has no -F FILE", s.SSHCommand)
	}
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	named := filepath.Join(t.TempDir(), "ssh_config")
	conf := fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n\n%s", host, s.Port, base)
	if err := os.WriteFile(named, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{remote.SSHCommandEnv + "=" + ssh + " -F " + named, remote.RemoteCmdEnv + "=" + h.Cmd}
}
