package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMetaFilesThatAreNotRegular: a .meta that is a named pipe, a symlink to
// one, or a symlink to a device is one problem ("not a regular file"); Load
// finishes and the other tools are served.
func TestMetaFilesThatAreNotRegular(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh"}`, false)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.meta"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(elsewhere, "pipe")
	if err := syscall.Mkfifo(target, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"linked": target, "zero": "/dev/zero"} {
		if err := os.Symlink(to, filepath.Join(dir, name+".meta")); err != nil {
			t.Fatal(err)
		}
	}
	r := New(Options{Dirs: []string{dir}})
	var err error
	within(t, "Load", func() { err = r.Load(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	cat := r.Catalog()
	if _, ok := cat.Get("ok"); !ok || len(cat.Tools) != 1 {
		t.Errorf("tools = %v, want just ok", names(cat))
	}
	for _, tc := range []struct{ name, kind string }{{"fifo", "a named pipe"}, {"linked", "a named pipe"}, {"zero", "a character device"}} {
		ps := problemsOfFile(cat, filepath.Join(dir, tc.name+".meta"))
		if len(ps) != 1 || !strings.Contains(ps[0].Msg, "not a regular file") || !strings.Contains(ps[0].Msg, tc.kind) {
			t.Errorf("%s: problems %v, want one saying it is not a regular file (%s)", tc.name, ps, tc.kind)
		}
	}
}

// TestMetaSwappedForAPipeDuringLoad: a symlinked .meta flipped between a
// regular file and a named pipe while the registry loads. Checking the path
// and then opening it blocked forever whenever the flip landed in between
// (the open of a pipe waits for a writer); every Load must now finish, with
// the tool either valid or "not a regular file".
func TestMetaSwappedForAPipeDuringLoad(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeTool(t, dir, "ok", `{"description":"fine","cmd":"/bin/sh"}`, false)
	regular := filepath.Join(elsewhere, "flip.json")
	if err := os.WriteFile(regular, []byte(`{"description":"flip","cmd":"/bin/sh"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(elsewhere, "flip.pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "flip.meta")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flipped := make(chan error, 1)
	go func() {
		defer close(flipped)
		tmp := filepath.Join(dir, ".flip.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			to := regular
			if i%2 == 1 {
				to = pipe
			}
			os.Remove(tmp)
			if err := os.Symlink(to, tmp); err != nil {
				flipped <- err
				return
			}
			if err := os.Rename(tmp, link); err != nil {
				flipped <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-flipped; err != nil {
			t.Error(err)
		}
	}()
	within(t, "2,000 Loads of a directory with a .meta flipping to a pipe", func() {
		for i := 0; i < 2000; i++ {
			r := New(Options{Dirs: []string{dir}})
			if err := r.Load(context.Background()); err != nil {
				t.Error(err)
				return
			}
			cat := r.Catalog()
			if _, ok := cat.Get("ok"); !ok {
				t.Errorf("load %d: ok is not served", i)
				return
			}
			if _, ok := cat.Get("flip"); ok {
				continue
			}
			ps := problemsOfFile(cat, link)
			if len(ps) != 1 || !strings.Contains(ps[0].Msg, "not a regular file") {
				t.Errorf("load %d: flip is neither served nor refused as not regular: %v", i, fmt.Sprint(ps))
				return
			}
		}
	})
}
