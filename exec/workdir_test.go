package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// guardLayout is a home directory with a project that keeps its tools in
// ./tools and holds symlinks a tool could have planted, toolsrv's runtime
// (socket) and cache directories, and a guard over them whose Home is a
// symlink to the home directory.
type guardLayout struct {
	root, home, proj, tools string
	g                       WorkDirGuard
}

func newGuardLayout(t *testing.T) guardLayout {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := guardLayout{root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "home", "proj")}
	l.tools = filepath.Join(l.proj, "tools")
	for _, d := range []string{"home/.ssh", "home/.config/ollie", "home/proj/tools/sub", "home/proj2", "run/toolsrv/sub", "cache/toolsrv/builtin", "srv/work", "srv/priv/state/toolsrv/sub"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWriteFile(t, filepath.Join(l.proj, "README"), "a file\n")
	symlink(t, filepath.Join(l.home, ".ssh"), filepath.Join(l.proj, "dotssh"))
	symlink(t, l.home, filepath.Join(l.proj, "up"))
	symlink(t, filepath.Join(root, "run", "toolsrv"), filepath.Join(l.proj, "sock"))
	symlink(t, l.proj, filepath.Join(root, "projlink"))
	symlink(t, filepath.Join(root, "srv", "work"), filepath.Join(root, "srvlink"))
	symlink(t, filepath.Join(root, "srv", "priv"), filepath.Join(root, "privlink"))
	l.g = WorkDirGuard{
		Home: symlink(t, l.home, filepath.Join(root, "homelink")),
		// The tools directory named through a symlink to the project, and
		// an agents directory that does not exist yet.
		Protected: []string{filepath.Join(root, "projlink", "tools"), filepath.Join(l.home, "proj2", "agents")},
		Trees:     []string{filepath.Join(root, "run", "toolsrv"), filepath.Join(root, "cache", "toolsrv")},
		// The usage history, named through a symlink, inside a directory
		// that is otherwise a fine working directory.
		Private: []string{filepath.Join(root, "privlink", "state", "toolsrv")},
	}
	return l
}

func TestWorkDirGuard(t *testing.T) {
	l := newGuardLayout(t)
	at := func(rel string) string { return filepath.Join(l.root, rel) }
	for _, c := range []struct {
		dir     string
		refusal string   // "" accepted
		real    string   // the resolved directory, when accepted
		protect []string // when accepted
	}{
		{dir: at("home/proj/tools/sub"), real: at("home/proj/tools/sub")}, // below a tool directory: nothing there is read
		{dir: at("srv/work"), real: at("srv/work")},
		{dir: at("srvlink"), real: at("srv/work")},
		// A directory holding the usage history, the history's, and one
		// inside it are refused: read-only would still let tools read it.
		{dir: at("srv/priv"), refusal: "holds " + at("srv/priv/state/toolsrv") + ", toolsrv's private state"},
		{dir: at("privlink"), refusal: "toolsrv's private state"},
		{dir: at("srv"), refusal: "toolsrv's private state"},
		{dir: at("srv/priv/state/toolsrv"), refusal: "toolsrv's private"},
		{dir: at("privlink/state/toolsrv/sub"), refusal: "toolsrv's private"},
		// A directory holding toolsrv's own paths is accepted, and names
		// them, resolved.
		{dir: l.proj, real: l.proj, protect: []string{l.tools}},
		{dir: at("projlink"), real: l.proj, protect: []string{l.tools}},
		{dir: at("homelink/proj"), real: l.proj, protect: []string{l.tools}},
		{dir: at("run"), real: at("run"), protect: []string{at("run/toolsrv")}},
		{dir: at("cache"), real: at("cache"), protect: []string{at("cache/toolsrv")}},
		// ... unless one of them does not exist yet (a tool could make it).
		{dir: at("home/proj2"), refusal: "does not exist yet"},
		{dir: "/", refusal: "root directory"},
		{dir: l.home, refusal: "the home directory"},
		{dir: at("homelink"), refusal: "the home directory"},
		{dir: at("home/proj/up"), refusal: "the home directory"},
		{dir: l.root, refusal: "holds the home directory"},
		{dir: at("home/.ssh"), refusal: "~/.ssh"},
		{dir: at("home/proj/dotssh"), refusal: "~/.ssh"},
		{dir: at("homelink/.ssh"), refusal: "~/.ssh"},
		{dir: at("home/.config/ollie"), refusal: "~/.config"},
		{dir: l.tools, refusal: "toolsrv's own"},
		{dir: at("run/toolsrv"), refusal: "toolsrv's own"},
		{dir: at("run/toolsrv/sub"), refusal: "inside toolsrv's own"},
		{dir: at("home/proj/sock"), refusal: "toolsrv's own"},
		{dir: at("cache/toolsrv/builtin"), refusal: "inside toolsrv's own"},
		{dir: at("missing"), refusal: "no such file"},
		{dir: at("home/proj/README"), refusal: "not a directory"},
	} {
		real, protect, err := l.g.Check(c.dir)
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", c.dir, err)
		case c.refusal == "" && (real != c.real || !slices.Equal(protect, c.protect)):
			t.Errorf("%s: resolved %s, protect %q; want %s, %q", c.dir, real, protect, c.real, c.protect)
		case c.refusal != "" && (err == nil || !strings.Contains(err.Error(), c.refusal)):
			t.Errorf("%s: %v, want a refusal mentioning %q", c.dir, err, c.refusal)
		case c.refusal != "" && (real != "" || protect != nil):
			t.Errorf("%s: refused, yet resolved %q, protect %q", c.dir, real, protect)
		}
	}
	// A socket directory that is the home directory (--listen unix:~/9p.sock)
	// is refused itself, not all of home.
	atHome := WorkDirGuard{Home: l.home, Trees: []string{l.home, "/"}}
	if real, _, err := atHome.Check(at("srv/work")); err != nil || real != at("srv/work") {
		t.Errorf("with the home directory and / as Trees: %s %v", real, err)
	}
	if _, _, err := atHome.Check(at("home/proj2")); err != nil {
		t.Errorf("with the home directory as a Tree, a project in it: %v", err)
	}
	// A refusal wraps ErrWorkDirRefused and names what the symlink was.
	_, _, err := l.g.Check(at("home/proj/dotssh"))
	if !errors.Is(err, ErrWorkDirRefused) || !strings.Contains(err.Error(), "(that is, "+at("home/.ssh")+")") {
		t.Errorf("refusal %v", err)
	}
}

