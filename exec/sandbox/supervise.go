package sandbox

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// KillSignal is the signal that tells the helper to end the call now: it
// kills the tool and everything the tool started, then reports and exits.
// The server sends it after the grace period of a timeout, and it is the
// helper's parent-death signal, so a server that dies takes its calls with
// it.
const KillSignal = syscall.SIGUSR1

// supervisor is the helper's second half: the init of the call. It waits
// for the tool, reaps whatever is reparented to it, and makes sure nothing
// the tool started outlives the call: as the init of the call's PID
// namespace (pidNS), killing everything is one kill(-1); otherwise the
// helper is a child subreaper and kills its descendants one generation at
// a time until none is left.
type supervisor struct {
	pidNS  bool
	killed atomic.Bool
}

// run waits for the tool (pid) and returns how it ended. It must run on
// the thread that started the tool (HelperMain locks it): Landlock gives
// each thread of the helper a domain of its own, and a signal may only go
// to processes in the sender's domain, which is that thread's.
func (s *supervisor) run(pid int) Status {
	// A signal reaches the helper on any thread; the handler only wakes the
	// supervising thread through this pipe.
	wake, wakeW, err := os.Pipe()
	if err != nil {
		wake = nil
	}
	sigs := make(chan os.Signal, 4)
	// SIGTERM, SIGINT and SIGHUP reach the tool directly (it is in the
	// helper's process group); the helper must not die of them and must
	// not ignore them either (an ignored signal stays ignored in programs
	// it starts). KillSignal ends the call.
	signal.Notify(sigs, KillSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			if sig == KillSignal && s.killed.CompareAndSwap(false, true) && wakeW != nil {
				wakeW.Write([]byte{1})
			}
		}
	}()
	pidfd, perr := unix.PidfdOpen(pid, 0)
	var st *Status
	reap := func(flags int) bool {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, flags, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || wpid <= 0 {
				return err == nil // false: no child left
			}
			if wpid == pid {
				v := statusOf(ws)
				st = &v
			}
			if flags != 0 {
				continue // WNOHANG: collect every zombie there is
			}
			return true
		}
	}
	// While the tool runs: wait for it to end or for KillSignal, reaping
	// adopted orphans now and then.
	for st == nil && !s.killed.Load() {
		var fds []unix.PollFd
		if perr == nil {
			fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		}
		if wake != nil {
			fds = append(fds, unix.PollFd{Fd: int32(wake.Fd()), Events: unix.POLLIN})
		}
		timeout := 500
		if perr != nil {
			timeout = 20 // no pidfd (Linux < 5.3): poll for the tool's end
		}
		if _, err := unix.Poll(fds, timeout); err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
		reap(syscall.WNOHANG)
	}
	// Then end everything that is left, one generation at a time (the
	// killed processes' children come to the helper).
	for {
		s.killRest()
		if !reap(0) {
			break
		}
	}
	signal.Stop(sigs)
	close(sigs)
	if perr == nil {
		unix.Close(pidfd)
	}
	if st == nil {
		st = &Status{Exit: -1, Signal: int(syscall.SIGKILL)}
	}
	st.Killed = s.killed.Load()
	return *st
}

// killRest kills every process of the call but the helper.
func (s *supervisor) killRest() {
	if s.pidNS {
		// In a PID namespace, kill(-1) reaches every process in it except
		// its init, the helper.
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	for _, pid := range children() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// children lists the helper's child processes (a subreaper's children
// include the orphans it adopted).
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// becomeSubreaper makes orphans of the tool's processes the helper's
// children instead of init's, so that they can be found and killed.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
