// Package early starts the sandbox helper of a "toolsrv call" while the
// rest of the binary initialises.
//
// A call's own cost is mostly its helper: a process, an execve and a Go
// runtime (about 1.5 ms), then the call's namespaces, mounts, limits and
// confinement, on the call's path after the catalog is loaded. The
// toolsrv binary itself spends several milliseconds initialising its
// packages on one core before main runs (the JSON-Schema library alone
// compiles every draft's meta-schema). This package's init, which Go runs
// before those (its imports are few and its path sorts before theirs once
// they are ready), starts the helper then, on the second core:
//
//   - If an earlier call in the same working directory (--cwd's, else the
//     process's) called a tool named among the arguments, the helper is
//     prepared from that call's recipe
//     (sandbox.Recall; recipes.go): namespaces, mounts, limits and
//     confinement made, the tool not started. The call takes it only if
//     its own recipe is the same in every field and every path of the
//     policy is still the file it was (exec.Options.Recalled); otherwise
//     it is discarded and the call starts its own.
//   - Otherwise the helper is prestarted: it waits for its call
//     (sandbox.Prestart, exec.Options.Prestarted).
//
// The helper is started only for "toolsrv call", after the descriptors
// toolsrv inherited are marked close-on-exec (main does that again), with
// the namespaces a call gets by default and the helper binary it uses by
// default; a call that needs others starts its own and discards this one.
// TOOLSRV_PRESTART=0 turns both off (to compare).
//
// What init started is this package's only state: set by init, taken
// once by main (Take). Go has no other way from an init to main.
package early

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// Started is what init started for the call: a recalled helper or a
// prestarted one (at most one of them), and the recipes it read.
type Started struct {
	Prestarted *sandbox.Helper
	Recalled   *sandbox.Recalled
	book       *recipeBook
	// remembered is the recipe to write at Discard (nil: none).
	remembered *sandbox.Recipe
}

var started atomic.Pointer[Started]

func init() {
	if len(os.Args) < 2 || os.Args[1] != "call" || os.Getenv("TOOLSRV_PRESTART") == "0" {
		return
	}
	if sandbox.CloseInherited(3) != nil {
		return // main reports it
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	exe := sandbox.DefaultHelper(self)
	s := &Started{book: openBook(os.Getenv, callDir(os.Args[2:]))}
	// An error (no namespaces here, say) leaves the call to start its
	// helper as it would without this package, with its own fallback and
	// messages.
	if rc, ok := s.book.pick(os.Args[2:]); ok {
		if r, err := sandbox.Recall(exe, os.TempDir(), rc); err == nil {
			s.Recalled = r
		}
	}
	if s.Recalled == nil {
		if h, err := sandbox.Prestart(exe, sandbox.DefaultNamespaces()); err == nil {
			s.Prestarted = h
		}
	}
	started.Store(s)
}

// Take returns what init started for this call (nil: nothing), once. The
// caller calls Discard when the call is over.
func Take() *Started { return started.Swap(nil) }

// Discard ends the helper no call took and writes the recipe the call
// gave Remember: after the call, off its path.
func (s *Started) Discard() {
	if s == nil {
		return
	}
	s.Prestarted.Discard()
	s.Recalled.Discard()
	if s.remembered != nil {
		s.book.remember(*s.remembered)
	}
}

// Remember takes rc, the recipe of this call's helper, to be kept (at
// Discard) as the first of its working directory's recipes, for the next
// call of its tool. The file is written only when that changes it.
func (s *Started) Remember(rc sandbox.Recipe) {
	if s != nil {
		s.remembered = &rc
	}
}

// callDir is the working directory the call will have, as the runner
// resolves it: --cwd's, else this process's ("": not to be had). Flags
// are not parsed yet; a guess is enough (the recipe is compared later).
func callDir(args []string) string {
	dir := ""
	for i, a := range args {
		for _, f := range []string{"-cwd", "--cwd"} {
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				dir = v
			} else if a == f && i+1 < len(args) {
				dir = args[i+1]
			}
		}
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return dir
}
