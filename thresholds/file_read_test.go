package thresholds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// TestReadFileRefusesWhatIsNotARegularFile: a named pipe (or a symlink to
// one) named by --thresholds or $TOOLSRV_THRESHOLDS used to block the
// command forever; a huge file was read whole.
func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(`{"format":"toolsrv-thresholds",`+strings.Repeat(" ", 2<<20)+`}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
	}{
		{"named pipe", fifo, fileio.ErrNotRegular},
		{"symlink to a named pipe", link, fileio.ErrNotRegular},
		{"2 MiB, over MaxFileSize", huge, fileio.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 2)
			go func() { _, err := ReadFile(tc.path); done <- err }()
			go func() {
				_, _, err := Load("e", LoadOptions{Path: tc.path, Getenv: func(string) string { return "" }})
				done <- err
			}()
			for range 2 {
				select {
				case err := <-done:
					if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
						t.Errorf("error = %v, want %v naming %s", err, tc.want, tc.path)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("reading the thresholds file still blocks after 30 s")
				}
			}
		})
	}
}
