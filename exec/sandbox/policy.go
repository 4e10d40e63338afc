package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// Policy is what the server tells the helper; it travels as JSON in argv
// (paths and numbers only: the call's arguments go to standard input).
type Policy struct {
	// Unconfined: no Landlock and no seccomp filter (an approved bypass
	// tool, or a kernel without Landlock and --allow-unsandboxed). The
	// limits, the process lifetime and the descriptor hygiene still apply.
	Unconfined bool `json:"unconfined,omitempty"`
	// ReadOnly: no write access anywhere (not even WorkDir and TempDir).
	ReadOnly bool `json:"readOnly,omitempty"`
	// Network: the tool may use the network; without it the seccomp filter
	// refuses every socket but Unix and netlink ones and Landlock denies TCP
	// connect and bind.
	Network bool `json:"network,omitempty"`
	// Ptrace: the tool may trace processes of its own call (a debugger,
	// strace); without it the seccomp filter refuses ptrace and
	// process_vm_*.
	Ptrace bool `json:"ptrace,omitempty"`
	// PidNS: the helper is the init of a fresh PID namespace; everything
	// the tool starts dies with it.
	PidNS bool `json:"pidns,omitempty"`
	// MountNS: the helper has a mount namespace of its own (with PidNS,
	// and alone for a tool that sees the host's processes), in which it
	// mounts the call's /proc, its temporary directory and Protect.
	MountNS bool `json:"mountns,omitempty"`
	// UserNS: the helper runs in a user namespace of its own (toolsrv is
	// not root): RLIMIT_NPROC counts only this call's processes.
	UserNS bool `json:"userns,omitempty"`
	// WorkDir and TempDir are read-write (read-only when ReadOnly).
	WorkDir string `json:"workdir"`
	TempDir string `json:"tempdir,omitempty"`
	// Exec are extra read+execute paths (the tool's directory, its
	// executable), files or directories.
	Exec []string `json:"exec,omitempty"`
	// Read are extra read-only paths (the repository that holds the
	// working directory, paths the operator allowed).
	Read []string `json:"read,omitempty"`
	// Write are extra read-write paths, files or directories (what an MCP
	// server's configuration grants it; read-only when ReadOnly).
	Write []string `json:"write,omitempty"`
	// Protect are paths inside WorkDir, TempDir or Write (toolsrv's own:
	// tool directories, agent profiles, its sockets' directories, its
	// cache) that the call must not write even though they lie inside a
	// directory it may write. The helper bind-mounts each read-only over
	// itself in the call's mount namespace before the tool starts; where
	// the call has no mount namespace the helper refuses the call
	// (ExitSandbox, with the reason). Absolute, symlinks resolved.
	Protect []string `json:"protect,omitempty"`
	// Processes is the most processes (threads included) the tool and
	// everything it starts may have at once; 0: no limit.
	Processes int `json:"processes,omitempty"`
	// Memory is the most private writable memory (RLIMIT_DATA) of each of
	// the tool's processes, in bytes; 0: no limit.
	Memory int64 `json:"memory,omitempty"`
	// FileSize is the largest file a process of the call may write
	// (RLIMIT_FSIZE), in bytes; 0: no limit. A write past it fails with
	// EFBIG ("File too large"): the helper ignores SIGXFSZ, and the tool
	// inherits that.
	FileSize int64 `json:"fileSize,omitempty"`
	// TempSize is the size of the tmpfs the helper mounts on TempDir in
	// the call's mount namespace, in bytes; 0: no tmpfs (TempDir as it
	// is).
	TempSize int64 `json:"tempSize,omitempty"`
	// ABI, when set below the kernel's Landlock ABI, confines the tool as
	// a kernel of that ABI would: Landlock handles only what that ABI
	// knows. It only ever weakens the sandbox, so nothing sets it but the
	// tests that show what each older kernel gives (exec's runner never
	// does, and no flag, variable or file reaches it).
	ABI int `json:"abi,omitempty"`
}

