package remote

import (
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hugelgupf/p9/fsimpl/templatefs"
	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// The test binary doubles as a fake remote toolsrv: "TEST fake9p VERSION"
// answers 9P on standard input and output with a tree that holds only
// /version (a toolsrv of another version; "none": a tree without it).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "fake9p" {
		os.Exit(fake9p(os.Args[2]))
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func fake9p(version string) int {
	name, content := "version", version+"\nbuild fake\n"
	if version == "none" { // a toolsrv from before /version
		name, content = "tools", ""
	}
	srv := p9.NewServer(fakeRoot{name: name, content: content})
	// Plain readers and writers: the library reads an *os.File with
	// recvmsg, which a pipe refuses.
	in := struct {
		io.Reader
		io.Closer
	}{os.Stdin, os.Stdin}
	out := struct {
		io.Writer
		io.Closer
	}{os.Stdout, os.Stdout}
	if err := srv.Handle(in, out); err != nil {
		fmt.Fprintln(os.Stderr, "fake9p:", err)
	}
	return 0
}

// fakeRoot is a 9P tree of one directory holding one file.
type fakeRoot struct {
	p9.DefaultWalkGetAttr
	templatefs.ReadOnlyDir
	templatefs.NilCloser
	name, content string
}

func (r fakeRoot) Attach() (p9.File, error) { return r, nil }

func (r fakeRoot) Walk(names []string) ([]p9.QID, p9.File, error) {
	switch {
	case len(names) == 0:
		return nil, r, nil
	case len(names) == 1 && names[0] == r.name:
		f := fakeFile{Reader: strings.NewReader(r.content)}
		return []p9.QID{{Type: p9.TypeRegular, Path: 1}}, f, nil
	}
	return nil, nil, linux.ENOENT
}

func (r fakeRoot) Open(p9.OpenFlags) (p9.QID, uint32, error) {
	return p9.QID{Type: p9.TypeDir}, 0, nil
}

func (r fakeRoot) GetAttr(p9.AttrMask) (p9.QID, p9.AttrMask, p9.Attr, error) {
	return p9.QID{Type: p9.TypeDir}, p9.AttrMask{Mode: true}, p9.Attr{Mode: p9.ModeDirectory | 0o555}, nil
}

func (r fakeRoot) StatFS() (p9.FSStat, error) { return p9.FSStat{}, nil }

type fakeFile struct {
	p9.DefaultWalkGetAttr
	templatefs.ReadOnlyFile
	templatefs.NilCloser
	templatefs.NotDirectoryFile
	templatefs.NotSymlinkFile
	*strings.Reader
}

func (f fakeFile) Walk(names []string) ([]p9.QID, p9.File, error) {
	if len(names) == 0 {
		return nil, f, nil
	}
	return nil, nil, linux.ENOTDIR
}

func (f fakeFile) Open(p9.OpenFlags) (p9.QID, uint32, error) {
	return p9.QID{Type: p9.TypeRegular, Path: 1}, 0, nil
}

func (f fakeFile) GetAttr(p9.AttrMask) (p9.QID, p9.AttrMask, p9.Attr, error) {
	return p9.QID{Type: p9.TypeRegular, Path: 1}, p9.AttrMask{Mode: true, Size: true},
		p9.Attr{Mode: p9.ModeRegular | 0o444, Size: uint64(f.Size())}, nil
}

func (f fakeFile) StatFS() (p9.FSStat, error) { return p9.FSStat{}, nil }

// toolsrvBin builds the toolsrv command once per test binary (the remote
// side runs it, and the sandbox re-executes it).
func toolsrvBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolsrv-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "toolsrv")
		goBin, err := osexec.LookPath("go")
		if err != nil {
			binErr = fmt.Errorf("building toolsrv needs go on PATH: %w", err)
			return
		}
		cmd := osexec.Command(goBin, "build", "-o", binPath, "../cmd/toolsrv")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ../cmd/toolsrv: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// The built binary, shared by the tests of this package: built at most
// once, removed by TestMain.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)
