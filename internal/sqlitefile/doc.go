// Package sqlitefile holds what toolsrv's SQLite files share: File, a
// database in one private file of this user's (opened when needed,
// followed when another process replaces it); the data source name that
// opens one safely (never creating it, write transactions taking the lock
// at BEGIN, a busy handler first); the transaction that is run again
// while another process holds the lock; and the one rule for "damaged"
// (IsDamage) with setting a damaged file aside (SetAside).
//
// The rule: only a file SQLite reports as not a database or corrupt
// (SQLITE_NOTADB, SQLITE_CORRUPT), or that toolsrv finds is not one, is
// set aside and made anew. Out of space, an I/O error, a permission
// refused, a busy file are errors: the file and what it holds stay, and
// the caller reports what it could not write (or keeps it until it can).
// A set-aside name is never reused, and nothing is renamed onto an
// existing file.
//
// The usage history's embedded store (package usage) and the PostgreSQL
// store's local copy (package usage/postgres) both use it, so that a fix to
// how several processes share a file, or to what counts as damage,
// reaches both.
package sqlitefile
