package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/toolsrv/toolsrv/exec/sandbox"
	"github.com/toolsrv/toolsrv/registry"
)

// Defaults for Options.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultOutputCap     = 1 << 20
	DefaultBypassTimeout = 60 * time.Second
	DefaultKillGrace     = 500 * time.Millisecond
)

// Options configure a Runner.
type Options struct {
	// SelfExe is the toolsrv binary (anything whose main calls HelperMain
	// on HelperArg); it is re-executed as the sandbox helper.
	SelfExe string
	// AllowUnsandboxed lets calls run without a sandbox on a kernel
	// without Landlock (every Result then says Unsandboxed). Without it
	// such calls are refused.
	AllowUnsandboxed bool
	// BypassSocket is the approval broker's Unix socket
	// (OLLIE_BYPASS_SOCKET); empty: bypass tools are refused. It is also
	// passed to tools as OLLIE_BYPASS_SOCKET.
	BypassSocket string
	// BypassTimeout is how long a broker may take to answer (60 s).
	BypassTimeout time.Duration
	// DefaultTimeout applies to tools without their own timeout (60 s).
	DefaultTimeout time.Duration
	// OutputCap is the most kept of standard output and of standard
	// error, each (1 MiB); the rest is read and dropped.
	OutputCap int
	// KillGrace is the time between SIGTERM and SIGKILL to the process
	// group on timeout (500 ms).
	KillGrace time.Duration
	// TempRoot is where each call's private temporary directory is made
	// (os.TempDir()).
	TempRoot string
	// ClientBin is the toolsrv binary that tools may run as a 9P client
	// (tool_load does): it is passed as TOOLSRV_BIN and may be executed
	// inside the sandbox. Empty: neither.
	ClientBin string
	// PassEnv names extra variables of the server's environment passed
	// to tools when set (for example OLLAMA_HOST). Nothing else leaks.
	PassEnv []string
	// Getenv reads the server's environment (os.Getenv).
	Getenv func(string) string
	// Logger (slog.Default()).
	Logger *slog.Logger
	// Isolation chooses namespaces for calls (IsolationAuto: where the
	// kernel allows them).
	Isolation Isolation
	// ReadPaths are extra paths every sandboxed tool may read (the
	// operator's --read).
	ReadPaths []string
	// WorkDirGuard, when set, vets every call's working directory (and
	// names toolsrv's own paths inside the directories a started process
	// may write): a refused one fails the call with ErrBadCallContext,
	// and the paths it returns are kept read-only for the call
	// (sandbox.Policy.Protect). Without it any directory is accepted.
	// Either way the directory is resolved (symlinks) first, and the
	// sandbox is given the resolved one.
	WorkDirGuard *WorkDirGuard
	// Limits are a call's limits unless the tool declares its own
	// (DefaultProcesses, DefaultMemory); MaxLimits cap what a tool may
	// declare (DefaultMaxProcesses, DefaultMaxMemory()).
	Limits, MaxLimits Limits
	// ProcessBudget is the most processes the calls running at once may
	// have together (their limits add up); 0: a quarter of what the
	// machine and the user allow.
	ProcessBudget int64

	// Prestarted is a helper started ahead of the call (sandbox.Prestart
	// of SelfExe): the first call whose namespaces match it uses it
	// instead of starting one. Whoever prestarted it discards it if no
	// call took it (Helper.Discard).
	Prestarted *sandbox.Helper
	// Prepare keeps, for each tool and policy called, a helper prepared
	// for its next call (prepared.go): a resident server's calls then pay
	// only for their tool's own start. Close discards them.
	Prepare bool

	// landlockABI replaces LandlockABI (tests simulate a kernel without it).
	landlockABI func() (int, error)
	// prepareEvery, with Prepare, prepares a helper for a call that finds
	// none and waits for it (tests run every call on a prepared helper);
	// prepareIdle replaces preparedIdle.
	prepareEvery bool
	prepareIdle  time.Duration
}

