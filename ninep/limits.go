package ninep

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/hugelgupf/p9/linux"
)

// Limits bound what clients can make the server hold. A request past a
// limit is refused with an errno and the reason in err; a connection past
// MaxConns gets Rlerror(EUSERS) to its Tversion and is closed.
type Limits struct {
	// MaxConns is the most connections served at once (256).
	MaxConns int
	// MaxFiles is the most files (fids and the directories they hang
	// from) one connection may hold open (4096).
	MaxFiles int
	// MaxSessions is the most sessions (1024).
	MaxSessions int
	// MaxAgents is the most agents in one session (64).
	MaxAgents int
}

func (l *Limits) setDefaults() {
	if l.MaxConns <= 0 {
		l.MaxConns = 256
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = 4096
	}
	if l.MaxSessions <= 0 {
		l.MaxSessions = 1024
	}
	if l.MaxAgents <= 0 {
		l.MaxAgents = 64
	}
}

// fileOpened counts a File handed to the library for this connection; past
// the limit it is refused.
func (c *conn) fileOpened() error {
	if n := c.files.Add(1); n > int64(c.srv.opts.Limits.MaxFiles) {
		c.files.Add(-1)
		return c.fail(nil, Refuse(linux.EMFILE, "this connection holds %d files, the limit (clunk the fids you no longer use)", c.srv.opts.Limits.MaxFiles))
	}
	return nil
}

func (c *conn) fileClosed() { c.files.Add(-1) }

// refuseConn answers the first message of a connection the server cannot
// take (a Tversion, normally) with Rlerror(EUSERS), "too many users", and
// closes it; the peer gets a few seconds to send it.
func refuseConn(rwc io.ReadWriteCloser, setDeadline func(time.Time) error) {
	defer rwc.Close()
	if setDeadline != nil {
		setDeadline(time.Now().Add(3 * time.Second))
	}
	var hdr [headerLen]byte
	if _, err := io.ReadFull(rwc, hdr[:]); err != nil {
		return
	}
	rwc.Write(rlerror(hdr[5], hdr[6], linux.EUSERS))
}

// connCount counts the connections being served.
type connCount struct {
	mu sync.Mutex
	n  int
	// left, when not nil, is closed when a connection leaves.
	left chan struct{}
}

func (cc *connCount) enter(max int) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n >= max {
		return false
	}
	cc.n++
	return true
}

func (cc *connCount) leave() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.n--
	if cc.left != nil {
		close(cc.left)
		cc.left = nil
	}
}

// waitAtMost waits until at most n connections are being served, or until
// ctx ends.
func (cc *connCount) waitAtMost(ctx context.Context, n int) error {
	for {
		cc.mu.Lock()
		if cc.n <= n {
			cc.mu.Unlock()
			return nil
		}
		if cc.left == nil {
			cc.left = make(chan struct{})
		}
		left := cc.left
		cc.mu.Unlock()
		select {
		case <-left:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func tooMany(what string, n int) error {
	return Refuse(linux.ENOSPC, "%s: the server's limit is %d; remove ones you no longer use", what, n)
}
