package fileio

import (
	"bufio"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// age makes path look unwritten for longer than StaleAfter.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-StaleAfter - time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// temps lists the temporary files of WriteAtomic in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if isTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// Only old, unlocked files named as WriteAtomic names its temporary
// files are removed.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	files := []struct {
		name  string
		old   bool
		stale bool
	}{
		{".index-0123456789abcdef.gob.2837461.tmp", true, true}, // a killed writer's
		{".schemas.known.17.tmp", true, true},
		{".index-0123456789abcdef.gob.99.tmp", false, false}, // just created: its writer may not have locked it yet
		{"index-0123456789abcdef.gob", true, false},
		{".index.gob.tmp", true, false},
		{".index.gob.12x.tmp", true, false},
		{"index.gob.12.tmp", true, false},
		{".12.tmp", true, false},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("half a cache"), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.old {
			age(t, p)
		}
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, ".passwd.1.tmp"))
	removed, err := RemoveStaleTemps(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Lstat(filepath.Join(dir, f.name))
		if gone := os.IsNotExist(err); gone != f.stale || slices.Contains(removed, f.name) != f.stale {
			t.Errorf("%s: removed %v (reported %v), want %v", f.name, gone, removed, f.stale)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, ".passwd.1.tmp")); err != nil {
		t.Errorf("a symlink was removed: %v", err)
	}
	if removed, err := RemoveStaleTemps(filepath.Join(dir, "missing")); err != nil || removed != nil {
		t.Errorf("a missing directory: %v, %v", removed, err)
	}
}

// A live writer's temporary file is not removed, however old it looks:
// one in this process, and one in another process, whose file is removed
// once that process is killed (kill -9: it never renames it).
func TestRemoveStaleTempsLiveWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.gob")
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- WriteAtomic(path, 0o600, func(w io.Writer) error {
			io.WriteString(w, "the whole index")
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	tmp := temps(t, dir)
	if len(tmp) != 1 {
		t.Fatalf("temporary files %v, want one", tmp)
	}
	age(t, filepath.Join(dir, tmp[0]))
	if removed, err := RemoveStaleTemps(dir); err != nil || len(removed) != 0 {
		t.Errorf("removed %v (%v) while its writer writes", removed, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the writer: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "the whole index" {
		t.Fatalf("written: %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	// Another process writes, and is killed mid-write.
	cmd := osexec.Command(os.Args[0], "-test.run=^TestStaleWriterProcess$")
	cmd.Env = append(os.Environ(), "FILEIO_TEST_WRITE="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "writing") {
		t.Fatalf("the writer process: %q, %v", line, err)
	}
	tmp = temps(t, dir)
	if len(tmp) != 1 {
		t.Fatalf("temporary files %v, want one", tmp)
	}
	age(t, filepath.Join(dir, tmp[0]))
	if removed, err := RemoveStaleTemps(dir); err != nil || len(removed) != 0 {
		t.Errorf("removed %v (%v) while another process writes it", removed, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if removed, err := RemoveStaleTemps(dir); err != nil || !slices.Equal(removed, tmp) {
		t.Errorf("after kill -9 of its writer: removed %v (%v), want %v", removed, err, tmp)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "the whole index" {
		t.Errorf("the file itself: %q, %v", b, err)
	}
}

// TestStaleWriterProcess is the writer process of
// TestRemoveStaleTempsLiveWriter: it writes FILEIO_TEST_WRITE and never
// finishes.
func TestStaleWriterProcess(t *testing.T) {
	path := os.Getenv("FILEIO_TEST_WRITE")
	if path == "" {
		t.Skip("the writer process of TestRemoveStaleTempsLiveWriter")
	}
	WriteAtomic(path, 0o600, func(w io.Writer) error {
		io.WriteString(w, "half of it")
		os.Stdout.WriteString("writing\n")
		time.Sleep(time.Hour)
		return nil
	})
}

// TempOf names the file a WriteAtomic temporary is of, and nothing else
// is one.
func TestTempOf(t *testing.T) {
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, tempPattern(filepath.Join(dir, "usage.db.view.x.vec")))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if target, ok := TempOf(filepath.Base(f.Name())); !ok || target != "usage.db.view.x.vec" {
		t.Errorf("%s: %q %v", filepath.Base(f.Name()), target, ok)
	}
	for _, name := range []string{"usage.db.view", ".usage.db.view.tmp", ".x.12a.tmp", "..1.tmp", ".x.1.tmpx"} {
		if target, ok := TempOf(name); ok {
			t.Errorf("%s taken for a temporary file of %q", name, target)
		}
	}
}