// CallContext is who calls and where.
type CallContext struct {
	// WorkDir is the session's working directory: read-write for the tool
	// (read-only for readOnly tools), its current directory and $PWD. The
	// runner resolves its symlinks and uses the resolved directory.
	WorkDir string
	// Session and Agent identify the caller (the exclusive class is per
	// session and agent; the bypass broker is told).
	Session, Agent string
	// Timeout overrides the tool's and the default timeout when positive.
	Timeout time.Duration
	// ToolsPath is passed to the tool as OLLIE_TOOLS_PATH.
	ToolsPath string
}

// Result is what a call produced.
type Result struct {
	// Stdout is the tool's standard output (at most OutputCap bytes).
	Stdout []byte `json:"stdout"`
	// Content is the value of "content" when the call succeeded and
	// standard output is a JSON object {"content": [...]}.
	Content json.RawMessage `json:"content,omitempty"`
	// Stderr is the tool's standard error (at most OutputCap bytes).
	Stderr []byte `json:"stderr"`
	// ExitCode is the exit status; -1 when killed by a signal.
	ExitCode int `json:"exitCode"`
	// Truncated: output beyond OutputCap was dropped.
	Truncated bool `json:"truncated"`
	// StdoutBytes and StderrBytes are the sizes the tool wrote.
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
	// Unsandboxed: the call ran without the sandbox (an approved bypass,
	// or a kernel without Landlock and AllowUnsandboxed).
	Unsandboxed bool `json:"unsandboxed"`
	// Denied, when the tool failed on a permission error the sandbox most
	// likely caused, says so and what would allow it ("denied by the
	// sandbox: ...").
	Denied string `json:"denied,omitempty"`
	// Duration is the time the process ran.
	Duration time.Duration `json:"duration"`
}

// Kinds of call failure; test with errors.Is(err, exec.ErrTimeout).
var (
	ErrInvalidArgs    = errors.New("invalid arguments")
	ErrExit           = errors.New("tool failed")
	ErrTimeout        = errors.New("timed out")
	ErrCanceled       = errors.New("canceled")
	ErrSandbox        = errors.New("sandbox could not be applied")
	ErrNoSandbox      = errors.New("no sandbox available")
	ErrBypassRefused  = errors.New("bypass refused")
	ErrStart          = errors.New("could not start")
	ErrBadCallContext = errors.New("bad call context")
)

// CallError is a failed call. Kind is one of the Err* values above; Result
// is set when the process ran.
type CallError struct {
	Tool   string
	Kind   error
	Msg    string
	Err    error
	Result *Result
}

