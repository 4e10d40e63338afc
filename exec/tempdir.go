package exec

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix starts the name of every call's private temporary directory:
// toolsrv-call-PID-RANDOM, PID being the server's (or toolsrv call's).
const tempPrefix = "toolsrv-call-"

// legacyTempAge is how old a temporary directory of the earlier name form
// (no PID) must be before a sweep removes it.
const legacyTempAge = time.Hour

// tempDirs makes the calls' temporary directories under root.
type tempDirs struct {
	root string
	pid  int
}

func (d tempDirs) make() (string, error) {
	return os.MkdirTemp(d.root, fmt.Sprintf("%s%d-", tempPrefix, d.pid))
}

// sweep removes the temporary directories that calls of dead toolsrv
// processes left behind (a server killed with SIGKILL cannot clean up).
// A directory whose process is alive is left alone, whoever that process
// is now; a directory of another user cannot be ours. A toolsrv in a
// nested PID namespace (a container, a test's sandbox) does not sweep:
// the processes of the namespaces around it are invisible to it, so it
// cannot tell a live call's directory in a shared temporary directory
// from a dead one (it removed the directories of live calls).
func (d tempDirs) sweep(log *slog.Logger) {
	if !inInitialPIDNamespace() {
		return
	}
	ents, err := os.ReadDir(d.root)
	if err != nil {
		return
	}
	uid := os.Getuid()
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		p := filepath.Join(d.root, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		pidStr, _, hasPID := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		switch {
		case hasPID && err == nil && pid > 0:
			if processAlive(pid) {
				continue
			}
		case time.Since(fi.ModTime()) < legacyTempAge:
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			log.Warn("cannot remove a stale call directory", "dir", p, "err", err)
		} else {
			log.Debug("removed a stale call directory", "dir", p)
		}
	}
}

// processAlive reports whether a process with this PID exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// initialPIDNamespace is the inode of the initial PID namespace
// (PROC_PID_INIT_INO).
const initialPIDNamespace = 0xEFFFFFFC

// inInitialPIDNamespace reports whether this process sees every process
// of the machine (it is not in a nested PID namespace).
// (/proc/self, not /proc/PID: in a nested namespace that still sees the
// machine's /proc, its own PID names another process there).
func inInitialPIDNamespace() bool {
	var st syscall.Stat_t
	return syscall.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == initialPIDNamespace
}
