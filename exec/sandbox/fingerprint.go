package sandbox

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// A helper prepared before its call (Prepare) holds Landlock rules on the
// files its policy's paths named then, and mounts made over them; its
// call may use it only if they still name the same files (PolicyFiles)
// and its temporary directory is as made (TempIntact).

// FileID is a path and the file it named: device and inode (0, 0: none).
type FileID struct {
	path     string
	dev, ino uint64
}

// TempIntact says whether a prepared helper's temporary directory is the
// one made for it (was) and still empty. It is made before its call, and
// where no tmpfs covers it (no mount namespace, or no TempSize) a tool
// that may write where it lies could otherwise leave files in, or put
// another directory in place of, the next call's TMPDIR. The inode alone
// cannot tell: a directory made in place of a removed one may get its
// number; its change time is its own.
func TempIntact(dir string, was DirStamp) bool {
	if was == (DirStamp{}) || StampOf(dir) != was {
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

// DirStamp is a directory's identity and last changes (StampOf).
type DirStamp struct {
	dev, ino     uint64
	ctime, mtime syscall.Timespec
}

// StampOf is dir's stamp (zero: not to be had).
func StampOf(dir string) DirStamp {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return DirStamp{}
	}
	return DirStamp{dev: st.Dev, ino: st.Ino, ctime: st.Ctim, mtime: st.Mtim}
}

// idOf is the file path names now (no inode: not there; all ones: there,
// but not to be looked at).
func idOf(path string) FileID {
	id := FileID{path: path}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err == nil {
		id.dev, id.ino = st.Dev, st.Ino
	} else if !errors.Is(err, syscall.ENOENT) {
		id.ino = ^uint64(0)
	}
	return id
}

// PolicyFiles are the files the paths of pol name now, but for the system
// paths (the rules of a prepared helper hold the inodes they had).
func PolicyFiles(pol Policy) []FileID {
	paths := append([]string{pol.WorkDir}, pol.Exec...)
	paths = append(paths, pol.Read...)
	paths = append(paths, pol.Write...)
	paths = append(paths, pol.Protect...)
	out := make([]FileID, 0, len(paths))
	for _, p := range paths {
		out = append(out, idOf(p))
	}
	return out
}
