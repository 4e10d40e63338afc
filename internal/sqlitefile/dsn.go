package sqlitefile

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BusyTimeout is how long a connection waits for another one's write (in
// this process or another) before it gives up with SQLITE_BUSY, in
// SQLite's busy handler and then in InTx. A write transaction of toolsrv's
// takes well under a millisecond, so only a machine stalled for seconds
// reaches it; the context of the call ends the wait sooner.
const BusyTimeout = 10 * time.Second

// DSN is the modernc.org/sqlite data source name of the database at path
// (an absolute path): a file: URI, so that mode=rw opens an existing file
// without ever creating it (the caller makes the file itself, with the
// mode it wants); write transactions begin IMMEDIATE (they take the write
// lock at BEGIN, so two of them never deadlock upgrading a read lock);
// read-only ones (sql.TxOptions.ReadOnly) begin DEFERRED. Every
// connection sets busy_timeout first (so that switching the journal mode
// waits for a writer rather than failing), then pragmas in order, each as
// "name(value)".
func DSN(path string, pragmas ...string) string {
	q := []string{"mode=rw", "_txlock=immediate",
		"_pragma=" + url.QueryEscape("busy_timeout("+strconv.Itoa(int(BusyTimeout/time.Millisecond))+")")}
	for _, p := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(p))
	}
	u := url.URL{Scheme: "file", Path: path}
	return u.String() + "?" + strings.Join(q, "&")
}
