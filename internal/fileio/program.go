package fileio

import (
	"fmt"
	"os"
	"syscall"
)

// ExecutableID identifies the running program's file (path, size, time,
// inode): a rebuilt or replaced toolsrv has another. "" if it cannot be
// told.
func ExecutableID() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%s %d %d %d", exe, fi.Size(), fi.ModTime().UnixNano(), ino)
}
