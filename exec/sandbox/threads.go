package sandbox

import (
	"runtime"
	"sync"
)

// heldThreads is how many idle threads the helper makes its runtime hold
// before it starts the tool (holdThreads). With GOMAXPROCS 1, while the
// tool runs the supervisor needs its own locked thread (blocked in poll
// and wait4) and one thread to run the signal loop and the collector on
// the P meanwhile, besides sysmon, the template thread and the signal
// thread, which exist by then, and the thread that starts the tool takes
// one and ends with it (launch). Held threads cover the rest with room to
// spare: TestHoldThreads checks that needing heldThreads-2 threads at once
// starts none (needing all of them at once sometimes starts one more, for
// the scheduler's own turn).
const heldThreads = 7

// holdThreads makes the Go runtime start the threads the helper will need
// while the tool runs, now, and keep them idle. The helper shares the
// call's process limit with the tool (RLIMIT_NPROC in the call's user
// namespace, the PID namespace's pid_max for root): a fork bomb fills
// every slot, and a thread the runtime then fails to start is a fatal
// error that ended the helper with exit status 2 while the bomb ran,
// without a report (its standard error is /dev/null by then). The Go
// runtime never ends an idle thread (golang/go#14592), so threads started
// here are the helper's for good: helperTasks in the limit is room the
// helper holds, not room it hopes to find.
//
// Each of n goroutines locks a thread of its own and waits until all n
// hold one; then they unlock and end, and their threads go to the
// runtime's idle list. It runs before the call's order is read, so that a
// prestarted helper pays for it off the call's path.
func holdThreads(n int) {
	runtime.GOMAXPROCS(1)
	lockThreads(n, nil)
}

// lockThreads has n goroutines lock a thread each, calls held (if not
// nil) once all n hold one, then lets them unlock and end.
func lockThreads(n int, held func()) {
	var locked, done sync.WaitGroup
	release := make(chan struct{})
	locked.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	if held != nil {
		held()
	}
	close(release)
	done.Wait()
}
