package fileio

import (
	"errors"
	"io/fs"
	"math"
	"os"
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
		// A socket (ENXIO) or a device without a driver cannot be opened
		// at all: say what it is rather than how the open failed.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, nil, notRegular(path, fi.Mode())
		}
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
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
	if limit < 0 {
		limit = 0
	}
	if st.Size > limit {
		return nil, nil, tooLarge(path, limit)
	}
	limit = min(limit, math.MaxInt-1)
	data := make([]byte, 0, max(512, min(st.Size, limit)+1))
	for {
		// Never more than limit+1 bytes, whatever the file claims its size is.
		n, err := syscall.Read(fd, data[len(data):min(int64(cap(data)), limit+1)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		data = data[:len(data)+n]
		if n == 0 || int64(len(data)) == st.Size {
			break
		}
		if int64(len(data)) > limit {
			return nil, nil, tooLarge(path, limit)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if int64(len(data)) > limit {
		return nil, nil, tooLarge(path, limit)
	}
	return data, fi, nil
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
