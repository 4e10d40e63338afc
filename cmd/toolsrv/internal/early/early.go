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
//   - If an earlier call from this working directory called a tool named
//     among the arguments, the helper is prepared from that call's recipe
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
	"sync/atomic"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// Started is what init started for the call: a recalled helper or a
// prestarted one (at most one of them), and the recipes it read.
type Started struct {
	Prestarted *sandbox.Helper
	Recalled   *sandbox.Recalled
	book       *recipeBook
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
	s := &Started{book: openBook(os.Getenv)}
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

// Discard ends the helper no call took.
func (s *Started) Discard() {
	if s == nil {
		return
	}
	s.Prestarted.Discard()
	s.Recalled.Discard()
}

// Remember keeps rc, the recipe of this call's helper, as the first of
// this working directory's recipes, for the next call of its tool. It
// writes only when that changes what was read.
func (s *Started) Remember(rc sandbox.Recipe) {
	if s != nil {
		s.book.remember(rc)
	}
}
