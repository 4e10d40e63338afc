package postgres

import (
	"strings"

	"github.com/toolsrv/toolsrv/usage"
)

// Principals in a shared namespace. Every instance of a namespace writes
// with the same role, so the server cannot tell them apart; each instance
// has a key of its own instead (usage.InstanceKey, in its LocalDir) and
// stores the principal of each event it records as "ID/PRINCIPAL" (ID:
// its usage.InstanceID), with a seal of the entry's key under its key.
// Reading, an entry that this instance stored and sealed is its own and
// keeps its principal ("owner" is this host's owner); any other is
// another instance's, "instance:ID/PRINCIPAL" (usage.Unit: the instance
// is one principal, whatever names it recorded under), and one that
// claims this instance's ID without its seal is taken as another's too.
// A teammate's instance can therefore neither speak as this host's owner
// nor make its many agents many voices. It can add calls to an entry of
// this instance (the same request, tool and principal: what this
// instance said, counted more), not change what it says.

// ident is an instance's identity in a namespace.
type ident struct {
	key []byte
	id  string
}

// stored is the key a principal of this instance's events is stored
// under, and its seal.
func (in ident) stored(k usage.Key) (usage.Key, string) {
	k.Principal = in.id + "/" + k.Principal
	return k, usage.Seal(in.key, string(k.Hash()))
}

// presented is the principal an entry stored under k with seal is read
// as: this instance's own (sealed), another instance's, or one migrated
// from before principals (legacy:…, whoever wrote it: it earns belief
// like any).
func (in ident) presented(k usage.Key, seal string) string {
	id, p, ok := strings.Cut(k.Principal, "/")
	switch {
	case ok && id == in.id && usage.Sealed(in.key, seal, string(k.Hash())):
		return p
	case ok && id != "" && !strings.Contains(id, ":"):
		return usage.PrefixInstance + k.Principal
	case strings.HasPrefix(k.Principal, usage.PrefixLegacy):
		return k.Principal
	}
	return usage.PrefixInstance + "unknown/" + k.Principal
}

// storedPrincipal is the principal a presented one is stored under (for
// Forget's filter).
func (in ident) storedPrincipal(p string) string {
	switch {
	case strings.HasPrefix(p, usage.PrefixInstance+"unknown/"):
		return strings.TrimPrefix(p, usage.PrefixInstance+"unknown/")
	case strings.HasPrefix(p, usage.PrefixInstance):
		return strings.TrimPrefix(p, usage.PrefixInstance)
	case strings.HasPrefix(p, usage.PrefixLegacy):
		return p
	}
	return in.id + "/" + p
}
