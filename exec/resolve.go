package exec

import (
	"os"
	"path/filepath"
	"strings"
)

// resolvePath returns p made absolute with every symlink resolved: the
// directory or file the kernel reaches through p, which is what a guard
// must look at and what the sandbox must be given (a path checked in one
// form and used in another is a hole: the symlink can point elsewhere,
// or be swapped, in between). p must exist.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// resolveLoose is resolvePath for a path that may not exist (yet): its
// deepest existing ancestor resolved and the rest appended; a dangling
// symlink is followed to where it points. "" stays "".
func resolveLoose(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return resolveMissing(abs, 40)
}

// resolveMissing is resolveLoose of the absolute, clean path p, following
// at most hops dangling symlinks.
func resolveMissing(p string, hops int) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	full := filepath.Join(resolveMissing(parent, hops), filepath.Base(p))
	if target, err := os.Readlink(full); err == nil && hops > 0 {
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(full), target)
		}
		return resolveMissing(filepath.Clean(target), hops-1)
	}
	return full
}

// homeExposure says why granting dir, resolved, to a tool whole would
// expose the home directory home (resolved; "" knows only "/"): dir is
// "/", the home directory or above it, or a hidden directory of home
// (~/.ssh, ~/.config: keys, tokens, settings). "" when it is none of
// them; a directory inside a hidden one (~/.config/ollie/tools) is fine.
func homeExposure(dir, home string) string {
	switch {
	case dir == "/":
		return "the root directory"
	case home == "":
		return ""
	case dir == home:
		return "the home directory"
	case isUnder(home, dir):
		return "above the home directory"
	case filepath.Dir(dir) == home && strings.HasPrefix(filepath.Base(dir), "."):
		return "~/" + filepath.Base(dir) + ", a hidden directory of the home directory"
	}
	return ""
}

// hiddenIn returns the hidden directory of home ("~/.ssh") that dir is
// or lies in, or "". dir and home are resolved.
func hiddenIn(dir, home string) string {
	if home == "" || !isUnder(dir, home) {
		return ""
	}
	rel, _ := filepath.Rel(home, dir)
	top, _, _ := strings.Cut(rel, string(filepath.Separator))
	if strings.HasPrefix(top, ".") {
		return "~/" + top
	}
	return ""
}

// isUnder reports whether path is strictly below dir.
func isUnder(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
