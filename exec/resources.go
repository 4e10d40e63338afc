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
)

// DefaultMaxMemory caps what a tool may ask for: half the machine's memory
// (at least DefaultMemory).
func DefaultMaxMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		if half := int64(si.Totalram) * int64(si.Unit) / 2; half > DefaultMemory {
			return half
		}
	}
	return DefaultMemory
}

// limitsFor is a call's limits: the tool's own, else the defaults, each
// within the server's caps.
func (r *Runner) limitsFor(t *registry.Tool) Limits {
	l := r.opts.Limits
	if t.Limits.Processes > 0 {
		l.Processes = t.Limits.Processes
	}
	if t.Limits.Memory > 0 {
		l.Memory = t.Limits.Memory
	}
	l.Processes = min(l.Processes, r.opts.MaxLimits.Processes)
	l.Memory = min(l.Memory, r.opts.MaxLimits.Memory)
	return l
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
