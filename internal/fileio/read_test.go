package fileio

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// finish runs f and fails the test if it has not returned after 30 s: a read
// that blocks on a named pipe would otherwise hang the test binary.
func finish(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("still blocked after 30 s")
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	goodLink := filepath.Join(dir, "goodlink")
	if err := os.Symlink(write("target", "via link"), goodLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		limit   int64
		want    string
		wantErr error
		msg     string
	}{
		{"regular", write("ok", "hello"), 10, "hello", nil, ""},
		{"exactly the limit", write("ten", "0123456789"), 10, "0123456789", nil, ""},
		{"empty", write("empty", ""), 10, "", nil, ""},
		{"one byte over", write("eleven", "0123456789A"), 10, "", ErrTooLarge, "more than 10 bytes"},
		{"zero limit", write("one", "x"), 0, "", ErrTooLarge, "more than 0 bytes"},
		{"symlink to a regular file", goodLink, 100, "via link", nil, ""},
		{"named pipe", fifo, 100, "", ErrNotRegular, "a named pipe"},
		{"symlink to a named pipe", link, 100, "", ErrNotRegular, "a named pipe"},
		{"directory", dir, 100, "", ErrNotRegular, "a directory"},
		{"character device", "/dev/zero", 100, "", ErrNotRegular, "a character device"},
		{"socket", sock, 100, "", ErrNotRegular, "a socket"},
		{"missing", filepath.Join(dir, "nope"), 100, "", fs.ErrNotExist, ""},
	}
	// ReadListedRegular skips the check before the open (the caller's
	// listing said "regular"): what the listing said can be stale, so it
	// must refuse the same things, without blocking.
	readers := map[string]func(string, int64) ([]byte, error){
		"ReadRegular": ReadRegular,
		"ReadListedRegular": func(p string, limit int64) ([]byte, error) {
			b, _, err := ReadListedRegular(p, limit)
			return b, err
		},
	}
	for rname, read := range readers {
		for _, tc := range tests {
			t.Run(rname+"/"+tc.name, func(t *testing.T) {
				var got []byte
				var err error
				finish(t, func() { got, err = read(tc.path, tc.limit) })
				if tc.wantErr == nil {
					if err != nil || string(got) != tc.want {
						t.Fatalf("ReadRegular = %q, %v; want %q", got, err, tc.want)
					}
					return
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ReadRegular error = %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path) {
					t.Errorf("error %q should name %s and say %q", err, tc.path, tc.msg)
				}
			})
		}
	}
}

// TestReadRegularPipeWithWriter: even a named pipe that has a writer (so an
// ordinary open would succeed and the read would return data) is refused.
func TestReadRegularPipeWithWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte(`{"description":"from a pipe"}`))
	var got []byte
	finish(t, func() { got, err = ReadRegular(fifo, 1<<20) })
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadRegular = %q, %v; want ErrNotRegular", got, err)
	}
}

func TestOpenRegularChecksTheDescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, fi, err := OpenRegular(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !fi.Mode().IsRegular() || fi.Size() != 3 {
		t.Errorf("info = %v size %d", fi.Mode(), fi.Size())
	}
	b := make([]byte, 8)
	if n, _ := f.Read(b); string(b[:n]) != "abc" {
		t.Errorf("read %q", b[:n])
	}
}

// A file whose size says nothing (procfs gives 0) is read to its end, and
// within the limit.
func TestReadListedRegularSizeZero(t *testing.T) {
	want, err := os.ReadFile("/proc/self/limits") // the same for every read
	if err != nil || len(want) == 0 {
		t.Fatalf("no /proc/self/limits: %v", err)
	}
	got, fi, err := ReadListedRegular("/proc/self/limits", 1<<20)
	if err != nil || string(got) != string(want) || fi.Size() != 0 {
		t.Fatalf("ReadListedRegular = %d bytes (size %v), %v; want the %d bytes os.ReadFile read (size 0)", len(got), fi, err, len(want))
	}
	if _, _, err := ReadListedRegular("/proc/self/limits", 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("with a 10-byte limit: %v, want ErrTooLarge", err)
	}
}
