// Package usage keeps which tool an installation's agents called for which
// request, so that ranking can learn from use.
//
// A capture path (MCP, 9P, the CLI) records an Event per answered request;
// a Store merges identical ones into an Entry per (normalized request,
// tool, agent) with the calls counted, the failures, the first and last
// times and the latest wording. The ranking follows the store through a
// Follower: the history whole once (Snapshot), then what changed since
// the version it has (Changes), looking at every poll and when a shared
// store says another host recorded (Notifier). The Follower is the only
// code outside the stores that knows their optional interfaces (Derived,
// Notifier) and ErrResnapshot, as database/sql keeps its drivers' to
// itself; it keeps nothing of the history (the ranking's view does).
//
//	store, warnings, err := usage.Open(ctx, usage.DefaultPath(os.Getenv), usage.Options{})
//	err = store.Record(ctx, usage.Event{Request: msg, Tool: "git_status", OK: true, Agent: "claude", Source: usage.SourceMCP})
//	f := usage.NewFollower(store)
//	name, version, err := f.Head(ctx)   // which history, at which version
//	d, err := f.Since(ctx, -1)          // the whole history (d.Full)
//	d, err = f.Since(ctx, d.Version)    // what changed since; ErrResnapshot: Since(ctx, -1) again
//
// Open takes a file path (the embedded store below) or a URL whose scheme a
// driver registered (Register), as database/sql drivers do: package
// usage/postgres registers "postgres" and "postgresql", a store shared by
// a team's hosts behind the same interface (imported by cmd/toolsrv; a
// program without that import refuses such URLs with a clear error).
//
// Requests are user text: a store keeps them for this user alone, never
// sends them anywhere and never puts them in a log or an error message.
// What Options bounds (entries per tool, per agent and tool, in all; calls
// per entry; how long) is enforced at every Record, and at Open for the
// retention; see Options for the defaults and why.
//
// # The embedded store
//
// An SQLite database (modernc.org/sqlite, a translation of SQLite's C to Go,
// so the CGO_ENABLED=0 builds keep working) through database/sql. It is made
// at the first Record, mode 0600 in a directory made private
// (fileio.PrivateDir: 0700, and refused when shared or another user's).
//
// Why SQLite, and not bbolt or an append log: serve, mcp and call record at
// once, from several processes. bbolt holds an exclusive lock on its file
// while a read-write handle is open, so a long-running server would lock
// every call out, or every process would have to open and close the file
// around each write. SQLite in WAL mode is built for this: one writer at a
// time (the others wait, up to ten seconds), readers never blocked, and a
// commit survives the process being killed at any point (see pragmas). An
// append log would have to rebuild merging, eviction, a crash-safe
// compaction and forgetting (rewriting the log without a request, and
// proving no copy is left) by hand, which SQLite already does and has
// tested for decades.
//
// How: every setting is in pragmas (WAL, synchronous=NORMAL: a process
// kill loses at most the transaction being written; only a power loss can
// lose the last commits; the file memory-mapped for reading). A write
// transaction begins IMMEDIATE. Each entry is stored whole in one column
// (see codec.go) beside the columns the queries select by, because a
// snapshot reading ten columns per row took three times as long. A damaged file
// (sqlitefile.IsDamage: SQLite's NOTADB or CORRUPT, a bad header or
// layout; nothing else) is set aside as PATH.damaged-TIME, a name never
// reused, and a new store started: at Open for a bad header or layout
// (and any damage with Options.Check), otherwise at the first call that
// runs into it. A file that cannot be written now (a full disk, an I/O
// error) is left as it is and the call's error returned. Forget rewrites the file (VACUUM, with secure_delete
// on) and empties the write-ahead log, so nothing forgotten stays on disk.
//
// What it costs, measured on the project's 2-core machine (quiet, unless
// said; "CPU" is the process's user+system time, both cores):
//
//   - the toolsrv binary: +6.4 MB (34.8 to 41.2 MB; stripped 28.8 to 33.0
//     MB); go.mod gains modernc.org/sqlite, libc, mathutil, memory,
//     ncruces/go-strftime and remyoudompheng/bigfft, and raises
//     golang.org/x/sync (v0.20 to v0.24), go-humanize and go-isatty to
//     what they need;
//   - a cold build (empty GOCACHE) of cmd/toolsrv: about +40 s of CPU
//     (136 to 174 s, two builds each while other builds shared the
//     machine);
//   - Record of one event: 0.37-0.39 ms (wall and CPU), most of it
//     SQLite's statements; a batch costs about 0.2 ms per event;
//   - Snapshot: 50,000 entries (the default cap) 60-63 ms; 100,000
//     entries 108-118 ms (140-146 ms of CPU: the garbage collector runs
//     on the other core). Each row through database/sql and the driver
//     costs about as much as decoding the entry, so entries are read as
//     one column each (ten columns took three times as long), decoded
//     into a few large blocks rather than two allocations per entry, from
//     the memory-mapped file (no read system call per page). Joining the
//     records of a range of rows in SQL (group_concat) did not help;
//   - Open of a full store (50,000 entries, about 25 MB): 1.1-1.8 ms, and
//     85 ms (under load) with Options.Check.
package usage
