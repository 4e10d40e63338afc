package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrWorkDirRefused is the cause of a WorkDirGuard refusal (test it with
// errors.Is, also on a *CallError).
var ErrWorkDirRefused = errors.New("refused as a working directory")

// WorkDirGuard decides which directories may be a session's working
// directory, the one place a tool may write. Whoever sets it chooses what
// every tool of that session can change, so some choices are refused:
//
//   - the root directory, the home directory and any directory above it
//     (a tool could then write ~/.ssh/authorized_keys or ~/.bashrc);
//   - a hidden directory of the home directory or anything inside one
//     (~/.ssh, ~/.gnupg, ~/.config, ~/.local, ...: keys, tokens, and the
//     programs and settings the user runs later);
//   - one of Protected: toolsrv's own paths (tool directories, agent
//     profiles, the bypass broker's directory). A subdirectory of one is
//     harmless (nothing below them is read);
//   - one of Trees, or anything inside one: toolsrv's cache and
//     configuration (the index and thresholds files live in
//     subdirectories) and its sockets' directories (a tool there could
//     replace the socket). A Tree that is the home directory or above it
//     counts for itself only;
//   - one of Private, anything inside one, or any directory that holds
//     one: toolsrv's paths that tools must not even read (the usage
//     history: the users' requests). Read-only is not enough there, so a
//     directory holding one is refused, not protected.
//
// A directory that holds some of Protected or Trees is accepted: Check
// returns them, and the runner has the call's sandbox keep them read-only
// (sandbox.Policy.Protect). One that does not exist yet cannot be kept
// read-only (a tool could create it: a tools directory with a tool of its
// own), so a directory holding one is refused until it is made.
//
// Every path is compared with its symlinks resolved, the home directory,
// Protected and Trees included: "~/proj/dotssh", a symlink to ~/.ssh, is
// ~/.ssh. The caller must use the directory Check returns, never the one
// it was given: a symlink checked and then followed again could point
// elsewhere by then.
type WorkDirGuard struct {
	// Home is the user's home directory ("" skips the home rules).
	Home string
	// Protected are toolsrv's own paths (files or directories) whose
	// subdirectories are harmless; Trees are those whose whole tree is
	// toolsrv's; Private are those no tool may read.
	Protected, Trees, Private []string
}

// Check resolves dir (made absolute, symlinks resolved) and says whether
// it may be a working directory. resolved is the directory to use in its
// place; protect are toolsrv's own paths inside it (resolved), which the
// call must not write. A refusal wraps ErrWorkDirRefused and says why and
// what to do.
func (g WorkDirGuard) Check(dir string) (resolved string, protect []string, err error) {
	resolved, err = checkWorkDir(dir)
	if err != nil {
		return "", nil, err
	}
	refuse := func(format string, a ...any) (string, []string, error) {
		shown := dir
		if resolved != filepath.Clean(dir) {
			shown = fmt.Sprintf("%s (that is, %s)", dir, resolved)
		}
		return "", nil, fmt.Errorf("%s is %w: %s", shown, ErrWorkDirRefused, fmt.Sprintf(format, a...))
	}
	home := resolveLoose(g.Home)
	switch {
	case resolved == "/":
		return refuse("the root directory would give tools write access to everything the server may write; choose a project directory")
	case home != "" && resolved == home:
		return refuse("the home directory would give tools write access to all of it (~/.ssh, ~/.bashrc, ...); choose a project directory inside it")
	case home != "" && isUnder(home, resolved):
		return refuse("it holds the home directory %s, which would give tools write access to all of it; choose a project directory", home)
	}
	if top := hiddenIn(resolved, home); top != "" {
		return refuse("it is in %s, a hidden directory of the home directory (keys, tokens, settings and programs the user runs); choose a project directory", top)
	}
	for _, p := range g.Private {
		if p == "" {
			continue
		}
		switch p = resolveLoose(p); {
		case resolved == p || isUnder(resolved, p):
			return refuse("it is toolsrv's private %s (its private state: the usage history, tokens, pinned definitions); tools must not read or write there; choose a project directory", p)
		case isUnder(p, resolved):
			return refuse("it holds %s, toolsrv's private state (the usage history, which keeps the users' requests, or a token), which tools must not read; choose a directory that does not hold it, or keep that file elsewhere", p)
		}
	}
	for _, list := range []struct {
		paths []string
		tree  bool
	}{{g.Protected, false}, {g.Trees, true}} {
		for _, p := range list.paths {
			if p == "" {
				continue
			}
			p = resolveLoose(p)
			switch {
			case resolved == p:
				return refuse("it is toolsrv's own %s; tools must not write there; choose a project directory", p)
			case list.tree && isUnder(resolved, p) && homeExposure(p, home) == "":
				return refuse("it is inside toolsrv's own %s; tools must not write there; choose a project directory", p)
			case isUnder(p, resolved):
				if _, err := os.Lstat(p); err != nil {
					return refuse("it holds %s, toolsrv's own (tools, profiles, sockets, cache, settings or usage history), which does not exist yet and so cannot be kept read-only: a tool could create it; make it (mkdir -p %s if it is a directory, else write the file) or choose a directory that does not hold it", p, p)
				}
				protect = appendNew(protect, p)
			}
		}
	}
	return resolved, protect, nil
}

// protectIn returns the paths of Protected and Trees that exist inside
// dir (resolved): what a process that may write dir must not write.
func (g WorkDirGuard) protectIn(dir string) []string {
	var out []string
	for _, p := range append(append([]string(nil), g.Protected...), g.Trees...) {
		if p == "" {
			continue
		}
		if p = resolveLoose(p); isUnder(p, dir) {
			if _, err := os.Lstat(p); err == nil {
				out = appendNew(out, p)
			}
		}
	}
	return out
}

// workDir resolves a call's working directory and vets it with
// Options.WorkDirGuard: the directory to use and the paths to protect in
// it.
func (r *Runner) workDir(dir string) (string, []string, error) {
	if r.opts.WorkDirGuard != nil {
		return r.opts.WorkDirGuard.Check(dir)
	}
	resolved, err := checkWorkDir(dir)
	return resolved, nil, err
}

// checkWorkDir resolves dir (absolute, symlinks resolved) and checks it
// is a directory.
func checkWorkDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no working directory given")
	}
	resolved, err := resolvePath(dir)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("working directory %s is not a directory", dir)
	}
	return resolved, nil
}

// appendNew appends p to list unless it is there already.
func appendNew(list []string, p string) []string {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}