// The runner vets a call's working directory with its guard, and works in
// the resolved directory; the sandbox is given that directory, with
// toolsrv's own paths in it to keep read-only (not for a readOnly tool,
// which writes nothing anyway).
func TestCallUsesTheGuard(t *testing.T) {
	l := newGuardLayout(t)
	f := newFixture(t)
	f.add("writer", `{"description":"writes"}`, "#!/bin/sh\necho hi > out.txt\n")
	f.add("reader", `{"description":"reads","readOnly":true}`, "#!/bin/sh\ncat README\n")
	r := f.runner(func(o *Options) { o.WorkDirGuard = &l.g })

	dir, protect, err := r.workDir(filepath.Join(l.root, "projlink"))
	if err != nil || dir != l.proj || !slices.Equal(protect, []string{l.tools}) {
		t.Fatalf("workDir: %s %q %v", dir, protect, err)
	}
	pol := r.callPolicy(f.tool("writer"), dir, "/tmp/x", protect, true, r.opts.Limits)
	if pol.WorkDir != l.proj || !slices.Equal(pol.Protect, []string{l.tools}) {
		t.Errorf("policy: workdir %s, protect %q", pol.WorkDir, pol.Protect)
	}
	if pol := r.callPolicy(f.tool("reader"), dir, "/tmp/x", protect, true, r.opts.Limits); pol.Protect != nil {
		t.Errorf("a readOnly tool's policy protects %q", pol.Protect)
	}

	cc := f.cc()
	cc.WorkDir = filepath.Join(l.root, "srvlink")
	res := f.mustOK(r.Call(context.Background(), f.tool("writer"), []byte(`{}`), cc))
	if !exists(filepath.Join(l.root, "srv", "work", "out.txt")) {
		t.Errorf("the call did not write its working directory: %+v", res)
	}

	// A refused directory fails the call before anything runs.
	cc.WorkDir = filepath.Join(l.proj, "dotssh")
	_, err = r.Call(context.Background(), f.tool("writer"), []byte(`{}`), cc)
	if ce := wantKind(t, err, ErrBadCallContext); !errors.Is(err, ErrWorkDirRefused) || !strings.Contains(ce.Error(), "~/.ssh") {
		t.Errorf("a call in a symlink to ~/.ssh: %v", err)
	}
	if exists(filepath.Join(l.home, ".ssh", "out.txt")) {
		t.Fatal("the tool wrote in ~/.ssh")
	}
}

// A started process (an MCP server) is given its paths resolved, and the
// guard's paths inside those it may write are kept read-only.
func TestProcessPathsResolved(t *testing.T) {
	l := newGuardLayout(t)
	f := newFixture(t)
	r := f.runner(func(o *Options) { o.WorkDirGuard = &l.g })
	link := filepath.Join(l.root, "projlink")
	p, err := r.resolveProcessPaths(ProcessSpec{Dir: link, Read: []string{filepath.Join(link, "README")}, Write: []string{link, filepath.Join(l.root, "srv")}})
	if err != nil {
		t.Fatal(err)
	}
	want := processPaths{dir: l.proj, read: []string{filepath.Join(l.proj, "README")}, write: []string{l.proj, filepath.Join(l.root, "srv")}, protect: []string{l.tools}}
	if p.dir != want.dir || !slices.Equal(p.read, want.read) || !slices.Equal(p.write, want.write) || !slices.Equal(p.protect, want.protect) {
		t.Errorf("resolveProcessPaths = %+v, want %+v", p, want)
	}
	if _, err := r.resolveProcessPaths(ProcessSpec{Write: []string{filepath.Join(l.root, "missing")}}); err == nil {
		t.Error("a missing write path was accepted")
	}
}
