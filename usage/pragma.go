package usage

// pragmas are set on every connection, in this order, after busy_timeout
// (sqlitefile.DSN: a connection waits up to sqlitefile.BusyTimeout for
// another one's write). Every other setting of the embedded store is here:
//
//   - journal_mode=WAL: readers never block the writer nor the writer them,
//     and several processes share one store (one writer at a time). A
//     commit appends to the write-ahead log; a torn append is ignored at
//     the next open (frames carry checksums), so a process killed
//     mid-write loses that transaction only.
//   - synchronous=NORMAL: a commit is written to the log but not synced
//     to the disk; the log is synced at each checkpoint. That is safe
//     against a process killed at any point (what it wrote is in the
//     kernel's page cache); only a power loss or a kernel crash can lose
//     the last commits before a checkpoint, never corrupt older ones. FULL
//     would sync at every commit, a disk flush per recorded call, to
//     protect usage history against power loss: not worth it.
//   - secure_delete=ON: deleted rows are overwritten with zeros, so what
//     Forget and eviction remove is not left in free pages.
//   - temp_store=MEMORY: sorts and VACUUM's copy stay in memory, not in
//     a temporary file elsewhere on disk holding requests.
//   - journal_size_limit: the log is cut back to 4 MiB after a checkpoint
//     instead of keeping its largest size.
//   - mmap_size: pages are read through a memory map of up to 256 MiB (the
//     default caps keep a store near 25 MB) rather than a read system
//     call each: a snapshot takes a fifth less time.
var pragmas = []string{
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	"secure_delete(ON)",
	"temp_store(MEMORY)",
	"journal_size_limit(4194304)",
	"mmap_size(268435456)",
}
