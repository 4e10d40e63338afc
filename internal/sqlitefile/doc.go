// Package sqlitefile holds what toolsrv's SQLite files share: the data
// source name that opens one safely (never creating it, write
// transactions taking the lock at BEGIN, a busy handler first) and the
// transaction that is run again while another process holds the lock.
//
// The usage history's embedded store (package usage) and the PostgreSQL
// store's local copy (package usage/postgres) both use it, so that a fix to
// how several processes share a file reaches both.
package sqlitefile
