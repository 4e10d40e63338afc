package exec

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// A helper prepared before its call (sandbox.Prepare) holds Landlock rules on the
// files its policy's paths named then, and mounts made over them; its
// call may use it only if they still name the same files (policyFiles)
// and its temporary directory is as made (tmpIntact).

// fileID is a path and the file it named: device and inode (0, 0: none).
type fileID struct {
	path     string
	dev, ino uint64
}

// tmpIntact says whether a prepared helper's temporary directory is the
// one made for it (was) and still empty. It is made before its call, and
// where no tmpfs covers it (no mount namespace, or no TempSize) a tool
// that may write where it lies could otherwise leave files in, or put
// another directory in place of, the next call's TMPDIR. The inode alone
// cannot tell: a directory made in place of a removed one may get its
// number; its change time is its own.
func tmpIntact(dir string, was dirStamp) bool {
	if was == (dirStamp{}) || stampOf(dir) != was {
		return false
	}
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// dirStamp is a directory's identity and last changes (stampOf).
type dirStamp struct {
	dev, ino     uint64
	ctime, mtime syscall.Timespec
}

// stampOf is dir's stamp (zero: not to be had).
func stampOf(dir string) dirStamp {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return dirStamp{}
	}
	return dirStamp{dev: st.Dev, ino: st.Ino, ctime: st.Ctim, mtime: st.Mtim}
}

// idOf is the file path names now (no inode: not there; all ones: there,
// but not to be looked at).
func idOf(path string) fileID {
	id := fileID{path: path}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err == nil {
		id.dev, id.ino = st.Dev, st.Ino
	} else if !errors.Is(err, syscall.ENOENT) {
		id.ino = ^uint64(0)
	}
	return id
}

// policyFiles are the files the paths of pol name now, but for the system
// paths (the rules of a prepared helper hold the inodes they had).
func policyFiles(pol sandbox.Policy) []fileID {
	paths := append([]string{pol.WorkDir}, pol.Exec...)
	paths = append(paths, pol.Read...)
	paths = append(paths, pol.Write...)
	paths = append(paths, pol.Protect...)
	out := make([]fileID, 0, len(paths))
	for _, p := range paths {
		out = append(out, idOf(p))
	}
	return out
}
