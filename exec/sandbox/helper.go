package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// HelperArg is the hidden first argument that turns the toolsrv binary into
// the sandbox helper: "toolsrv __sandbox POLICY -- ARGV...". The binary's
// main must call HelperMain(os.Args[2:]) before doing anything else when it
// sees it.
const HelperArg = "__sandbox"

// ExitSandbox is the helper's exit status when it could not apply the
// sandbox or could not execute the tool (the reason goes to the status pipe
// and to standard error).
const ExitSandbox = 126

// StatusFD is the helper's file descriptor for the status pipe: the helper
// writes why it failed; on success the descriptor is closed by execve
// (close-on-exec), so the server reads EOF with nothing written.
const StatusFD = 3

// landlockConfig is the Landlock ABI version toolsrv was written and tested
// against. Newer ABIs (V9+ restrict pathname unix sockets, V10+ UDP) change
// what tools can do and must be adopted deliberately.
func landlockConfig() landlock.Config { return landlock.V7 }

// MinABI is the lowest Landlock ABI toolsrv accepts as "sandboxed": ABI 1
// already restricts the filesystem; network isolation does not depend on
// Landlock's TCP rules (see doc.go).
const MinABI = 1

// LandlockABI reports the kernel's Landlock ABI version (0 and an error when
// Landlock is unavailable).
func LandlockABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("landlock is not available on this kernel: %w", err)
	}
	return v, nil
}

// Policy is what the server tells the helper; it travels as JSON in argv
// (paths only: the call's arguments go to standard input).
type Policy struct {
	// ReadOnly: no write access anywhere (not even WorkDir and TempDir).
	ReadOnly bool `json:"readOnly,omitempty"`
	// Network: the tool may use the network; without it TCP connect and
	// bind are denied by Landlock and MPTCP sockets by a seccomp filter.
	Network bool `json:"network,omitempty"`
	// NetNS: the helper was started in a fresh network namespace; it turns
	// MPTCP off there (a per-namespace sysctl).
	NetNS bool `json:"netns,omitempty"`
	// WorkDir and TempDir are read-write (read-only when ReadOnly).
	WorkDir string `json:"workdir"`
	TempDir string `json:"tempdir,omitempty"`
	// Exec are extra read+execute paths (the tool's directory, its
	// executable), files or directories.
	Exec []string `json:"exec,omitempty"`
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
	"/proc", "/dev/urandom", "/dev/random",
}

// SystemDevices may be opened for writing even by readOnly tools: writing
// to them changes nothing.
var SystemDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// HelperMain is the sandbox helper: it applies the Policy to its own process
// (Landlock, and for tools without network a seccomp filter against MPTCP)
// and then executes the tool in place. It only returns on failure, with
// ExitSandbox; the reason is written to the status pipe and to standard
// error. args are os.Args[2:]: POLICY "--" ARGV...
func HelperMain(args []string) int {
	// Capabilities are per thread: keep this goroutine on the thread
	// that drops them and then calls execve. (Landlock and the seccomp
	// filter apply to all threads.)
	runtime.LockOSThread()
	status := os.NewFile(StatusFD, "status")
	fail := func(err error) int {
		msg := "toolsrv sandbox: " + err.Error()
		fmt.Fprintln(os.Stderr, msg)
		if status != nil {
			io.WriteString(status, msg)
		}
		return ExitSandbox
	}
	if len(args) < 3 || args[1] != "--" {
		return fail(errors.New("usage: toolsrv " + HelperArg + " POLICY -- COMMAND [ARGS...] (internal; started by toolsrv itself)"))
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fail(fmt.Errorf("bad Policy: %w", err))
	}
	argv := args[2:]
	if !filepath.IsAbs(argv[0]) {
		return fail(fmt.Errorf("command %q is not an absolute path", argv[0]))
	}
	if err := applyPolicy(p); err != nil {
		return fail(err)
	}
	// From here on this process is sandboxed for good; the status pipe
	// closes on execve.
	if status != nil {
		unix.CloseOnExec(StatusFD)
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	hint := ""
	if errors.Is(err, syscall.EACCES) {
		hint = " (the sandbox allows executing only system directories and the tool's own directory)"
	}
	return fail(fmt.Errorf("cannot execute %s: %w%s", argv[0], err, hint))
}

// applyPolicy restricts the current process. Any error means nothing may
// run: Landlock enforces nothing when building the ruleset fails.
func applyPolicy(p Policy) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < MinABI {
		return fmt.Errorf("landlock ABI %d is too old", abi)
	}
	if p.WorkDir == "" || !filepath.IsAbs(p.WorkDir) {
		return fmt.Errorf("working directory %q is not absolute", p.WorkDir)
	}
	if p.NetNS && !p.Network {
		// In our own fresh network namespace: nothing is reachable
		// anyway; also make MPTCP unavailable so Landlock's TCP rules
		// hold for every stream socket. Failure here is not fatal: the
		// seccomp filter below covers MPTCP too.
		_ = os.WriteFile("/proc/sys/net/mptcp/enabled", []byte("0\n"), 0)
	}
	rules, err := policyRules(p)
	if err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if !p.Network {
		if abi < 4 && !p.NetNS {
			return fmt.Errorf("landlock ABI %d cannot restrict TCP (needs 4) and there is no private network namespace (needs root); refusing to run a tool without network access unconfined", abi)
		}
		if err := denyMPTCP(); err != nil {
			return fmt.Errorf("installing the MPTCP seccomp filter: %w", err)
		}
	}
	cfg := landlockConfig().BestEffort()
	if p.Network {
		// Network allowed: restrict only the filesystem and scoping.
		if err := cfg.RestrictPaths(rules...); err != nil {
			return fmt.Errorf("applying landlock: %w", err)
		}
		if err := cfg.RestrictScoped(); err != nil {
			return fmt.Errorf("applying landlock scoping: %w", err)
		}
		return nil
	}
	// Restrict = paths + network (no TCP rule: every connect and bind is
	// denied) + scoping, in one ruleset.
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("applying landlock: %w", err)
	}
	return nil
}

// policyRules turns a Policy into Landlock rules, choosing directory or file
// rights for each existing path (a directory right on a file is an error).
func policyRules(p Policy) ([]landlock.Rule, error) {
	var rules []landlock.Rule
	ro := append(append([]string(nil), SystemReadOnly...), p.Exec...)
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
			rules = append(rules, landlock.RWDirs(d).WithRefer())
		}
	}
	return rules, nil
}

// Under reports whether path is one of roots or below one of them.
func Under(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}
