package fileio

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// ReadListedRegular is ReadRegularInfo for a path that its directory's
// listing just showed as a regular file (fs.DirEntry.Type): the check of the
// path before opening it is skipped, the check of the opened descriptor is
// not, so a named pipe or device swapped in since the listing is still
// refused without blocking.
//
// It reads catalogs of thousands of files at start-up, so it costs four
// system calls a file (open, fstat, read, close) where ReadRegularInfo
// costs seven: the descriptor is never an *os.File (which would try to
// register it with the poller, and give it a cleanup), and a read that
// returns exactly the size fstat gave ends the file without a second read
// to see the end. (A file that grew since its fstat was written to, which
// a watcher sees; a short read on a filesystem that gives them is read on
// as usual.)
func ReadListedRegular(path string, limit int64) ([]byte, fs.FileInfo, error) {
	fd, err := openNonblock(path)
	if err != nil {
		return nil, nil, openFailed(path, &fs.PathError{Op: "open", Path: path, Err: err})
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	fi := &statInfo{name: filepath.Base(path), st: st}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	if st.Size > max(limit, 0) {
		return nil, nil, tooLarge(path, max(limit, 0))
	}
	data, err := readBounded(&fdReader{fd: fd, left: st.Size}, path, st.Size, limit)
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// fdReader reads a descriptor; it reports the end of the file with the
// read that brings it to the size fstat gave (left), without a read more.
type fdReader struct {
	fd   int
	left int64
}

func (r *fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(r.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		if r.left -= int64(n); r.left == 0 {
			return n, io.EOF
		}
		return n, nil
	}
}

// openNonblock opens path read-only without blocking (a named pipe
// swapped in returns at once instead of waiting for a writer) and without
// becoming the controlling terminal, close-on-exec.
func openNonblock(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

// statInfo is an fs.FileInfo of an fstat, as os.Stat makes it.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (fi *statInfo) Name() string       { return fi.name }
func (fi *statInfo) Size() int64        { return fi.st.Size }
func (fi *statInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *statInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *statInfo) Sys() any           { return &fi.st }

func (fi *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if fi.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
