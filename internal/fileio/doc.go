// Package fileio reads files that a user or a tool controls without letting
// the file decide how long the read takes or how much memory it costs.
//
// A path toolsrv reads (a .meta file, an agent profile, a thresholds file,
// the index cache) may be, or be swapped for, something that is not a regular
// file: a named pipe whose open or read blocks forever, a device that never
// ends, a socket. OpenRegular opens without blocking (O_NONBLOCK, O_NOCTTY),
// checks the opened descriptor, not the path, so a symlink swapped between a
// check and the open changes nothing, and refuses anything but a regular
// file. ReadRegular also bounds the read: it reads at most limit+1 bytes and
// reports a file longer than limit as too large.
//
// It also writes toolsrv's own files (its caches, state and settings):
// WriteAtomic and WriteFramed replace a file whole or not at all;
// PrivateDir makes the directory they live in this user's alone (0700, or
// refused when another user owns it); RemoveStaleTemps clears the
// temporary files of writers that were killed before their rename, which
// a live writer's lock on its own tells apart.
package fileio
