// Package postgres is the usage store shared by a team's toolsrv
// instances: one PostgreSQL database, so that what one instance's agents
// call teaches the ranking of all. It registers the postgres:// and
// postgresql:// URLs with usage.Open; a command links it in with a blank
// import, as database/sql drivers are:
//
//	import _ "github.com/toolsrv/toolsrv/usage/postgres"
//	store, warnings, err := usage.Open(ctx, "postgres://team_a@db.example/toolsrv", usage.Options{})
//
// The URL is any libpq URL (what it leaves out comes from the PG*
// environment variables and ~/.pgpass, as with psql); pgx v5 and its pool
// speak to the server. docs/postgres.md says how to set a fleet up.
//
// # Design decisions
//
// Same entries as the embedded store. Events are merged into entries in
// Go by usage.Prepare and usage.Merge, the embedded store's own code, and
// the caps (per agent and tool, per tool, in all, retention) are the same
// statements over the namespace's rows: given the same events, both stores
// hold the same entries and the ranking is the same (tested).
//
// Exactly once. An event's ID is inserted with ON CONFLICT DO NOTHING in
// the transaction that merges it; an ID already there skips the event. A
// spooled event whose removal from the spool was lost (a crash after the
// commit) is sent again and skipped. IDs are kept as the embedded store
// keeps them (Options.IDWindow, IDCap), pruned once a minute per
// namespace rather than at every Record.
//
// One writer per namespace at a time. A Record locks its namespace's row
// (SELECT ... FOR UPDATE) and takes the next version from it, so versions
// are given in commit order and a reader that has seen version v has seen
// every change up to v: Changes(after) is then "entries whose version >
// after, keys removed after", the incremental catch-up each instance does.
// A sequence would give numbers out of commit order (a later number
// visible before an earlier one commits), and a reader would skip the
// earlier. Writers of different namespaces do not wait for each other.
// A Record is two round trips (pipelines of statements: the reads, then
// the writes and COMMIT).
//
// Learning within moments. The transaction that changes a namespace
// notifies its channel (pg_notify; toolsrv_usage_ plus a hash of the
// namespace, delivered at commit). Each store listens on a connection of
// its own and wakes its reader (usage.Notifier): the engine's view then
// catches up at once instead of at its next 2-second poll. Measured with
// three instances recording 2,000 events each at once: p99 well under a
// second (see the benchmarks).
//
// Namespaces and row-level security. Every row carries its namespace
// (--usage-namespace, default the URL's user); every statement names it.
// The tables are made with row-level security enabled (not forced) and a
// policy "namespace = current_user": the role that owns the tables (the
// one that laid them out) sees every namespace, a team's role granted
// access sees, adds, changes and deletes the rows of the namespace of its
// own name only, whatever SQL it sends; it cannot change the tables or
// their policies either (only their owner can). So with one role per team
// a leaked password exposes that team's history only. A bound role
// opening another namespace is refused at Open with a clear error. The
// LISTEN channels are not protected (PostgreSQL has no permission on
// them): a notification carries a version number, never a request.
//
// Layout and migrations. toolsrv lays out its tables itself, under an
// advisory lock (instances starting at once lay them out once), and
// records the layout version in toolsrv_usage_schema; a later toolsrv
// migrates forward in one transaction. A layout newer than this toolsrv
// knows (ErrNewerSchema) is refused, never altered. A role without the
// right to create tables is told to run toolsrv once as the owning role.
//
// Faults lose nothing. Each store keeps, on its host, one SQLite file
// (mode 0600 in a private directory: $XDG_STATE_HOME/toolsrv/shared/,
// named by a hash of server, database and namespace; Options.LocalDir
// elsewhere) holding
//   - the view: the namespace's entries as last read, and their version,
//     updated at each catch-up. Snapshot returns it when the server cannot
//     be reached, and it survives restarts: an instance started while the
//     server is down ranks from it (Open warns);
//   - the spool: events recorded while the server is unreachable (or
//     while earlier ones still wait, to keep their order), synced to disk
//     at each Record (synchronous=FULL), at most 100,000. A goroutine
//     sends them, oldest first, 500 a transaction, once the server answers
//     (it retries every 0.5 s, and at once when the LISTEN connection is
//     back); Close tries once more. Stats.Pending and PendingSince say how
//     many wait and since when (toolsrv usage stats).
//
// A local file SQLite reports as damaged (sqlitefile.IsDamage: not a
// database, or a corrupt one, and nothing else) is set aside
// (PATH.damaged-TIME, a name never reused) and made anew, with a warning:
// it is a copy of the server's and a queue, and must not keep toolsrv
// from starting. A file that cannot be opened or written now (a full
// disk, an I/O error, a permission refused) is not damaged: it is left
// as it is, with the calls it holds, and tried again at each call; the
// calls it cannot take meanwhile are held in memory (up to 10,000, in
// order after the spool's), written to the spool as soon as it takes
// them and sent when the server is back. Close tries the server, then
// the spool, and logs and returns how many calls neither took.
//
// An error for want of the server (connection refused or lost, a timeout,
// SQLSTATE classes 08, 53, 57P) means "down"; any other error (a policy
// violation, a layout error) is returned, not spooled. Forget needs the
// server (what it holds cannot be forgotten without it) and then removes
// the matches from the local view and spool too, rewriting the file.
//
// What Forget cannot promise. PostgreSQL keeps deleted rows until its
// vacuum, and its write-ahead log and backups keep them longer: Forget
// runs VACUUM on the tables (which only their owner may; for a team's
// role it is a no-op, and autovacuum does it later). docs/postgres.md
// says so.
package postgres
