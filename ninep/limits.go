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
// MaxConns, or past a tool's share (Tool), gets Rlerror(EUSERS) to its
// Tversion and is closed.
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
	// MaxSent is the most definitions one session may be sent (256);
	// each is at most registry.MaxSentSize bytes.
	MaxSent int
	// MaxBuffered is the most bytes one connection's open files may hold
	// for it together (32 MiB, eight requests of the largest size at
	// once): unfinished writes (a command without its newline yet, a rank
	// or call request or a definition still arriving) and the contents
	// its readers are working through, when they are the reader's own (a
	// catalog file's text is shared by all its readers, and an err file
	// must stay readable: neither is counted). A write past it gets
	// ENOSPC, a read ENOBUFS.
	MaxBuffered int
	// AttachTimeout is how long a connection that must send the token
	// (Options.Token: a TCP one) has to attach with it (10 s): one that
	// has not by then is closed, so that peers without the token cannot
	// hold MaxConns' connections, and the owner's clients out, by
	// connecting and sending nothing.
	AttachTimeout time.Duration
	// Tool is the share of the server that tools get.
	Tool ToolLimits
}

// ToolLimits bound what the connections of tools can make the server
// hold: a connection confined to an agent, or denied (see Access), is a
// tool's, and one peer is the tools of one agent (all denied connections
// are one peer). A hostile tool can thus pin little of the server's
// memory, and never the connections the owner's own clients need.
type ToolLimits struct {
	// Conns is the most tool connections at once (64; a quarter of
	// MaxConns, and always fewer than MaxConns): the rest of MaxConns is
	// kept for connections with full access.
	Conns int
	// PeerConns is the most connections of one peer at once (8).
	PeerConns int
	// Files is the most files one tool connection may hold open (128: a
	// fid on an agent's ctl holds 5, the directories on its way included;
	// what a tool may do needs a handful).
	Files int
	// PeerBuffered is the most bytes (see MaxBuffered) all connections
	// of one peer may hold together (2 MiB).
	PeerBuffered int
	// Buffered is the most bytes all tool connections may hold together
	// (16 MiB).
	Buffered int
}

// toolMsize is the largest 9P message a tool connection may negotiate:
// 64 KiB, the 9P library's default, which toolsrv's client (and so a
// tool's tool_load) asks for. Per connection the library keeps buffers of
// the negotiated size, 4 MiB when a client asks for it; tools have no use
// for messages that large (their commands are lines).
const toolMsize = 64 << 10

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
	if l.MaxSent <= 0 {
		l.MaxSent = 256
	}
	if l.MaxBuffered <= 0 {
		l.MaxBuffered = 32 << 20
	}
	if l.AttachTimeout <= 0 {
		l.AttachTimeout = 10 * time.Second
	}
	t := &l.Tool
	if t.Conns <= 0 {
		t.Conns = min(64, l.MaxConns/4)
	}
	t.Conns = max(1, min(t.Conns, l.MaxConns-1))
	if t.PeerConns <= 0 {
		t.PeerConns = 8
	}
	t.PeerConns = min(t.PeerConns, t.Conns)
	if t.Files <= 0 {
		t.Files = 128
	}
	t.Files = min(t.Files, l.MaxFiles)
	if t.Buffered <= 0 {
		t.Buffered = 16 << 20
	}
	if t.PeerBuffered <= 0 {
		t.PeerBuffered = 2 << 20
	}
	t.PeerBuffered = min(t.PeerBuffered, t.Buffered)
}

// fileOpened counts a File handed to the library for this connection; past
// the limit it is refused.
func (c *conn) fileOpened() error {
	if n := c.files.Add(1); n > int64(c.maxFiles) {
		c.files.Add(-1)
		return c.fail(nil, Refuse(linux.EMFILE, "this connection holds %d files, the limit%s (clunk the fids you no longer use)", c.maxFiles, c.toolNote()))
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

// connCount counts the connections being served, and those of tools
// (see toolshare.go).
type connCount struct {
	mu    sync.Mutex
	n     int
	tools int
	peers map[string]*toolPeer
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
