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
//
// It takes the helper's signals from the start of HelperMain on
// (newSupervisor), not from when the tool runs: the server's SIGTERM and
// KillSignal may come while the helper is still starting (a timeout of a
// few milliseconds, a loaded machine), and Go's default for a signal
// nobody asked for is to end the program. Outside a PID namespace that
// left the tool running without its helper. A signal that comes earlier
// still, while the Go runtime starts, ends the helper before it has
// started anything (as a namespace's init, which the kernel protects from
// its own signals, with exit status 2); the server reports such a call
// as killed.
type supervisor struct {
	pidNS bool
	sigs  chan os.Signal
	// killed: KillSignal came (the server ends the call).
	killed atomic.Bool
	// term: the first SIGTERM, SIGINT or SIGHUP that came (0: none). It is
	// meant for the tool, which gets it from the server directly (it is in
	// the helper's process group) once it runs; one that comes before the
	// tool is started means the tool is not started at all.
	term atomic.Int32
	// wakeW wakes the supervising thread when KillSignal comes.
	wake, wakeW *os.File
}

// newSupervisor starts taking the helper's signals. HelperMain calls it
// first of all.
func newSupervisor() *supervisor {
	s := &supervisor{sigs: make(chan os.Signal, 8)}
	// SIGTERM, SIGINT and SIGHUP reach the tool directly (it is in the
	// helper's process group); the helper must not die of them and must
	// not ignore them either (an ignored signal stays ignored in programs
	// it starts). KillSignal ends the call.
	signal.Notify(s.sigs, KillSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	return s
}

// listen handles the signals that came and will come: it runs after
// CloseInherited, which would close the wake pipe.
func (s *supervisor) listen() {
	wake, wakeW, err := os.Pipe()
	if err == nil {
		s.wake, s.wakeW = wake, wakeW
	}
	// What came before is handled now, so that ending sees it.
	for drained := false; !drained; {
		select {
		case sig := <-s.sigs:
			s.handle(sig)
		default:
			drained = true
		}
	}
	go func() {
		for sig := range s.sigs {
			s.handle(sig)
		}
	}()
}

// handle records one signal.
func (s *supervisor) handle(sig os.Signal) {
	if sig == KillSignal {
		if s.killed.CompareAndSwap(false, true) && s.wakeW != nil {
			s.wakeW.Write([]byte{1})
		}
		return
	}
	if n, ok := sig.(syscall.Signal); ok {
		s.term.CompareAndSwap(0, int32(n))
	}
}

// ending reports whether the call is being ended (KillSignal or a
// terminating signal came), and the Status of a tool that is then not
// started.
func (s *supervisor) ending() (Status, bool) {
	switch {
	case s.killed.Load():
		return Status{Exit: -1, Signal: int(syscall.SIGKILL), Killed: true}, true
	case s.term.Load() != 0:
		return Status{Exit: -1, Signal: int(s.term.Load()), Killed: true}, true
	}
	return Status{}, false
}

// run waits for the tool (pid) and returns how it ended; ended is its
// status when it has already been reaped (it died before it could run).
// It must run on the thread that started the tool (HelperMain locks it):
// Landlock gives each thread of the helper a domain of its own, and a
// signal may only go to processes in the sender's domain, which is that
// thread's.
func (s *supervisor) run(pid int, ended *Status) Status {
	pidfd, perr := unix.PidfdOpen(pid, 0)
	st := ended
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
		if s.wake != nil {
			fds = append(fds, unix.PollFd{Fd: int32(s.wake.Fd()), Events: unix.POLLIN})
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
	// The signals stay taken: the helper reports and exits next, and a
	// late SIGTERM must not end it before it has reported. (signal.Stop
	// also waits for the signal loop to go idle: a quarter of a
	// millisecond per call.)
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
