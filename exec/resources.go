package exec

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// Limits are a call's resource limits.
type Limits struct {
	// Processes is the most processes (threads count) the tool and
	// everything it starts may have at once.
	Processes int `json:"processes"`
	// Memory is the most private writable memory (RLIMIT_DATA: heap, stacks,
	// anonymous mappings) of each of the tool's processes, in bytes.
	Memory int64 `json:"memory"`
	// FileSize is the largest file a process of the call may write
	// (RLIMIT_FSIZE), in bytes.
	FileSize int64 `json:"fileSize"`
	// TempSize is the size of the call's private temporary directory
	// ($TMPDIR, $HOME), a tmpfs in its mount namespace, in bytes.
	TempSize int64 `json:"tempSize"`
}

// within is l with each unset (zero) field taken from def, and each
// field capped by most: a call's limits from what a tool asks for.
func (l Limits) within(def, most Limits) Limits {
	pick := func(v, d, m int64) int64 {
		if v <= 0 {
			v = d
		}
		return min(v, m)
	}
	return Limits{
		Processes: int(pick(int64(l.Processes), int64(def.Processes), int64(most.Processes))),
		Memory:    pick(l.Memory, def.Memory, most.Memory),
		FileSize:  pick(l.FileSize, def.FileSize, most.FileSize),
		TempSize:  pick(l.TempSize, def.TempSize, most.TempSize),
	}
}

// Defaults of Options.
const (
	// DefaultProcesses is a call's process limit unless the tool asks for
	// another. A root toolsrv limits through the PID namespace's pid_max
	// (sandbox.PidMax: about 300 more than the limit).
	DefaultProcesses = 256
	// DefaultMemory is a call's per-process memory limit unless the tool
	// asks for another (2 GiB).
	DefaultMemory = 2 << 30
	// DefaultMaxProcesses caps what a tool may ask for.
	DefaultMaxProcesses = 4096
	// DefaultFileSize is the largest file a call may write unless the tool
	// asks for another (1 GiB); DefaultMaxFileSize caps what it may ask
	// for (64 GiB).
	DefaultFileSize    = 1 << 30
	DefaultMaxFileSize = 64 << 30
	// DefaultTempSize is the size of a call's temporary directory unless
	// the tool asks for another (1 GiB of tmpfs, in memory: it counts
	// against the machine's memory, not the call's).
	DefaultTempSize = 1 << 30
)

// DefaultMaxTempSize caps the temporary directory a tool may ask for: a
// quarter of the machine's memory (at least DefaultTempSize).
func DefaultMaxTempSize() int64 {
	return max(totalMemory()/4, DefaultTempSize)
}

// totalMemory is the machine's memory in bytes (0 when unknown).
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// DefaultMaxMemory caps what a tool may ask for: half the machine's memory
// (at least DefaultMemory).
func DefaultMaxMemory() int64 {
	return max(totalMemory()/2, DefaultMemory)
}

// limitsFor is a call's limits: the tool's own, else the defaults, each
// within the server's caps.
func (r *Runner) limitsFor(t *registry.Tool) Limits {
	return Limits(t.Limits).within(r.opts.Limits, r.opts.MaxLimits)
}

// processBudget keeps the server room to work: the process limits of the
// calls running at once add up to at most a quarter of what the machine
// (pid_max) and the user (RLIMIT_NPROC) allow; a call that would exceed it
// waits. One fork bomb, or many calls at once, can then never take the
// processes and threads the server itself needs.
func defaultProcessBudget() int64 {
	budget := int64(1 << 20)
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n/4 < budget {
			budget = n / 4
		}
	}
	var lim unix.Rlimit
	if os.Geteuid() != 0 && unix.Getrlimit(unix.RLIMIT_NPROC, &lim) == nil && lim.Cur != unix.RLIM_INFINITY {
		if n := int64(lim.Cur) / 4; n < budget {
			budget = n
		}
	}
	return max(budget, DefaultProcesses)
}

// admit waits until the call's processes fit in the budget. A call of a
// root toolsrv in a PID namespace counts for what its namespace may hold
// (sandbox.PidMax), which is more than its limit.
func (r *Runner) admit(ctx context.Context, l Limits) (func(), error) {
	w := int64(l.Processes)
	if w <= 0 || r.budget == nil {
		return func() {}, nil
	}
	if r.iso.root && r.iso.namespaces() {
		w = int64(sandbox.PidMax(l.Processes))
	}
	w = min(w, r.budgetSize)
	if err := r.budget.Acquire(ctx, w); err != nil {
		return nil, fmt.Errorf("waiting for room: the running calls already use the server's process budget (%d): %w", r.budgetSize, err)
	}
	return func() { r.budget.Release(w) }, nil
}
