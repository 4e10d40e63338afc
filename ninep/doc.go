// Package ninep serves toolsrv as a 9P2000.L file tree: agents and
// scripts list, rank, load and call tools by reading and writing files. It
// uses github.com/hugelgupf/p9 for the protocol; every file type is composed
// from small mixins (nodes.go), and every directory is declared once, by a
// table from which both its listing and its lookup are derived (dirspec.go,
// tree.go).
//
// # The tree
//
//	tools                        r   catalog: "name<TAB>tier<TAB>description" per line
//	tools.json                   r   the full catalog as JSON (schemas, tiers, variants resolved,
//	                                 hidden tools, problems, shadowed definitions)
//	revision                     r   registry revision, a decimal number and a newline
//	errors                       r   one line per problem of an invalid .meta file: file[:line]: [field "f":] reason
//	err                          r   why the last refused request on this connection failed
//	rank                         rw  transaction: write a message, read the ranking
//	rank.json                    rw  the same transaction, answered with the engine's Answer as JSON
//	ctl                          w   "reload": rescan the tool directories now
//	version                      r   "toolsrv-9p 1" (Protocol: what this tree is) and "build ..."
//	session/                     d   mkdir session/S starts a session, rmdir (rm) ends it
//	session/S/ctl                rw  "cwd /ABS/PATH": the session's working directory; read: "cwd PATH"
//	session/S/meta/              d   .meta definitions sent to the session, one file each
//	session/S/meta/NAME          rw  write (create) the JSON: send tool NAME; read: it as sent; rm: withdraw it
//	session/S/tools              r   the session's catalog (the server's plus its sent tools), as /tools
//	session/S/tools.json         r   the same as JSON, as /tools.json (shadowed host tools listed)
//	session/S/revision           r   the session catalog's revision: moves with the server's and with every send
//	session/S/errors             r   what the sent definitions amount to here: their problems (as /errors),
//	                                 hidden on this host, the host's tool served instead, shadowing the host's
//	session/S/err                r   why the last refused request in this session failed
//	session/S/agent/             d   mkdir session/S/agent/A starts agent A (profile A applies), rmdir ends it
//	session/S/agent/A/tools      rw  read: the loaded tools (same format as /tools); write names, one per line: load them
//	session/S/agent/A/ctl        rw  write "tool_load NAME", "tool_unload NAME", "turn" (one per line);
//	                                 read: "session S", "agent A", "turn N", then notices
//	session/S/agent/A/schemas    r   JSON array of the loaded tools as the model sees them:
//	                                 {"name","description","prompt","parameters"} (never the keywords)
//	session/S/agent/A/rank       rw  transaction: the ranking restricted to the agent's allowTools
//	session/S/agent/A/rank.json  rw  the same, answered as JSON
//	session/S/agent/A/call/      d   lists the loaded tools
//	session/S/agent/A/call/NAME  rw  transaction: write the arguments (JSON object), read the result
//	session/S/agent/A/err        r   why this agent's last refused request failed
//
// # Transactions
//
// rank, rank.json and call/NAME work per open file, like Plan 9's /net/cs:
// a write sets the request, reads on the same fid return the answer; other
// fids, on this or any other connection, never see it. A write at offset 0
// starts a new request. A rank request is plain text (the user's message)
// or a JSON object {"query": "...", "context": ["earlier message", ...],
// "limit": N, "explain": true} (engine.ParseRequest: "text" and "k" are
// the older names of query and limit; a limit left out is the server's,
// serve --limit). The rank answer is "name<TAB>score" lines, best first,
// scores in [0,1] with four decimals, preceded by comment lines: "# answer
// ID" (the answer's ID) and, when there is something to say, "# degraded:
// REASON" (the ranking fell back to lexical scores) and "# NOTE" (for
// example why no tool fits); with "explain", a last "# explain JSON" line.
// rank.json answers the same as one line of JSON: the engine's Answer, as
// "toolsrv rank --json" and MCP's find_tools give it ({"id", "tools":
// [{"name", "score", "hot", "named"}], "noToolFits", "reason", "degraded",
// "degradedReason", "explain"}). An agent's loads and calls follow its
// answers: the engine links each to the session's latest answer that
// offered the tool (the usage history; a tool's own connection records
// nothing). A call answer is one JSON object, the engine's CallResult:
//
//	{"tool":"N","ok":true,"exitCode":0,"output":"stdout","content":[...],"stderr":"...",
//	 "truncated":false,"unsandboxed":false,"denied":"...","durationMs":12.5}
//
// (content only when the output was {"content": [...]}; denied only when
// the tool failed on a permission error the sandbox most likely caused:
// "denied by the sandbox: PATH is outside what this tool may read ...").
// A tool that ran and exited non-zero is an answer with its exit code,
// "ok": false, "error" and "kind": "tool failed", not a refusal.
// Arguments are run when they form a complete JSON value, so arguments
// larger than one message arrive whole; a message is ranked at the end of
// the write. Empty arguments mean {}.
//
// # Refusals
//
// A refused request answers with an errno (9P2000.L carries no text) and
// leaves the reason in the connection's err file and, for an agent's
// request, in the agent's err. (So does a rank answered from a catalog
// without a tool, whose "# " line says why: engine.Options.NoTools.)
//
//	ENOENT  unknown tool, hidden tool (with the reason), no such session/agent/file,
//	        unloading a tool that is not loaded, an agent or session that has ended
//	EACCES  tool not in the agent profile's allowTools; calling a tool that is not
//	        loaded; opening a read-only file for writing (or /ctl for reading);
//	        a bypass the broker refused; anything outside a tool connection's
//	        own agent; a cwd the server refuses
//	EINVAL  unknown command, bad name, bad arguments (every schema violation listed),
//	        bad rank request, empty message, bad agent profile
//	EEXIST  session or agent already exists
//	EPERM   creating files or directories where none can be made, removing fixed
//	        files at the root, a call the sandbox cannot run
//	ENOSYS  no ranker or no exec runner in this server
//	ENOSPC, ENOBUFS, EMFILE, EFBIG, EUSERS  past a limit (see Limits)
//	ETIMEDOUT, EINTR, ENOEXEC  a call timed out, was cancelled, could not start;
//	EIO     anything else
//
// # Decisions where the spec is silent
//
//   - Sessions and agents belong to the server, not to a connection: any
//     client with full access may use a session another made, and they live
//     until removed or the server stops. Removing session/S or
//     session/S/agent/A ends it whatever it contains; unlinking the fixed
//     files inside succeeds without effect, so "rm -r" works.
//   - Commands end at a newline or at the end of a write shorter than 4072
//     bytes (msize 4096 minus the 24-byte I/O header: no client splits a
//     write below that); a longer write may be a piece of a larger one and
//     its unfinished last line waits for the next write or for close.
//     Lines before a refused one are applied. Truncating a writable file
//     (echo x > ctl) is accepted and ignored.
//   - Retention: loading or calling a tool marks it used in the current
//     turn; "turn" ends the turn. A cold tool unused for 1 full turn and a
//     warm tool unused for Options.WarmTurns (5) full turns are unloaded at
//     that "turn"; hot tools stay until unloaded by name. Tools the agent's
//     profile auto-loads stay loaded whatever their tier (the profile says
//     the agent always needs them) until unloaded by name or gone from the
//     catalog. Each unload is noted in ctl.
//   - An agent follows catalog changes when it is next used: a loaded tool
//     that disappeared (or became hidden) is unloaded with a ctl notice, one
//     whose definition changed stays loaded, is noted ("read schemas
//     again"), and schemas always show the current definition.
//   - autoLoad names that are unknown or not allowed are skipped with a ctl
//     notice; they do not stop the agent from starting. An agent without a
//     profile file gets an empty profile; a profile that does not parse
//     makes mkdir fail with EINVAL.
//   - A session starts in Options.WorkDir (toolsrv serve: --workdir, default
//     its current directory); "cwd PATH" in session/S/ctl changes it, on a
//     connection with full access only, and Options.CheckWorkDir may refuse
//     the directory or replace it (toolsrv serve resolves its symlinks and
//     refuses the home directory, one above it, a hidden directory of it,
//     and toolsrv's own directories). Calls run there (read-write for the
//     tool unless it is readOnly).
//   - Calls pass the tool's own timeout; the exec runner applies its
//     default. Tools find the server through $TOOLSRV_ADDR (see AddrEnv)
//     and their session and agent through $OLLIE_SESSION_ID and $OLLIE_UNAME.
//
// # Sent definitions
//
// A session can be sent .meta definitions (from another machine: a
// federation, see package remote): writing session/S/meta/NAME sends tool
// NAME, resolved against this server's host as a file in a tools
// directory would be (its variants matched here, its command looked up on
// this host's $PATH, the same validation and messages); it has no
// directory, so an executable beside a .meta cannot come with it. The
// definition is sent when the written JSON is complete (it parses), at the
// end of the write(2), or at close; a write at offset 0 starts a new one.
// A definition with problems is kept (listed, read back, its problems in
// session/S/errors) and its write refused with EINVAL and the problems; a
// definition over registry.MaxSentSize (256 KiB) is refused with EFBIG and
// not kept. The session's catalog (its tools, rank, loads and calls) is the
// server's plus its sent tools: a sent tool wins over the server's tool of
// the same name in that session, and session/S/errors says so; a hidden or
// invalid sent definition shadows nothing. Other sessions and the root
// files never see sent tools. Options.Overlays makes the session's catalog
// at the first send (without it, ENOSYS).
//
// # Who may do what
//
// Options.Access decides, per connection, what it may do (see Access).
// toolsrv serve identifies the process at the other end of a Unix socket
// connection: a process that is a tool call of this server (or a process
// such a tool started) gets its own agent only: session/S/agent/A/ctl
// (tool_load, tool_unload, turn), tools, schemas, err, and the root err;
// it sees no other session or agent and cannot make or remove any, set a
// cwd, rank or call. A tool of another toolsrv, or of a call that ended,
// gets nothing (the root err says why). Every other process of the
// socket's owner has full access. TCP connections cannot be identified:
// each must first send the server's token (Options.Token) as its attach
// name, the aname of its Tattach and of its Tauth if it sends one
// ("diodls -a TOKEN", v9fs's "aname=TOKEN", the Client's WithToken); a
// missing or wrong one is refused with EACCES, and the connection is
// closed. With it, a TCP connection has full access but cannot send
// definitions (Access.Unauthenticated): only connections the operating
// system authenticated can, the Unix socket's (its owner's processes that
// are not tools) and toolsrv serve --stdio's (under ssh, relayed to the
// socket). Tools never get the token, so a tool with "network": true that
// reaches a TCP address is refused; give tools the Unix socket, whose
// attach names are ignored. Every attach is at the root.
// Each entry of the tree declares which
// of the three kinds of connection may see it (tree.go): a name a
// connection may not see is neither listed nor opened (EACCES, and the
// reason in err), at the root whether it exists or not.
//
// # Limits
//
// Options.Limits bound what clients can make the server hold: 256
// connections at once (one more gets Rlerror EUSERS to its Tversion and is
// closed), 4096 open files per connection (fids and the directories they
// hang from; one more walk gets EMFILE), 1024 sessions and 64 agents per
// session (ENOSPC), 256 definitions sent per session (ENOSPC), and 32 MiB
// held by one connection's open files: its unfinished writes (a command
// before its newline, a rank or call request or a definition still
// arriving; each at most 4 MiB, EFBIG) and the snapshots its readers work
// through (not the catalog texts every reader shares, nor err files, so a
// client at its limit can still read why). A write past it gets ENOSPC,
// a read ENOBUFS; a refused write drops the unfinished command or request
// it belonged to, and clunking a fid gives its bytes back. The reason is
// in err.
//
// Tools get a share of that (Limits.Tool). A connection confined to an
// agent, or denied, is a tool's (see "Who may do what"); the tools of one
// agent are one peer, and all denied connections another. Tools get at
// most 64 connections together (a quarter of them: the rest are always
// there for the owner's clients) and 8 per peer, refused as above with
// EUSERS; 128 open files per connection (a fid on its agent's ctl holds
// 5 of them); messages of at most 64 KiB (a Tversion asking more is
// answered with 64 KiB, and a larger message closes the connection: the
// 9P library keeps buffers of the negotiated size per connection); and
// 2 MiB held by one peer's open files together, 16 MiB by all tool
// connections together. So one agent's tools can pin about 4 MiB of the
// server's memory, and all tools about 30 MiB, where one tool could pin
// gigabytes (4 MiB of unfinished command on each of 4096 fids of each of
// 256 connections, each with 4 MiB message buffers) and take every
// connection, the owner's client getting EUSERS. TCP connections with the
// token are full clients: they cannot be identified, and have full access.
// Refused connections are logged at most once a second.
//
// # Connections
//
// Each connection gets its own p9.Server, so that it gets its own root, err
// file and open files (the library tells Attach nothing about the
// connection). Between the connection and the library sits a shim
// (shim.go, which says which library behaviour each rule is for): Tauth
// is answered with ENOENT, "no authentication needed", which Debian's diod
// client needs to go on (EACCES over TCP without the token); the attach
// name of a Tattach is checked against the token (over TCP) and removed,
// so that the library, which would walk it as a path, attaches at the root
// and never sees the token; nothing but a version negotiation is accepted
// until one succeeded (EPROTO), and nothing during one; a Tflush of itself
// or of another Tflush is answered at once (there is nothing to flush); a
// request reusing a busy tag is dropped; and when the peer hangs up, its
// calls are cancelled and every request it sent is still answered before
// the connection closes. The 9P library is a copy of hugelgupf/p9 v0.3.0
// with upstream's fix of a hang-up race (third_party/p9; its PATCHES.md
// says what differs and why).
// The default address is the Unix socket $XDG_RUNTIME_DIR/toolsrv/9p.sock,
// else ~/.cache/toolsrv/9p.sock (mode 0600, its directory 0700); TCP only
// when asked. The Unix socket's access control is its mode (0600 in a 0700
// directory) and its peers' credentials; TCP's is the token.
package ninep