func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %s: %s", e.Tool, e.Kind)
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is match both the kind and the cause.
func (e *CallError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Runner runs tools. It is safe for concurrent use.
type Runner struct {
	opts   Options
	log    *slog.Logger
	abi    int
	abiErr error
	gates  *gates
	iso    *isolation
	calls  *callTable
	temp   tempDirs
	swept  chan struct{} // closed when NewRunner's sweep of temp is done

	budget     *semaphore.Weighted
	budgetSize int64

	prep *preparer // nil without Options.Prepare

	warned sync.Map // keys of the warnings said already (warnOnce)
}

// warnOnce logs a warning the first time key comes: one a call would
// otherwise repeat at every call.
func (r *Runner) warnOnce(key, msg string, args ...any) {
	if _, said := r.warned.LoadOrStore(key, struct{}{}); !said {
		r.log.Warn(msg, args...)
	}
}

// HelperSibling is the name of an optional slim sandbox helper installed
// beside the toolsrv binary (a main that only calls sandbox.HelperMain).
const HelperSibling = sandbox.HelperSibling

// DefaultHelper returns the helper binary to use for the toolsrv binary
// self: a slim "toolsrv-sandbox" next to it when one is installed (it
// starts several times faster), else self.
func DefaultHelper(self string) string { return sandbox.DefaultHelper(self) }

// NewRunner checks the options and the kernel's Landlock support. It does
// not fail on a kernel without Landlock (ranking still works there); calls
// are then refused unless AllowUnsandboxed (see Sandboxed).
func NewRunner(opts Options) (*Runner, error) {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.OutputCap <= 0 {
		opts.OutputCap = DefaultOutputCap
	}
	if opts.BypassTimeout <= 0 {
		opts.BypassTimeout = DefaultBypassTimeout
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.TempRoot == "" {
		opts.TempRoot = os.TempDir()
	}
	opts.TempRoot = resolveLoose(opts.TempRoot) // the sandbox is given resolved paths
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.landlockABI == nil {
		opts.landlockABI = sandbox.LandlockABI
	}
	if opts.Limits.Processes <= 0 {
		opts.Limits.Processes = DefaultProcesses
	}
	if opts.Limits.Memory <= 0 {
		opts.Limits.Memory = DefaultMemory
	}
	if opts.MaxLimits.Processes <= 0 {
		opts.MaxLimits.Processes = DefaultMaxProcesses
	}
	if opts.MaxLimits.Memory <= 0 {
		opts.MaxLimits.Memory = DefaultMaxMemory()
	}
	if opts.Limits.FileSize <= 0 {
		opts.Limits.FileSize = DefaultFileSize
	}
	if opts.MaxLimits.FileSize <= 0 {
		opts.MaxLimits.FileSize = DefaultMaxFileSize
	}
	if opts.Limits.TempSize <= 0 {
		opts.Limits.TempSize = DefaultTempSize
	}
	if opts.MaxLimits.TempSize <= 0 {
		opts.MaxLimits.TempSize = DefaultMaxTempSize()
	}
	if opts.ProcessBudget <= 0 {
		opts.ProcessBudget = defaultProcessBudget()
	}
	for i, p := range opts.ReadPaths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("exec: read path %q must be absolute", p)
		}
		opts.ReadPaths[i] = filepath.Clean(p)
	}
	// Every call, sandboxed or not, runs through the helper: it applies the
	// limits and ends everything the tool starts.
	if opts.SelfExe == "" {
		return nil, errors.New("exec: Options.SelfExe is required (the toolsrv binary, re-executed as the sandbox helper)")
	}
	if !filepath.IsAbs(opts.SelfExe) {
		return nil, fmt.Errorf("exec: Options.SelfExe %q must be an absolute path", opts.SelfExe)
	}
	if _, err := os.Stat(opts.SelfExe); err != nil {
		return nil, fmt.Errorf("exec: sandbox helper binary: %w", err)
	}
	r := &Runner{opts: opts, log: opts.Logger, gates: newGates(), iso: newIsolation(opts.Isolation),
		calls: newCallTable(), temp: tempDirs{root: opts.TempRoot, pid: os.Getpid()},
		budget: semaphore.NewWeighted(opts.ProcessBudget), budgetSize: opts.ProcessBudget}
	if opts.Prepare {
		r.prep = newPreparer(opts.prepareIdle)
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	// Stale call directories are swept beside the first calls, not before
	// them: with a few hundred entries in the temporary directory a
	// synchronous sweep cost every "toolsrv call" about a millisecond. The
	// sweep never touches a live process's directories, ours included; cut
	// short by the process's exit, it resumes at the next start.
	r.swept = make(chan struct{})
	go func() {
		defer close(r.swept)
		r.temp.sweep(r.log)
	}()
	if r.iso.root && !r.iso.pidMax {
		r.log.Warn("this kernel has no pid_max per PID namespace (Linux 6.14+): calls of a root toolsrv get no process limit; run toolsrv as an ordinary user")
	}
	r.abi, r.abiErr = opts.landlockABI()
	if r.abiErr == nil && r.abi < sandbox.MinABI {
		r.abiErr = fmt.Errorf("landlock ABI %d is below %d", r.abi, sandbox.MinABI)
	}
	if r.abiErr != nil && opts.AllowUnsandboxed {
		r.log.Warn("landlock unavailable: tools will run UNSANDBOXED (allowed explicitly)", "err", r.abiErr)
	} else if r.abiErr != nil {
		r.log.Warn("landlock unavailable: tool calls will be refused", "err", r.abiErr)
	}
	return r, nil
}

// Sandboxed reports whether calls run under Landlock (false on a kernel
// without it), and the Landlock ABI version.
func (r *Runner) Sandboxed() (bool, int) { return r.abiErr == nil, r.abi }

// Call validates args against t's schema and runs t with them on its
// standard input, under the sandbox (or, for an approved bypass tool,
// without). A failed call returns a *CallError, together with the Result
// when the process ran.
func (r *Runner) Call(ctx context.Context, t *registry.Tool, args []byte, cc CallContext) (*Result, error) {
	if t == nil {
		return nil, &CallError{Tool: "?", Kind: ErrBadCallContext, Msg: "no tool"}
	}
	fail := func(kind error, msg string, err error) (*Result, error) {
		return nil, &CallError{Tool: t.Name, Kind: kind, Msg: msg, Err: err}
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if err := t.ValidateArgs(args); err != nil {
		return fail(ErrInvalidArgs, "nothing was run", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		return fail(ErrInvalidArgs, "nothing was run", err)
	}
	compact.WriteByte('\n')
	if len(t.Command.Argv) == 0 || !filepath.IsAbs(t.Command.Argv[0]) {
		return fail(ErrStart, "the tool has no resolved command", nil)
	}
	workdir, protect, err := r.workDir(cc.WorkDir)
	if err != nil {
		return fail(ErrBadCallContext, "", err)
	}
	cc.WorkDir = workdir

	sandboxed := true
	switch {
	case t.Bypass:
		err := askBroker(ctx, r.opts.BypassSocket, r.opts.BypassTimeout, BypassRequest{
			Tool: t.Name, Arguments: json.RawMessage(bytes.TrimSpace(compact.Bytes())),
			WorkDir: workdir, Session: cc.Session, Agent: cc.Agent,
			Command: t.Command.Argv, Description: t.Description,
		})
		if err != nil {
			return fail(ErrBypassRefused, "the tool asks to run outside the sandbox and was not approved", err)
		}
		r.log.Info("bypass approved", "tool", t.Name, "session", cc.Session, "agent", cc.Agent)
		sandboxed = false
	case r.abiErr != nil:
		if !r.opts.AllowUnsandboxed {
			return fail(ErrNoSandbox, "refusing to run tools unsandboxed; restart with --allow-unsandboxed to accept that", r.abiErr)
		}
		sandboxed = false
	}

	release, err := r.gates.acquire(ctx, t, cc)
	if err != nil { // only the caller's context ends a wait
		return fail(ErrCanceled, "", err)
	}
	defer release()
	lim := r.limitsFor(t)
	leave, err := r.admit(ctx, lim)
	if err != nil {
		return fail(ErrCanceled, "", err)
	}
	defer leave()

	timeout := r.opts.DefaultTimeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	if cc.Timeout > 0 {
		timeout = cc.Timeout
	}
	return r.run(ctx, t, compact.Bytes(), cc, protect, sandboxed, timeout, lim)
}

// parseContent returns the "content" array of a {"content": [...]} object.
func parseContent(stdout []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(trimmed, &obj) != nil {
		return nil
	}
	c := bytes.TrimSpace(obj.Content)
	if len(c) == 0 || c[0] != '[' {
		return nil
	}
	return c
}

// MarshalJSON writes the output as text (invalid UTF-8 becomes U+FFFD) and
// the duration in milliseconds, which is what JSON readers want.
func (r *Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Stdout      string          `json:"stdout"`
		Content     json.RawMessage `json:"content,omitempty"`
		Stderr      string          `json:"stderr"`
		ExitCode    int             `json:"exitCode"`
		Truncated   bool            `json:"truncated"`
		StdoutBytes int64           `json:"stdoutBytes"`
		StderrBytes int64           `json:"stderrBytes"`
		Unsandboxed bool            `json:"unsandboxed"`
		Denied      string          `json:"denied,omitempty"`
		DurationMs  float64         `json:"durationMs"`
	}{string(r.Stdout), r.Content, string(r.Stderr), r.ExitCode, r.Truncated, r.StdoutBytes, r.StderrBytes,
		r.Unsandboxed, r.Denied, float64(r.Duration.Microseconds()) / 1000})
}
