package main

import (
	"context"
	"runtime/debug"
	"sync"

	"github.com/toolsrv/toolsrv/engine"
)

// startupHeap is the heap the garbage collector lets start-up grow to
// before it collects (see startupGC): 10k tools load in about 300 MB
// without a collection; a larger catalog is collected at this size.
const startupHeap = 768 << 20

// startupGC turns the garbage collector's proportional pacing off until the
// engine is open, collecting only when the heap reaches startupHeap. Loading
// a catalog allocates a lot that stays live (every tool, document and
// posting list), so the default pacing (a collection each time the heap
// doubles) spends a quarter of start-up's CPU scanning memory that is not
// garbage. The returned function restores the default pacing; it is safe to
// call more than once. A user who set GOGC or GOMEMLIMIT keeps their choice.
func startupGC(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldPercent := debug.SetGCPercent(-1)
	oldLimit := debug.SetMemoryLimit(startupHeap)
	var once sync.Once
	return func() {
		once.Do(func() {
			debug.SetGCPercent(oldPercent)
			debug.SetMemoryLimit(oldLimit)
		})
	}
}

// opensEngine names the subcommands that open one engine (with newEngine)
// and then answer from it: start-up is most of their run. tune and bench
// build many indexes and keep the default pacing throughout.
func opensEngine(cmd string) bool {
	switch cmd {
	case "ls", "show", "validate", "rank", "eval", "call", "serve", "mcp":
		return true
	}
	return false
}

// newEngine opens the engine and then ends the start-up garbage-collection
// regime (see startupGC): every subcommand opens its engine here.
func newEngine(ctx context.Context, env *cliEnv, opts engine.Options) (*engine.Engine, error) {
	eng, err := engine.New(ctx, opts)
	if env.started != nil {
		env.started()
	}
	return eng, err
}
