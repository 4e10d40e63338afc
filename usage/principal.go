package usage

import (
	"strings"
)

// Who recorded an event: its principal. Every event carries one, set by
// the path it came by (never read from the request's own text), and the
// ranking weighs an entry by how far its principal's record has earned
// belief (docs/usage.md, "Whose word counts"). The names:
//
//	owner                 the user at the terminal: toolsrv call --for, or
//	                      usage import --principal owner (the user vouches)
//	mcp:NAME              an MCP client: the name it gives itself over
//	                      stdio (never holding "@")
//	mcp:http@ID           an MCP client over HTTP: ID is the identity its
//	                      bearer token gives (owner: the token toolsrv
//	                      mcp --listen makes or is given)
//	9p:AGENT              a 9P session's agent, on this host's socket
//	9p:AGENT@tcp:HOST     the same, from a TCP peer (a remote host)
//	import:FILE#DIGEST    the lines of an imported file that this
//	                      installation did not export (its name and a
//	                      digest of its content)
//	instance:ID/…         another toolsrv instance sharing a PostgreSQL
//	                      namespace (ID: that instance's), whatever
//	                      principal it recorded
//	legacy:AGENT          entries recorded before events had principals
//	api                   a program using the Go API that names no client
//
// and, in the ranking only (never stored), author:TOOL, a tool's author
// speaking through the examples of its .meta file.
const (
	Owner          = "owner"
	PrefixMCP      = "mcp:"
	Prefix9P       = "9p:"
	PrefixImport   = "import:"
	PrefixInstance = "instance:"
	PrefixLegacy   = "legacy:"
	PrefixAuthor   = "author:"
	API            = "api"
)

// Legacy is the principal of an entry recorded before events had
// principals, by agent: entries of another time whose recorder is not
// known. They are not the owner's: a history may hold what anyone wrote
// into it then (the attacks this principal model answers were made on such
// histories), so they earn belief as any new principal does, by agreeing
// with the tools' own texts and with others, and an honest history regains
// most of its weight that way (docs/usage.md). The owner can take them as
// their own: usage export, then usage import --principal owner.
func Legacy(agent string) string { return PrefixLegacy + agent }

// LegacyUnit is the unit (Unit) of every legacy principal.
const LegacyUnit = "legacy"

// Unit is the principal that p's belief is earned and weighed by: p
// itself, but for another instance of a shared namespace (instance:ID/…:
// the instance, whatever names it recorded under), a remote host's 9P
// agents (9p:AGENT@tcp:HOST: the host) and the entries from before
// principals (legacy:AGENT: LegacyUnit, all of them one source, whose
// recorders are not known: in a shared namespace anyone with its role
// can write such rows under new names). A unit's names are its own to
// make, so they count as one.
func Unit(p string) string {
	if strings.HasPrefix(p, PrefixLegacy) {
		return LegacyUnit
	}
	if rest, ok := strings.CutPrefix(p, PrefixInstance); ok {
		if id, _, ok := strings.Cut(rest, "/"); ok {
			return PrefixInstance + id
		}
		return p
	}
	if strings.HasPrefix(p, Prefix9P) {
		if _, host, ok := strings.Cut(p, "@"); ok {
			return host
		}
	}
	return p
}

// cleanName makes a name given by a client (an MCP client's own name, a
// token's subject) fit a principal: printable, no white space, at most 64
// bytes; "" becomes "unnamed".
func cleanName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r > ' ' && r < 0x7f:
			b.WriteRune(r)
		case r == ' ' || r == '\t':
			b.WriteByte('_')
		case r > 0x7f && r != 0xFFFD && !isControl(r):
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "unnamed"
	}
	return b.String()
}

// isControl reports the control and formatting characters a terminal may
// act on.
func isControl(r rune) bool {
	return r < ' ' || (r >= 0x7f && r < 0xa0) || (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// MCPClient is the principal of an MCP client that calls itself name
// (over stdio: the name in its initialize request; over HTTP: the identity
// its token gives).
func MCPClient(name string) string { return PrefixMCP + cleanName(name) }

// NinePAgent is the principal of agent of a 9P session; host is the peer's
// host when it is not this host's own process ("": local).
func NinePAgent(agent, host string) string {
	if host == "" {
		return Prefix9P + cleanName(agent)
	}
	return Prefix9P + cleanName(agent) + "@" + cleanName(host)
}
