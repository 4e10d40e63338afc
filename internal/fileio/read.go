package fileio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error of a path that is not a regular file
// (a directory, a named pipe, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error of a file longer than the limit.
var ErrTooLarge = errors.New("file too large")

// OpenRegular opens path for reading without blocking and returns it only if
// the opened descriptor is a regular file; fi is that descriptor's status.
// Symlinks are followed. Errors are *fs.PathError values: errors.Is works with
// fs.ErrNotExist, fs.ErrPermission and ErrNotRegular.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	// A path that already says it is not a regular file is not opened at
	// all: opening some devices has side effects.
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	return openChecked(path)
}

// openChecked opens path without blocking and checks the descriptor.
func openChecked(path string) (*os.File, fs.FileInfo, error) {
	// O_NONBLOCK: if a named pipe was swapped in after the Stat, the open
	// returns at once instead of waiting for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, openFailed(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, fi.Mode())
	}
	return f, fi, nil
}

// ReadRegular returns the contents of the regular file at path, or an error
// wrapping ErrTooLarge if it holds more than limit bytes (limit >= 0). It never
// reads more than limit+1 bytes, whatever the file claims its size is.
func ReadRegular(path string, limit int64) ([]byte, error) {
	data, _, err := ReadRegularInfo(path, limit)
	return data, err
}

// ReadRegularInfo is ReadRegular that also returns the file's status as
// the opened descriptor had it (its size and modification time).
func ReadRegularInfo(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	return readOpened(f, fi, path, limit)
}

func readOpened(f *os.File, fi fs.FileInfo, path string, limit int64) ([]byte, fs.FileInfo, error) {
	defer f.Close()
	if fi.Size() > limit {
		return nil, nil, tooLarge(path, limit)
	}
	data, err := readBounded(f, path, fi.Size(), limit)
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

func readBounded(r io.Reader, name string, hint, limit int64) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	// One byte more than the hint lets a file of exactly that size end
	// without growing the buffer; the hint never exceeds the limit.
	size := min(hint, limit, math.MaxInt-1) + 1
	if size < 512 {
		size = 512
	}
	data := make([]byte, 0, size)
	lr := io.LimitReader(r, min(limit, math.MaxInt64-1)+1)
	for {
		n, err := lr.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(name, limit)
	}
	return data, nil
}

// openFailed is the error of an open of path that failed with err: a
// socket (ENXIO) or a device without a driver cannot be opened at all, so
// it says what the path is rather than how the open failed.
func openFailed(path string, err error) error {
	if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	return err
}

func notRegular(path string, m fs.FileMode) error {
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(m))}
}

func tooLarge(path string, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a plain file"
}
