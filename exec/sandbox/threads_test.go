package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// threadProbeArg runs this test binary as threadProbe (see TestMain).
const threadProbeArg = "thread-probe"

// threadProbe is a fresh process that holds hold threads as the helper
// does (none: only GOMAXPROCS 1), then makes the runtime need need threads
// at once (lockThreads), and prints how many threads the process had
// before and while they were needed.
func threadProbe(hold, need int) {
	runtime.LockOSThread() // as HelperMain: the main thread is the tool's
	if hold > 0 {
		holdThreads(hold)
	} else {
		runtime.GOMAXPROCS(1)
	}
	before, during := tasks(), 0
	lockThreads(need, func() { during = tasks() })
	fmt.Println(before, during)
}

// tasks counts the threads of this process.
func tasks() int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return -1
	}
	return len(ents)
}

// Threads held before the tool starts are the ones the runtime uses later:
// needing most of them again starts no thread (a thread the runtime cannot
// start under the call's process limit is fatal). Without them, the same
// need starts threads, so the probe can tell.
func TestHoldThreads(t *testing.T) {
	const need = heldThreads - 2 // see heldThreads
	for _, tc := range []struct {
		hold   int
		starts bool // threads are started when needed
	}{
		{hold: 0, starts: true},
		{hold: heldThreads, starts: false},
	} {
		t.Run(fmt.Sprintf("hold%d", tc.hold), func(t *testing.T) {
			out, err := exec.Command(os.Args[0], threadProbeArg, fmt.Sprint(tc.hold), fmt.Sprint(need)).CombinedOutput()
			if err != nil {
				t.Fatalf("probe: %v\n%s", err, out)
			}
			var before, during int
			if _, err := fmt.Sscan(string(out), &before, &during); err != nil || before <= 0 {
				t.Fatalf("probe printed %q: %v", out, err)
			}
			// Without held threads the locked goroutines need new ones (all but
			// one, which takes an idle thread);
			// with them, none does, though a loaded machine's scheduler
			// may start one of its own meanwhile (seen at load ~160).
			if started := during - before; tc.starts && started < 2 || !tc.starts && started > 1 {
				t.Errorf("holding %d threads: %d threads before %d goroutines locked one each, %d while they did; want new threads: %v",
					tc.hold, before, need, during, tc.starts)
			}
		})
	}
}
