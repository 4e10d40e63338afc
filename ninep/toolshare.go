package ninep

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// The tools' share of the server (Limits.Tool). A tool's connection is one
// confined to an agent or denied; the owner's other processes (and TCP
// peers, which have full access anyway) are full clients. Tools get at
// most Tool.Conns connections together and Tool.PeerConns per peer, so a
// hostile tool can never take the connections the owner's clients need,
// nor starve the tools of other agents; and their open files hold at most
// Tool.PeerBuffered bytes per peer and Tool.Buffered in all (see budget).

// tool reports whether the connection is a tool's: it gets the tools'
// share of the server.
func (a Access) tool() bool { return a.Denied != "" || a.scoped() }

// peer names the tools whose connections share one peer's limits: those
// of one agent; all denied connections are one peer.
func (a Access) peer() (key, what string) {
	if a.Denied != "" {
		return "denied", "the connections the server denies"
	}
	return "agent " + a.Session + "/" + a.Agent, fmt.Sprintf("the tool connections of agent %s of session %s", a.Agent, a.Session)
}

// toolPeer is one peer's share: its connections, and the budget of their
// open files.
type toolPeer struct {
	key   string
	conns int
	buf   *budget
}

// enterTool admits a connection of a tool, or says why it cannot be.
func (cc *connCount) enterTool(acc Access, l ToolLimits, all *budget) (*toolPeer, error) {
	key, what := acc.peer()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.tools >= l.Conns {
		return nil, fmt.Errorf("tools hold %d connections, the limit for all tools together (the rest are kept for full clients)", cc.tools)
	}
	p := cc.peers[key]
	if p == nil {
		p = &toolPeer{key: key, buf: newBudget(what, l.PeerBuffered, all)}
	}
	if p.conns >= l.PeerConns {
		return nil, fmt.Errorf("%s hold %d connections, the limit for one agent's tools", what, p.conns)
	}
	if cc.peers == nil {
		cc.peers = map[string]*toolPeer{}
	}
	cc.peers[key] = p
	p.conns++
	cc.tools++
	return p, nil
}

// leaveTool gives back a connection enterTool admitted.
func (cc *connCount) leaveTool(p *toolPeer) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.tools--
	if p.conns--; p.conns == 0 {
		delete(cc.peers, p.key)
	}
}

// maxRefusing bounds the connections being refused at once (each is given
// a few seconds to send its Tversion, see refuseConn): past it, a
// connection is closed unanswered, so that a tool that connects again and
// again cannot make the server hold its sockets.
const maxRefusing = 64

// refuse refuses a connection (in the background) the server will not
// serve.
func (s *Server) refuse(rwc io.ReadWriteCloser, setDeadline func(time.Time) error) {
	if s.refusing.Add(1) > maxRefusing {
		s.refusing.Add(-1)
		rwc.Close()
		return
	}
	go func() {
		defer s.refusing.Add(-1)
		refuseConn(rwc, setDeadline)
	}()
}

// logRefused logs a refused connection, at most once a second (with how
// many went unlogged since), so that a tool that connects again and again
// cannot flood the log.
func (s *Server) logRefused(msg string, args ...any) {
	ok, skipped := s.refusedLog.allow(time.Now(), time.Second)
	if !ok {
		return
	}
	if skipped > 0 {
		args = append(args, "refused unlogged since the last", skipped)
	}
	s.log.Warn(msg, args...)
}

// logEvery lets one event in each period through.
type logEvery struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// allow reports whether the event at now is let through, and how many were
// not since the last that was.
func (l *logEvery) allow(now time.Time, period time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.skipped++
		return false, 0
	}
	n := l.skipped
	l.skipped, l.next = 0, now.Add(period)
	return true, n
}
