package exec

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// liveCall is a call whose helper is running: what the 9P server needs to
// tell which call a connecting process belongs to.
type liveCall struct {
	pid   int    // the helper, as the server sees it
	pidfd int    // the helper's pidfd (-1 if the kernel gave none)
	pidNS uint64 // inode of the call's PID namespace (0 without one)
	cc    CallContext
}

// callTable holds the live calls.
type callTable struct {
	mu    sync.Mutex
	byPID map[int]*liveCall
}

func newCallTable() *callTable { return &callTable{byPID: map[int]*liveCall{}} }

func (t *callTable) add(c *liveCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byPID[c.pid] = c
}

func (t *callTable) remove(pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byPID, pid)
}

// byNS finds the live call whose PID namespace has inode ns.
func (t *callTable) byNS(ns uint64) *liveCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.byPID {
		if c.pidNS != 0 && c.pidNS == ns {
			return c
		}
	}
	return nil
}

func (t *callTable) get(pid int) *liveCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byPID[pid]
}

// alive reports whether the process behind pidfd still runs (a zombie
// counts as running until it is reaped).
func pidfdAlive(pidfd int) bool {
	return pidfd >= 0 && unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil
}

// nsInode is the inode of process pid's namespace of kind ("pid", "user",
// "net", ...).
func nsInode(pid int, kind string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/%s", pid, kind), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// parentOf reads process pid's parent.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no PPid in /proc/%d/status", pid)
}
