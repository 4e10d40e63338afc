package exec

import (
	"os"
	"path/filepath"
	"strings"
)

// readPaths are the extra read-only paths of a call in dir: the operator's
// Options.ReadPaths, and the repository that holds the working directory
// (so that git works in any of its subdirectories), unless that repository
// is the home directory or above it (a home directory kept in git would
// otherwise open all of it, keys included).
func (r *Runner) readPaths(dir string) []string {
	out := append([]string(nil), r.opts.ReadPaths...)
	if root := repoRoot(dir); root != "" && root != dir && !r.coversHome(root) {
		out = append(out, root)
	}
	return out
}

// coversHome reports whether dir is the home directory or one of its
// ancestors.
func (r *Runner) coversHome(dir string) bool {
	home := r.opts.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return dir == "/"
	}
	home = filepath.Clean(home)
	return dir == "/" || dir == home || isUnder(home, dir)
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

// isUnder reports whether path is strictly below dir.
func isUnder(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