// SystemReadOnly are the system paths every tool may read and execute.
// Missing ones are skipped. /etc is listed file by file so that secrets
// there (shadow, ssh host keys, ...) stay unreadable.
var SystemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
	"/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/services",
	"/etc/protocols", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/mime.types",
	"/etc/magic", "/etc/locale.alias", "/etc/os-release", "/etc/debian_version",
	"/etc/hostname", "/etc/inputrc", "/etc/gitconfig", "/etc/python3", "/etc/mtab",
	"/etc/machine-id", "/var/log", "/run/log/journal", // system logs (the seeds' system_logs tool)
	"/proc", "/sys", "/dev/urandom", "/dev/random",
}

// SystemDevices may be opened for writing even by readOnly tools: writing
// to them changes nothing.
var SystemDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// Readable reports whether a sandboxed tool under p may read path (the
// system paths, its own paths, the working and temporary directories).
func (p Policy) Readable(path string) bool {
	return Under(path, SystemReadOnly) || Under(path, SystemDevices) || Under(path, p.Exec) ||
		Under(path, p.Read) || Under(path, p.Write) || Under(path, []string{p.WorkDir}) || (p.TempDir != "" && Under(path, []string{p.TempDir}))
}

// Writable reports whether a sandboxed tool under p may write path.
func (p Policy) Writable(path string) bool {
	if Under(path, SystemDevices) {
		return true
	}
	if p.ReadOnly {
		return false
	}
	return Under(path, []string{p.WorkDir}) || Under(path, p.Write) || (p.TempDir != "" && Under(path, []string{p.TempDir}))
}

// policyRules turns a Policy into Landlock rules for a kernel of Landlock
// ABI abi, choosing directory or file rights for each existing path (a
// directory right on a file is an error).
func policyRules(p Policy, abi int) ([]landlock.Rule, error) {
	rwDir := func(dir string) landlock.Rule {
		if abi < referABI {
			return landlock.RWDirs(dir)
		}
		return landlock.RWDirs(dir).WithRefer()
	}
	var rules []landlock.Rule
	ro := append(append(append([]string(nil), SystemReadOnly...), p.Exec...), p.Read...)
	for _, path := range ro {
		fi, err := os.Stat(path)
		if err != nil {
			continue // missing or unreadable system path: nothing to allow
		}
		if fi.IsDir() {
			rules = append(rules, landlock.RODirs(path))
		} else {
			rules = append(rules, landlock.ROFiles(path))
		}
	}
	for _, dev := range SystemDevices {
		if _, err := os.Stat(dev); err == nil {
			rules = append(rules, landlock.RWFiles(dev).WithIoctlDev())
		}
	}
	rw := []string{p.WorkDir}
	if p.TempDir != "" {
		rw = append(rw, p.TempDir)
	}
	for _, d := range rw {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", d)
		}
		if p.ReadOnly {
			rules = append(rules, landlock.RODirs(d))
		} else {
			rules = append(rules, rwDir(d))
		}
	}
	for _, path := range p.Write {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("write path: %w", err)
		}
		switch {
		case p.ReadOnly && fi.IsDir():
			rules = append(rules, landlock.RODirs(path))
		case p.ReadOnly:
			rules = append(rules, landlock.ROFiles(path))
		case fi.IsDir():
			rules = append(rules, rwDir(path))
		default:
			rules = append(rules, landlock.RWFiles(path))
		}
	}
	return rules, nil
}

// Under reports whether path is one of roots or below one of them.
func Under(path string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// checkPolicy says what is wrong with p before anything is applied.
func checkPolicy(p Policy) error {
	if p.WorkDir == "" || !filepath.IsAbs(p.WorkDir) {
		return fmt.Errorf("working directory %q is not absolute", p.WorkDir)
	}
	for _, w := range p.Write {
		if !filepath.IsAbs(w) {
			return fmt.Errorf("write path %q is not absolute", w)
		}
	}
	if p.Processes < 0 || p.Memory < 0 || p.FileSize < 0 || p.TempSize < 0 {
		return fmt.Errorf("negative limits (processes %d, memory %d, file size %d, temp size %d)", p.Processes, p.Memory, p.FileSize, p.TempSize)
	}
	for _, w := range p.Protect {
		if !filepath.IsAbs(w) {
			return fmt.Errorf("protected path %q is not absolute", w)
		}
	}
	return nil
}
