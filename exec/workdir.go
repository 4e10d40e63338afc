package exec

import (
	"fmt"
	"path/filepath"
	"strings"
)

// WorkDirGuard decides which directories may be a session's working
// directory, the one place a tool may write. Whoever sets it chooses what
// every tool of that session can change, so some choices are refused:
//
//   - the root directory, the home directory and any directory above it
//     (a tool could then write ~/.ssh/authorized_keys or ~/.bashrc);
//   - a hidden directory of the home directory or anything inside one
//     (~/.ssh, ~/.gnupg, ~/.config, ~/.local, ...: keys, tokens, and the
//     programs and settings the user runs later);
//   - one of Protected, or a directory holding one: toolsrv's own state
//     (tool directories, agent profiles, its sockets' and the bypass
//     broker's directories). A tool that could write there could add or
//     change tools or profiles, or replace the broker's socket with one
//     that approves everything. (A subdirectory is harmless: nothing below
//     these directories is read.)
//   - one of Trees, a directory holding one, or anything inside one
//     (toolsrv's cache and configuration: the index and thresholds files
//     live in subdirectories).
type WorkDirGuard struct {
	// Home is the user's home directory ("" skips the home rules).
	Home string
	// Protected are toolsrv's own paths (files or directories) whose
	// subdirectories are harmless; Trees are those whose whole tree is.
	Protected, Trees []string
}

// Check says why dir may not be a working directory, or nil. dir must be
// absolute and clean.
func (g WorkDirGuard) Check(dir string) error {
	dir = filepath.Clean(dir)
	if dir == "/" {
		return fmt.Errorf("the root directory would give tools write access to everything the server may write; choose a project directory")
	}
	if g.Home != "" {
		home := filepath.Clean(g.Home)
		switch {
		case dir == home:
			return fmt.Errorf("the home directory would give tools write access to all of it (~/.ssh, ~/.bashrc, ...); choose a project directory inside it")
		case isUnder(home, dir):
			return fmt.Errorf("it holds the home directory %s, which would give tools write access to all of it; choose a project directory", home)
		}
		if rel, err := filepath.Rel(home, dir); err == nil && strings.HasPrefix(rel, ".") && rel != "." && !strings.HasPrefix(rel, "..") {
			top := strings.SplitN(rel, string(filepath.Separator), 2)[0]
			return fmt.Errorf("it is in ~/%s, a hidden directory of the home directory (keys, tokens, settings and programs the user runs); choose a project directory", top)
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
			p = filepath.Clean(p)
			switch {
			case dir == p || (list.tree && isUnder(dir, p)):
				return fmt.Errorf("it is toolsrv's own %s; tools must not write there", p)
			case isUnder(p, dir):
				return fmt.Errorf("it holds %s, toolsrv's own (tools, profiles, sockets, cache or settings), which tools must not write", p)
			}
		}
	}
	return nil
}
