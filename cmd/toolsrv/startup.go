package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/toolsrv/toolsrv/engine"
)

// startupHeap is the heap the garbage collector lets start-up grow to
// before it collects (see startupGC), unless the machine is small
// (startupHeapLimit): 10k tools load in under 200 MB without a collection;
// 100k tools collect a few times near it. It bounds start-up's RSS (0.95 GB
// at 100k tools); a smaller limit makes the collector run again and again
// (bench/RESULTS.md, "Start-up's heap limit": at 800 MiB 2.8 s instead of
// 2.6 s, at 750 MiB 3.1-3.3 s; at 1 GiB 2.4 s but 1.08 GB).
const startupHeap = 896 << 20

// startupHeapLimit is startupHeap, or a quarter of the memory the machine
// (or this process's cgroup v2) has when that is less.
func startupHeapLimit() int64 {
	limit := int64(startupHeap)
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil && si.Totalram > 0 {
		limit = min(limit, int64(si.Totalram)*int64(si.Unit)/4)
	}
	if cg := cgroupMemoryMax(); cg > 0 {
		limit = min(limit, cg/4)
	}
	return limit
}

// cgroupMemoryMax is this process's cgroup v2 memory.max, or 0 when there
// is none (no limit, cgroup v1, unreadable).
func cgroupMemoryMax() int64 {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(self), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", path, "memory.max"))
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil { // "max"
			return 0
		}
		return n
	}
	return 0
}

// startupGC turns the garbage collector's proportional pacing off while an
// engine opens, collecting only when the heap reaches startupHeapLimit. Loading
// a catalog allocates a lot that stays live (every tool, document and
// posting list), so the default pacing (a collection each time the heap
// doubles) spends a quarter of start-up's CPU scanning memory that is not
// garbage. The returned function restores what was set before; it is safe
// to call more than once. A user who set GOGC or GOMEMLIMIT keeps their
// choice. Not for concurrent use (the settings are the process's).
func startupGC(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldPercent := debug.SetGCPercent(-1)
	oldLimit := debug.SetMemoryLimit(startupHeapLimit())
	var once sync.Once
	return func() {
		once.Do(func() {
			debug.SetGCPercent(oldPercent)
			debug.SetMemoryLimit(oldLimit)
		})
	}
}

// newEngine opens the engine under the start-up garbage-collection regime
// (see startupGC): every subcommand that answers from one engine (ls, show,
// validate, rank, eval, call, serve, mcp) opens it here; tune and bench
// build many indexes and keep the default pacing throughout.
func newEngine(ctx context.Context, env *cliEnv, opts engine.Options) (*engine.Engine, error) {
	if env.startupGC {
		restore := startupGC(env.getenv)
		defer restore()
	}
	return engine.New(ctx, opts)
}
