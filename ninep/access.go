package ninep

import (
	"fmt"

	"github.com/hugelgupf/p9/linux"
)

// Access is what one connection may do. The zero value is full access: the
// socket's owner (the 9P socket is mode 0600 in a 0700 directory).
type Access struct {
	// Session and Agent, when set, confine the connection to that agent of
	// that session: reading and writing its ctl (tool_load, tool_unload,
	// turn) and its tools, reading its schemas and err, and the root err.
	// Nothing else is there: no other session or agent, no session ctl
	// (cwd), no call, no rank, no mkdir or rm. This is what a tool's own
	// connection gets: it can do no more than the tool itself.
	Session, Agent string
	// Denied, when set, refuses everything; the reason is readable in the
	// root err file.
	Denied string
	// Unauthenticated, when set, says why the operating system cannot
	// vouch for the peer (a TCP connection, which gets this far only with
	// the server's token: Options.Token): it may do everything else, but
	// not send tool definitions to a session (session/S/meta/), which
	// would make this host run what they name; the reason is part of the
	// refusal. The token shows that the peer knows a secret, not whose
	// process it is. Connections the OS authenticated are the Unix socket's
	// (peer credentials of the server's own user) and toolsrv serve
	// --stdio's, which reach it under ssh through that socket.
	Unauthenticated string
}

// scoped reports whether the connection is confined to one agent.
func (a Access) scoped() bool { return a.Agent != "" || a.Session != "" }

// need is the access a connection must have to see an entry of the tree
// (dirspec.go): the three kinds of connection see nested sets of it.
type need uint8

const (
	// needNothing: every connection, a denied one too (the root err).
	needNothing need = iota
	// needAgent: a connection with full access, or one confined to an
	// agent when the entry is on the way to that agent or inside it (the
	// session and agent directories let only its own through).
	needAgent
	// needFull: full access only.
	needFull
)

// has reports whether the connection has the access n.
func (a Access) has(n need) bool {
	switch n {
	case needNothing:
		return true
	case needAgent:
		return a.Denied == ""
	}
	return a.Denied == "" && !a.scoped()
}

// refuse is the refusal a denied connection gets for anything, and a
// confined one for anything outside its agent.
func (a Access) refuse(what string) error {
	if a.Denied != "" {
		return Refuse(linux.EACCES, "%s", a.Denied)
	}
	return Refuse(linux.EACCES, "%s: this connection comes from a tool called by agent %s of session %s and may only use that agent's ctl (tool_load, tool_unload, turn), tools, schemas and err (session/%s/agent/%s/)",
		what, a.Agent, a.Session, a.Session, a.Agent)
}

// allowsSession reports whether the connection may see session name.
func (a Access) allowsSession(name string) bool {
	return a.Denied == "" && (!a.scoped() || a.Session == name)
}

// allowsAgent reports whether the connection may see agent name of session
// sess.
func (a Access) allowsAgent(sess, name string) bool {
	return a.Denied == "" && (!a.scoped() || (a.Session == sess && a.Agent == name))
}

func (a Access) String() string {
	switch {
	case a.Denied != "":
		return "denied"
	case a.scoped():
		return fmt.Sprintf("agent %s/%s only", a.Session, a.Agent)
	case a.Unauthenticated != "":
		return "full, no definitions"
	}
	return "full"
}
