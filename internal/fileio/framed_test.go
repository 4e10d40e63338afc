package fileio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type testHeader struct {
	BodyCheck
	Program string `json:"program"`
}

// A body written in one piece or in many reads back whole, with the
// header, and a damaged one is refused.
func TestWriteFramed(t *testing.T) {
	dir := t.TempDir()
	body := bytes.Repeat([]byte("toolsrv \x00\xff"), 100_000)
	for _, tc := range []struct {
		name  string
		write func(path string, h *testHeader) error
	}{
		{"one piece", func(path string, h *testHeader) error {
			return WriteFramed(path, 0o600, "test 1\n", h, func(w io.Writer) error { _, err := w.Write(body); return err })
		}},
		{"many pieces", func(path string, h *testHeader) error {
			return WriteFramed(path, 0o600, "test 1\n", h, func(w io.Writer) error {
				for rest := body; len(rest) > 0; rest = rest[min(len(rest), 4097):] {
					if _, err := w.Write(rest[:min(len(rest), 4097)]); err != nil {
						return err
					}
				}
				return nil
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := tc.write(path, &testHeader{Program: strings.Repeat("/a path\"\\", 50)}); err != nil {
				t.Fatal(err)
			}
			var h testHeader
			got, err := ReadFramed(path, "test 1\n", &h, 1<<30)
			if err != nil || !bytes.Equal(got, body) || h.Program != strings.Repeat("/a path\"\\", 50) {
				t.Fatalf("read back: %v, %d bytes (want %d), header %+v", err, len(got), len(body), h)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-5] ^= 1
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadFramed(path, "test 1\n", &h, 1<<30); err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Fatalf("a damaged body read back: %v", err)
			}
			if _, err := ReadFramed(filepath.Join(dir, "none"), "test 1\n", &h, 1<<30); !errors.Is(err, ErrNoFile) {
				t.Fatalf("no file: %v", err)
			}
		})
	}
}
