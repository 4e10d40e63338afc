// Package exec runs tools: the call contract, the sandbox, the limits,
// bypass approval, and telling a tool's connection from its owner's.
//
// # Contract
//
// Runner.Call validates the arguments against the tool's compiled schema
// (every violation listed; nothing starts on a violation; repeated keys
// are refused), then writes them as one compact JSON object and a newline
// to the tool's standard input; they never appear on a command line.
// Exit 0: standard output is the result, and Result.Content holds the
// "content" array when standard output is a {"content": [...]} object. Any
// other ending is a *CallError whose Kind is one of ErrInvalidArgs, ErrExit
// (with the standard error, or output, in the message), ErrTimeout,
// ErrCanceled, ErrSandbox, ErrNoSandbox, ErrBypassRefused, ErrStart,
// ErrBadCallContext; the Result rides along when the process ran. When a
// failed tool's standard error names a path the sandbox keeps it from,
// Result.Denied says "denied by the sandbox: ..." and what would allow it.
//
// Environment (the whole of it; nothing else of the server's leaks):
// PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin;
// HOME and TMPDIR = the call's private temporary directory (the server's
// HOME only for unsandboxed calls); PWD = the working directory;
// LANG (C.UTF-8 unless the server has one), LC_ALL, LC_CTYPE, TZ when set;
// OLLIE_TOOLS_PATH; OLLIE_BYPASS_SOCKET when a broker is configured;
// OLLIE_SESSION_ID and OLLIE_UNAME when the caller is a session's agent;
// OLLIE_TOOL = the tool's name; TOOLSRV_BIN when Options.ClientBin is set;
// plus any names the operator lists in Options.PassEnv.
//
// # The helper
//
// Every call, sandboxed or not, runs through a helper: Options.SelfExe (the
// toolsrv binary) re-executed as "toolsrv __sandbox POLICY -- ARGV"
// (HelperMain, in package exec/sandbox). The helper closes every
// descriptor it inherited beyond the standard streams, applies the limits
// to itself, drops its capabilities, starts the tool as its child from a
// thread that confines itself (no_new_privs, seccomp, Landlock) and ends
// once the tool has started, and stays until the tool and everything it
// started are gone, then reports how the tool ended on a status pipe.
// Landlock restricts a process for good, so none of this ever happens in
// the server. Because the confined thread is gone, no thread of the helper
// shares the tool's Landlock domain, and Landlock forbids tracing a
// process outside one's domain: a tool cannot attach to its helper (when
// the helper kept the confined thread, a tool attached to it, wrote into
// the memory the helper's threads share and ran code on an unconfined
// one). The helper is
// not dumpable besides, and the seccomp filter refuses ptrace to tools
// that do not declare "ptrace".
//
// A helper can also be started before its call is known
// (sandbox.Prestart, "toolsrv __sandbox -"): with an empty environment, it
// starts its Go runtime, takes its signals and waits for an Order (the
// policy, argv, environment and working directory it would otherwise have
// had from the start) on a pipe; Options.Prestarted hands one to the
// runner, whose first call of the same helper binary and namespaces uses
// it. "toolsrv call" starts its helper that way while its own packages
// initialise, which takes the helper's start (about a millisecond and a
// half) off the call's path. Nothing reaches the helper that a helper
// started for the call would not get: the process marks its inherited
// descriptors close-on-exec first, and the helper marks them again.
//
// A resident server goes further (Options.Prepare: serve and mcp): after a
// call it prepares a helper for the next call of the same tool and policy
// (sandbox.Prepare, "toolsrv __sandbox +"), which does everything short of
// starting the tool: its namespaces, /proc, temporary directory and
// protected paths, limits, capabilities, not dumpable, and the launching
// thread confined; it reports that it is ready and waits. The call sends
// the environment (sandbox.Go) and the tool starts at once. Each prepared
// helper serves one call and ends with it. It is used only for the call it
// was prepared for: the key is the whole policy (but its temporary
// directory, its own), the command, the namespaces and the helper binary,
// and every path of the policy but the system ones must still be the file
// (device and inode) it was before and after the preparation, since the
// Landlock rules and mounts hold those; otherwise it is thrown away and the
// call starts its own. Unused ones end after two minutes, beyond eight the
// least recently used, all at Runner.Close; a dead server takes them along.
// (toolsrv call cannot be one process: the helper must be the init of the
// call's PID namespace and make its mounts, which a multi-threaded process
// cannot do for another namespace, and hold nothing of toolsrv's memory,
// descriptors or environment; the CLI must outlive the tool to report.)
//
// Isolation (Options.Isolation; IsolationAuto uses namespaces where the
// kernel allows them): the helper starts in a fresh PID namespace, whose
// init it is, a mount namespace in which it mounts that PID namespace's
// own /proc, and an IPC namespace; a toolsrv that is not root adds a user
// namespace of the call's own, mapping only its own uid and gid (the tool
// keeps its identity; the helper keeps CAP_SYS_ADMIN there, ambient, until
// it has mounted /proc). A tool therefore sees its own call's processes
// only, under the PIDs getpid() gives them: with the host's /proc, ps
// failed ("fatal library error, lookup self") or took another process for
// itself, depending on which PIDs the host had free. Where the procfs
// cannot be mounted (a container that masks parts of its /proc) the call
// keeps the host's /proc and the runner warns once
// (sandbox.Status.SharedProc). A tool that declares "hostProcesses" (a
// process lister) runs without the PID and mount namespaces: it sees the
// host's /proc, the helper is its subreaper, and Landlock's signal
// scoping keeps it from signalling what it sees; where Landlock lacks
// that scoping (ABI below 6, Linux before 6.12) the declaration is
// ignored with a warning, since only the PID namespace would then keep
// the tool from signalling the server. As root such a call has no process
// limit (see Limits). (No network namespace: for a tool without
// "network" the seccomp filter already refuses every IP socket, and an
// empty namespace would only cost half a millisecond more per call.) Everything the tool starts dies when the helper
// ends: setsid, double forks and daemons included. Without namespaces
// (IsolationNone, or a kernel that refuses them) the helper is a child
// subreaper and kills the tool's descendants one generation at a time.
//
// # Limits
//
// Timeout: the call's (CallContext.Timeout), else the tool's ("timeout" in
// the .meta), else Options.DefaultTimeout (60 s). On timeout the tool's
// process group gets SIGTERM; after Options.KillGrace (500 ms) the helper
// is told to kill every process of the call (SIGUSR1, also its
// parent-death signal: a server that dies takes its calls along); a
// second later the group gets SIGKILL. When the tool's main process ends,
// for any reason, whatever it left behind is killed too. A timeout that
// falls while the helper is still starting ends the call as well: the
// helper takes these signals from the start of its main function and then
// does not start the tool (one that dies before its execve is reported
// killed); a signal before that ends the helper before it started
// anything. Time spent
// waiting for a concurrency class, for the process budget or for bypass
// approval does not count against the timeout; the caller's context
// bounds it.
//
// Processes and memory, per call: Options.Limits (DefaultProcesses 256,
// DefaultMemory 2 GiB per process) unless the tool's .meta sets "limits":
// {"processes": N, "memory": "512MiB"}, capped by Options.MaxLimits
// (DefaultMaxProcesses 4096; half the machine's memory). The process limit
// counts threads. It is RLIMIT_NPROC in the call's user namespace (which
// counts only that call's tasks) for an ordinary user; for root, whom
// RLIMIT_NPROC exempts, the pid_max of the call's PID namespace (Linux
// 6.14+; none for a hostProcesses tool, which has no PID namespace), set
// about 300 above the limit (sandbox.PidMax: once a namespace's PIDs wrap
// around, the kernel hands out only PIDs from 300 up, and a
// pid_max at the limit would leave a long-running tool room for a few
// processes at most), so a root call may hold up to about 300 processes
// more than its limit; without namespaces,
// RLIMIT_NPROC over all of the user's processes (what runs now plus the
// call's share), and none for root. The helper shares the limit with the
// tool: it starts the threads its Go runtime will need before it starts
// the tool, so that a tool that fills the limit cannot make a thread the
// runtime needs later fail, which would end the helper with the call (a
// helper that ends without a report is a sandbox error of the call, never
// the tool's exit status). Memory is RLIMIT_DATA (heap, stacks,
// private mappings) of each process. File size (DefaultFileSize 1 GiB,
// "fileSize", capped at DefaultMaxFileSize) is RLIMIT_FSIZE; the helper
// ignores SIGXFSZ, so a write past it fails with EFBIG. The call's
// temporary directory is a tmpfs of DefaultTempSize (1 GiB, "tempSize",
// capped at a quarter of the machine's memory) in its mount namespace;
// without namespaces only the file size holds. Cgroups are not used: on a host whose
// cgroup v2 hierarchy has the memory and pids controllers delegated they
// would bound a call's total memory, which rlimits cannot; this is a known
// gap (a call may use processes × memory at most). Core dumps are off.
// Every tool has an OOM score of 1000: under memory pressure the kernel
// kills tools before the server. The running calls' process limits add up
// to at most Options.ProcessBudget (a quarter of pid_max and of the
// user's RLIMIT_NPROC): a call that would exceed it waits, so that the
// server keeps the processes and threads it needs.
//
// Output: standard output and standard error are each capped at
// Options.OutputCap (1 MiB); the excess is read and dropped (the tool is
// never blocked), Result.Truncated is set and StdoutBytes/StderrBytes say
// how much was written.
//
// Concurrency classes: parallel (no limit), serial (one call of that tool
// at a time, across all sessions), exclusive (no other call of the same
// session+agent runs meanwhile; it waits for running ones). Waiting is
// first-come first-served.
//
// Each call has a private temporary directory, TempRoot/toolsrv-call-PID-*,
// removed after it; NewRunner removes those whose PID no longer runs (a
// server killed with SIGKILL leaves them behind).
//
// # Sandbox
//
// Landlock, pinned to ABI V7 in best-effort mode (at least ABI 1 required),
// applied by the helper to the thread that starts the tool, which ends
// after the start (the tool inherits the domain; see The helper):
//   - read+execute: /usr /bin /sbin /lib* /opt, /proc (the call's own, see
//     Isolation), /sys, /dev/{u,}random,
//     a list of non-secret /etc files (loader cache, passwd, group, hosts,
//     resolv.conf, ssl, localtime, machine-id, ...; not shadow or ssh keys),
//     the system logs (/var/log, /run/log/journal), the tool's own
//     directory and its executable, the git repository that holds the
//     working directory (so git works in a subdirectory; not when that
//     repository is the home directory or above it), and Options.ReadPaths
//     (the operator's --read). A tool directory that is the home
//     directory, one above it, or a hidden directory of it (~/.config
//     itself; not ~/.config/ollie/tools) is not granted: every tool there
//     could read the user's keys and tokens. Such a tool gets its own
//     executable only (a self-contained script still runs; one that reads
//     files beside it fails with a denial), and the runner warns once to
//     move the tools into a directory of their own. Refusing such a
//     directory when the catalog loads would have hidden tools that work;
//     granting it would leak. Every path is given to Landlock with its
//     symlinks resolved;
//   - read-write (with rename across directories): the working directory
//     and the call's temporary directory; /dev/null, /dev/zero, /dev/full;
//     toolsrv's own paths inside the working directory (see WorkDirGuard)
//     are bound read-only over themselves in the call's mount namespace
//     (sandbox.Policy.Protect);
//   - readOnly tools: the working and temporary directories are read-only
//     too: no write anywhere but the null devices and their own output;
//   - nothing else: the home directory (other than a working directory
//     inside it) and the rest of the filesystem are unreadable;
//   - signals and abstract Unix sockets are scoped to the sandbox (ABI 6).
//
// An older kernel confines less (best effort): ABI 1 cannot allow renaming
// or linking into another directory (the rules then do not ask for it,
// and such a rename fails with EXDEV), ABI 1–2 cannot refuse truncation
// (the seccomp filter then refuses truncate(2) and O_TRUNC on a file
// opened for reading), ABI 3 has no TCP rules (the seccomp filter refuses
// the sockets anyway), ABI 1–4 no device ioctl rules, ABI 1–5 no scoping.
// sandbox.Policy.ABI confines as such a kernel would, for the tests that
// show it (TestOlderLandlockABIs); the runner never sets it.
//
// A seccomp filter (package exec/sandbox: seccomp.go) adds what Landlock
// ABI 7 lacks: without "network", no socket of any family but Unix and
// netlink (no TCP, UDP, raw or packet socket); with it, no MPTCP socket
// (Landlock's TCP rules do not cover MPTCP); no setuid or setgid bit on
// any file (chmod and file creation with those bits fail with EPERM); no
// io_uring (its operations bypass seccomp); no keyrings (keyctl, add_key
// and request_key fail with ENOSYS: the kernel's keyrings are the user's,
// and the call's own /proc hides /proc/keys); no ptrace, process_vm_readv,
// process_vm_writev or pidfd_getfd unless the tool declares "ptrace";
// system calls of a foreign ABI kill the process. no_new_privs is set. A root toolsrv's tools keep only
// CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER (bounded
// by Landlock's paths); CAP_FSETID goes, so writing a setuid file clears
// the bit.
//
// Failure to apply any of this makes the call fail with ErrSandbox (the
// helper exits 126 and reports the reason on the status pipe); nothing runs
// unconfined by accident. On a kernel without Landlock calls fail with
// ErrNoSandbox unless Options.AllowUnsandboxed (toolsrv's
// --allow-unsandboxed flag); then every Result has Unsandboxed set. An
// approved bypass tool runs without Landlock and seccomp, but with the
// limits, the lifetime and the descriptor hygiene.
//
// Not covered (Landlock ABI 7 limits): stat, chmod, chown and utime of
// files outside the allowed paths, and connecting to pathname Unix sockets
// (Landlock restricts those from ABI 9). The 9P socket is guarded by
// Identify instead; other sockets (a desktop's, a database's) are reachable
// by any tool that knows their path, as ordinary permissions allow: run
// toolsrv as an ordinary user. A symlink planted in the working directory
// does not widen access: Landlock checks the file it resolves to.
//
// # Long-running processes
//
// Runner.Start starts a process that outlives a call (an MCP server
// speaking over its standard input and output) through the same helper:
// the same Landlock rules and seccomp filter, namespaces, limits (its
// processes count against the process budget while it runs), descriptor
// hygiene and environment rules (a tool's base environment plus
// ProcessSpec.Env), with no timeout. It may read the system directories,
// its executable, ProcessSpec.Read, Options.ReadPaths and its working
// directory; write only its private temporary directory (its HOME and
// TMPDIR) and ProcessSpec.Write (sandbox.Policy.Write); use the network
// only with ProcessSpec.Network. ProcessSpec.Unconfined asks the bypass
// broker, at each start. Process.Stop closes its input, then after a
// grace period ends it and everything it started; the helper's
// parent-death signal ends it with the server.
//
// # Who is connecting
//
// Every process a helper starts, sandboxed or not, and every process those
// start, carries a mark it cannot remove: a finite hard RLIMIT_LOCKS (a
// limit without effect since Linux 2.4.25, which no process can raise again
// without CAP_SYS_RESOURCE in the initial user namespace). Runner.Identify
// reads the mark of the process at the other end of a Unix socket (through
// a pidfd, so that a process that exits cannot be replaced by another with
// its PID), and finds the live call it belongs to by its PID namespace (or,
// without namespaces, its parents up to the call's helper). toolsrv serve
// gives such a connection its own agent's files only (see package ninep).
//
// Options.WorkDirGuard decides, at every call, which directories may be a
// call's working directory (the one place tools write): not /, not the
// home directory or above it, not a hidden directory of home or anything
// in one, not one of toolsrv's own tool, profile or broker directories,
// not inside its cache, settings or socket directories; symlinks resolved
// everywhere, and the sandbox given the resolved directory. A directory
// that holds some of toolsrv's own paths is accepted, and those paths are
// kept read-only for the call.
//
// # Bypass
//
// A tool with "bypass": true runs unsandboxed only if the broker on
// Options.BypassSocket (OLLIE_BYPASS_SOCKET) answers {"allow": true} to one
// BypassRequest (tool, arguments, working directory, session, agent,
// command) within Options.BypassTimeout (60 s). No broker, a timeout, a
// malformed answer or a denial refuses the call (ErrBypassRefused); so
// does an answer that arrives after the deadline. An approval covers that
// one call. Arguments are validated before the broker is asked. ServeBroker is the protocol's server side
// ("toolsrv broker" asks a person on its terminal).
package exec
