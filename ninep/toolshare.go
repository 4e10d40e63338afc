package ninep

import (
	"fmt"
	"io"
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
