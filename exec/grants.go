package exec

import (
	"os"
	"path/filepath"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// readPaths are the extra read-only paths of a call in dir (resolved): the
// operator's Options.ReadPaths, and the repository that holds the working
// directory (so that git works in any of its subdirectories), unless that
// repository is the home directory or above it (a home directory kept in
// git would otherwise open all of it, keys included). Resolved.
func (r *Runner) readPaths(dir string) []string {
	var out []string
	for _, p := range r.opts.ReadPaths {
		out = append(out, resolveLoose(p))
	}
	if root := repoRoot(dir); root != "" && root != dir && homeExposure(root, r.home()) == "" {
		out = append(out, root)
	}
	return out
}

// execPaths are the paths a sandboxed tool may read and execute besides
// the system directories: its own directory (co-located executables,
// helper scripts) and its executable wherever it lives. A directory that
// would expose the home directory (the home directory itself, one above
// it, a hidden directory of it: see homeExposure) is not granted; its
// tools get their executable only, and the runner warns once.
func (r *Runner) execPaths(t *registry.Tool) []string {
	var out []string
	if t.Dir != "" {
		dir := resolveLoose(t.Dir)
		if why := homeExposure(dir, r.home()); why != "" {
			r.warnOnce("tool dir "+dir, "a tool directory is not readable by its tools: it is "+why+
				", and granting it would let every tool there read it; they get their own executable only. Move the tools into a directory of their own",
				"dir", t.Dir, "tool", t.Name)
		} else {
			out = append(out, dir)
		}
	}
	add := func(p string) {
		if p != "" && !sandbox.Under(p, out) && !sandbox.Under(p, sandbox.SystemReadOnly) {
			out = append(out, p)
		}
	}
	add(r.opts.ClientBin)
	add(t.Command.Argv[0])
	if t.Command.Kind != registry.Shell && len(t.Command.Argv) == 1 {
		// A symlinked executable: allow its target too.
		if real, err := filepath.EvalSymlinks(t.Command.Argv[0]); err == nil {
			add(real)
		}
	}
	return out
}

// home is the server's home directory, resolved ("" when unknown).
func (r *Runner) home() string {
	home := r.opts.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return resolveLoose(home)
}

// repoRoot returns the top of the git work tree that holds dir ("" when
// none): the nearest ancestor with a .git entry.
func repoRoot(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}
