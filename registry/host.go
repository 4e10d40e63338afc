package registry

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// Host describes the machine variants are evaluated against and commands are
// resolved on. LocalHost describes this machine; a remote toolsrv evaluates
// against its own host, and tests use StaticHost.
type Host interface {
	OS() string
	Arch() string
	// Getenv returns the variable's value, "" when unset.
	Getenv(key string) string
	// Exists reports whether a file or directory exists at path.
	Exists(path string) bool
	// Executable reports whether path is a regular file with an execute bit.
	Executable(path string) bool
	// LookPath finds a bare executable name on the host's $PATH.
	LookPath(name string) (string, bool)
}

// LocalHost is this machine as the running process sees it.
type LocalHost struct{}

func (LocalHost) OS() string               { return runtime.GOOS }
func (LocalHost) Arch() string             { return runtime.GOARCH }
func (LocalHost) Getenv(key string) string { return os.Getenv(key) }
func (LocalHost) Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
func (LocalHost) Executable(path string) bool { return isExecutable(path) }
func (LocalHost) LookPath(name string) (string, bool) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", false
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// StaticHost is a host described by value: for tests, and for evaluating
// variants on behalf of another machine.
type StaticHost struct {
	GOOS, GOARCH string
	Env          map[string]string
	// Files lists existing paths; Exec lists executable files (which also exist).
	Files map[string]bool
	Exec  map[string]bool
	// Path is the host's $PATH as a list of directories.
	Path []string
}

func (h StaticHost) OS() string               { return h.GOOS }
func (h StaticHost) Arch() string             { return h.GOARCH }
func (h StaticHost) Getenv(key string) string { return h.Env[key] }
func (h StaticHost) Exists(path string) bool  { return h.Files[path] || h.Exec[path] }
func (h StaticHost) Executable(path string) bool {
	return h.Exec[path]
}
func (h StaticHost) LookPath(name string) (string, bool) {
	for _, d := range h.Path {
		p := filepath.Join(d, name)
		if h.Exec[p] {
			return p, true
		}
	}
	return "", false
}

// memoHost caches a Host's answers for the length of one update, and answers
// "not executable" without a stat for files absent from a directory listing
// just read. Resolving 10k tools then costs one stat per tool, not four.
// Safe for the update's resolving goroutines (a question two of them ask at
// once may reach the Host twice).
type memoHost struct {
	Host
	listing map[string]map[string]bool // dir → entry names, when known (read only)
	mu      sync.Mutex                 // guards the maps below
	exec    map[string]bool
	exists  map[string]bool
	look    map[string]string // "" = not found
}

func newMemoHost(h Host, listing map[string]map[string]bool) *memoHost {
	return &memoHost{Host: h, listing: listing, exec: map[string]bool{}, exists: map[string]bool{}, look: map[string]string{}}
}

// memo returns m[key], asking ask (without the lock) the first time.
func memo[V any](mu *sync.Mutex, m map[string]V, key string, ask func() V) V {
	mu.Lock()
	v, ok := m[key]
	mu.Unlock()
	if !ok {
		v = ask()
		mu.Lock()
		m[key] = v
		mu.Unlock()
	}
	return v
}

func (m *memoHost) Executable(path string) bool {
	if names, ok := m.listing[filepath.Dir(path)]; ok && !names[filepath.Base(path)] {
		return false
	}
	return memo(&m.mu, m.exec, path, func() bool { return m.Host.Executable(path) })
}

func (m *memoHost) Exists(path string) bool {
	return memo(&m.mu, m.exists, path, func() bool { return m.Host.Exists(path) })
}

func (m *memoHost) LookPath(name string) (string, bool) {
	p := memo(&m.mu, m.look, name, func() string { p, _ := m.Host.LookPath(name); return p })
	return p, p != ""
}
