// Package exec runs tools: the call contract, the Landlock sandbox, bypass
// approval and the limits of SPEC §4–5.
//
// # Contract
//
// Runner.Call validates the arguments against the tool's compiled schema
// (every violation listed; nothing starts on a violation), then writes them
// as one compact JSON object and a newline to the tool's standard input;
// they never appear on a command line. Exit 0: standard output is the
// result, and Result.Content holds the "content" array when standard output
// is a {"content": [...]} object. Any other ending is a *CallError whose Kind
// is one of ErrInvalidArgs, ErrExit (with the standard error, or output,
// in the message), ErrTimeout, ErrCanceled, ErrSandbox, ErrNoSandbox,
// ErrBypassRefused, ErrStart, ErrBadCallContext; the Result rides along
// when the process ran.
//
// Environment (the whole of it; nothing else of the server's leaks):
// PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin;
// HOME and TMPDIR = the call's private temporary directory (the server's
// HOME only for unsandboxed calls); PWD = the working directory;
// LANG (C.UTF-8 unless the server has one), LC_ALL, LC_CTYPE, TZ when set;
// OLLIE_TOOLS_PATH; OLLIE_BYPASS_SOCKET when a broker is configured;
// OLLIE_SESSION_ID and OLLIE_UNAME when the caller is a session's agent;
// OLLIE_TOOL = the tool's name; plus any names the operator lists in
// Options.PassEnv.
//
// # Limits
//
// Timeout: the call's (CallContext.Timeout), else the tool's ("timeout" in
// the .meta), else Options.DefaultTimeout (60 s). The tool runs in its own
// process group; on timeout the group gets SIGTERM, then SIGKILL after
// Options.KillGrace (500 ms). When the tool's main process ends, for any
// reason, whatever is left of its group is killed too: tools cannot leave
// background processes behind. (A process that leaves the group with
// setsid escapes this; the output pipes are then closed after 2 s.)
// Time spent waiting for a concurrency class or for bypass approval does
// not count against the timeout; the caller's context bounds it.
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
// # Sandbox
//
// Landlock restricts the calling process for good, so it is never applied
// in the server: every sandboxed call re-executes Options.SelfExe (the
// toolsrv binary) as "toolsrv __sandbox POLICY -- ARGV", and that helper
// (HelperMain, in package exec/sandbox) restricts itself and execve's the
// tool in place. Any binary whose main calls sandbox.HelperMain will do;
// DefaultHelper prefers a slim "toolsrv-sandbox" installed next to toolsrv
// (several times cheaper to start; see bench/RESULTS.md, "Running tools"). Policy,
// pinned to Landlock ABI V7 in best-effort mode (at least ABI 1 required):
//   - read+execute: /usr /bin /sbin /lib* /opt, /proc, /dev/{u,}random, a
//     list of non-secret /etc files (loader cache, passwd, group, hosts,
//     resolv.conf, ssl, localtime, machine-id, ...; not shadow or ssh
//     keys), the system logs (/var/log, /run/log/journal), the tool's own
//     directory and its executable;
//   - read-write (with rename across directories): the working directory
//     and a private temporary directory made for the call and removed
//     after it; /dev/null, /dev/zero, /dev/full;
//   - readOnly tools: the working and temporary directories are read-only
//     too: no write anywhere but the null devices and their own output;
//   - nothing else: the home directory (other than a working directory
//     inside it) and the rest of the filesystem are unreadable;
//   - signals and abstract Unix sockets are scoped to the sandbox (ABI 6);
//   - no_new_privs is set, and when toolsrv runs as root the tool keeps
//     only the file-ownership capabilities (CHOWN, DAC_OVERRIDE,
//     DAC_READ_SEARCH, FOWNER, FSETID, bounded by Landlock's paths): the
//     rest (SYS_MODULE, SYS_ADMIN, SYS_RAWIO, NET_ADMIN, NET_RAW, SYS_PTRACE,
//     MKNOD, SETUID, ...) is dropped from the bounding set.
//
// Network: tools without "network": true get no TCP connect or bind
// (Landlock ABI 4+; below that such tools are refused unless they get the
// private network namespace), and the MPTCP gap (Landlock's TCP rules
// do not cover IPPROTO_MPTCP sockets) is closed twice: a seccomp filter
// makes socket(..., IPPROTO_MPTCP) fail with EPROTONOSUPPORT (programs fall
// back to TCP, which Landlock denies), and, when toolsrv runs as root, the
// tool also gets a fresh, empty network namespace (CLONE_NEWNET) with MPTCP
// disabled in it, so nothing, UDP included, is reachable. Tools with
// network keep the host's network.
//
// Failure to apply any of this makes the call fail with ErrSandbox (the
// helper exits 126 and reports the reason on a status pipe); nothing runs
// unconfined by accident. On a kernel without Landlock calls fail with
// ErrNoSandbox unless Options.AllowUnsandboxed (toolsrv's
// --allow-unsandboxed flag); then every Result has Unsandboxed set.
//
// Not covered (Landlock ABI 7 limits): stat, chmod, chown and utime of
// files outside the allowed paths, and connecting to pathname Unix sockets
// (Landlock restricts those from ABI 9): a tool that knows the path of the
// 9P socket or of the broker's socket can connect to it. Run toolsrv as an
// ordinary user, not root, so that ordinary permissions still apply there.
// A symlink planted in the working directory does not widen access:
// Landlock checks the file it resolves to.
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
