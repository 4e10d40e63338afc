package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// sandboxFlags are the flags of the commands that run tools (call, serve):
// extra readable paths and the calls' resource limits.
type sandboxFlags struct {
	read                pathList
	processes, maxProcs int
	memory, maxMemory   sizeFlag
	fileSize, tempSize  sizeFlag
}

// pathList is a repeatable flag of absolute paths.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }
func (p *pathList) Set(v string) error {
	abs, err := filepath.Abs(v)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("%s: %w", v, err)
	}
	*p = append(*p, abs)
	return nil
}

// sizeFlag is a size in bytes ("512MiB", "2G", a number).
type sizeFlag int64

func (s *sizeFlag) String() string { return fmt.Sprint(int64(*s)) }
func (s *sizeFlag) Set(v string) error {
	n, err := registry.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func addSandboxFlags(fs *flag.FlagSet) *sandboxFlags {
	f := &sandboxFlags{}
	fs.Var(&f.read, "read", "a file or directory every sandboxed tool may read (repeatable)")
	fs.IntVar(&f.processes, "processes", exec.DefaultProcesses, "a call's process limit (threads count) unless the tool's .meta sets \"limits\"")
	fs.Var(&f.memory, "memory", fmt.Sprintf("a call's memory limit per process, e.g. 1GiB, unless the tool's .meta sets \"limits\" (default %s)", sizeString(exec.DefaultMemory)))
	fs.IntVar(&f.maxProcs, "max-processes", exec.DefaultMaxProcesses, "the most processes a tool may ask for")
	fs.Var(&f.maxMemory, "max-memory", "the most memory per process a tool may ask for (default half the machine's memory)")
	fs.Var(&f.fileSize, "file-size", fmt.Sprintf("the largest file a call may write, unless the tool's .meta sets \"limits\" (default %s)", sizeString(exec.DefaultFileSize)))
	fs.Var(&f.tempSize, "temp-size", fmt.Sprintf("the size of a call's temporary directory ($TMPDIR, $HOME; in memory), unless the tool's .meta sets \"limits\" (default %s)", sizeString(exec.DefaultTempSize)))
	return f
}

// check reports a bad combination as a usage error message.
func (f *sandboxFlags) check() error {
	if f.processes < 1 || f.maxProcs < 1 {
		return fmt.Errorf("--processes and --max-processes must be at least 1")
	}
	if f.memory != 0 && f.memory < 1<<20 || f.maxMemory != 0 && f.maxMemory < 1<<20 {
		return fmt.Errorf("--memory and --max-memory must be at least 1MiB")
	}
	if f.fileSize != 0 && f.fileSize < 1<<20 || f.tempSize != 0 && f.tempSize < 1<<20 {
		return fmt.Errorf("--file-size and --temp-size must be at least 1MiB")
	}
	return nil
}

// apply sets the runner options they stand for.
func (f *sandboxFlags) apply(o *exec.Options) {
	o.ReadPaths = append(o.ReadPaths, f.read...)
	o.Limits = exec.Limits{Processes: f.processes, Memory: int64(f.memory), FileSize: int64(f.fileSize), TempSize: int64(f.tempSize)}
	o.MaxLimits = exec.Limits{Processes: f.maxProcs, Memory: int64(f.maxMemory)}
}

func sizeString(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprint(n)
}
