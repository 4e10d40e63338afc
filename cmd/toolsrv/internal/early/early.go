// Package early starts the sandbox helper of a "toolsrv call" while the
// rest of the binary initialises.
//
// A call's own cost is mostly its helper: a process, an execve and a Go
// runtime (about 1.5 ms), on the call's path after the catalog is loaded.
// The toolsrv binary itself spends several milliseconds initialising its
// packages on one core before main runs (the JSON-Schema library alone
// compiles every draft's meta-schema). This package's init, which Go runs
// before those (its imports are few and its path sorts before theirs once
// they are ready), starts the helper then, on the second core; the helper
// waits for its call (sandbox.Prestart, exec.Options.Prestarted).
//
// The helper is started only for "toolsrv call", after the descriptors
// toolsrv inherited are marked close-on-exec (main does that again), with
// the namespaces a call gets by default and the helper binary it uses by
// default; a call that needs others starts its own and discards this one.
// TOOLSRV_PRESTART=0 turns it off (to compare).
//
// The helper is this package's only state: set by init, taken once by
// main. Go has no other way from an init to main.
package early

import (
	"os"
	"sync/atomic"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

var helper atomic.Pointer[sandbox.Helper]

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
	// An error (no namespaces here, say) leaves the call to start its
	// helper as it would without this package, with its own fallback and
	// messages.
	if h, err := sandbox.Prestart(sandbox.DefaultHelper(self), sandbox.DefaultNamespaces()); err == nil {
		helper.Store(h)
	}
}

// Helper returns the helper init started for this call (nil: none), once.
// The caller discards it if no call takes it.
func Helper() *sandbox.Helper { return helper.Swap(nil) }
