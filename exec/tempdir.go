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
// is now; a directory of another user cannot be ours.
func (d tempDirs) sweep(log *slog.Logger) {
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
