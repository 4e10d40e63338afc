package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// Principals in a shared namespace. Every instance of a namespace writes
// with the same role, so the server cannot tell them apart; each instance
// has a key of its own instead (usage.InstanceKey, in its LocalDir) and
// stores the principal of each event it records as "ID/PRINCIPAL" (ID:
// its usage.InstanceID), with a seal of the entry under its key: of its
// key and of the counts it wrote (its calls, failures, first and last
// use) and of the namespace, the counts written beside the seal. Reading, an entry that this
// instance stored and sealed is its own and keeps its principal ("owner"
// is this host's owner), with the counts its seal holds, whatever the
// row's columns say: a teammate (the same role) who raises the counts of
// this instance's owner's entry changes nothing this instance believes,
// and this instance's next call of that entry writes its own counts back.
// Any other entry is another instance's, "instance:ID/PRINCIPAL"
// (usage.Unit: the instance is one principal, whatever names it recorded
// under), and one that claims this instance's ID without its seal is
// taken as another's too; this instance's next call of such a key starts
// it anew. A teammate's instance can therefore neither speak as this
// host's owner, nor add to what the owner said, nor make its many agents
// many voices, nor date its entries back (dated). Entries from before principals (legacy:AGENT, whoever
// wrote them) are one principal together (usage.Unit), so that rows
// written by hand under new legacy names are no new voices either.

// ident is an instance's identity in a namespace. Its key is one for
// every namespace (and server) whose local copies share a directory, so
// the seal binds the namespace too: a row copied from one namespace into
// another is not this instance's own there.
type ident struct {
	key []byte
	id  string
	ns  string
}

// sealed are the counts of an entry as this instance wrote them.
type sealed struct {
	count, failed, first, last int64
}

// fields are what the seal of the entry of stored key hash with counts c
// binds: the namespace, the key and the counts.
func (in ident) fields(hash []byte, c sealed) []string {
	return []string{"entry 2", in.ns, string(hash), strconv.FormatInt(c.count, 10), strconv.FormatInt(c.failed, 10),
		strconv.FormatInt(c.first, 10), strconv.FormatInt(c.last, 10)}
}

// Secret is this instance's secret for purpose (usage.Keyed): of its key,
// which its teammates never see.
func (s *store) Secret(purpose string) []byte { return usage.DeriveSecret(s.in.key, purpose) }

// storedKey is the key a principal of this instance's events is stored
// under.
func (in ident) storedKey(k usage.Key) usage.Key {
	k.Principal = in.id + "/" + k.Principal
	return k
}

// seal is the seal column of this instance's entry of stored key hash
// with counts c: "MAC COUNT FAILED FIRST LAST".
func (in ident) seal(hash []byte, c sealed) string {
	return fmt.Sprintf("%s %d %d %d %d", usage.Seal(in.key, in.fields(hash, c)...), c.count, c.failed, c.first, c.last)
}

// unseal is what the seal column seal of the entry stored under k says,
// when it is this instance's seal of it: the counts this instance wrote.
func (in ident) unseal(k usage.Key, seal string) (sealed, bool) {
	id, _, ok := strings.Cut(k.Principal, "/")
	if !ok || id != in.id {
		return sealed{}, false
	}
	f := strings.Fields(seal)
	if len(f) != 5 {
		return sealed{}, false
	}
	var c sealed
	for i, p := range []*int64{&c.count, &c.failed, &c.first, &c.last} {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return sealed{}, false
		}
		*p = n
	}
	if !usage.Sealed(in.key, f[0], in.fields(k.Hash(), c)...) {
		return sealed{}, false
	}
	return c, true
}

// presented is the principal an entry stored under k with seal is read
// as: this instance's own (sealed), another instance's, or one migrated
// from before principals (legacy:…, whoever wrote it: it earns belief
// like any, with every other legacy name).
func (in ident) presented(k usage.Key, seal string) string {
	id, p, ok := strings.Cut(k.Principal, "/")
	if _, own := in.unseal(k, seal); own {
		return p
	}
	switch {
	case ok && id != "" && !strings.Contains(id, ":"):
		return usage.PrefixInstance + k.Principal
	case strings.HasPrefix(k.Principal, usage.PrefixLegacy):
		return k.Principal
	}
	return usage.PrefixInstance + "unknown/" + k.Principal
}

// read sets e (as scanned, its key as stored; failed its failures in
// 1/usage.FailScale) to what this instance believes of it: its presented
// principal and, for its own entry (own), the counts it sealed.
func (in ident) read(e *usage.Entry, failed *int64, seal string) (own bool) {
	c, own := in.unseal(e.Key, seal)
	if own {
		e.Count, *failed = c.count, c.failed
		e.Failed = (c.failed + usage.FailScale/2) / usage.FailScale
		e.First, e.Last = time.Unix(0, c.first), time.Unix(0, c.last)
	}
	e.Key.Principal = in.presented(e.Key, seal)
	return own
}

// dated sets the first use of e, an entry read as another's (not sealed
// by this instance), to no earlier than when this instance first read
// it: the row's first column is whatever anyone with the namespace's role
// wrote there, and what a principal's seniority counts by (which are
// judged first, which of its entries vouch for the others) must not be
// something it can backdate. The time of the first read is the view's
// (saved in the local copy), else the one Changes noted (seen), else now.
// viewMu is held.
func (s *store) dated(e *usage.Entry) {
	first, ok := s.seen[e.Key]
	if v, in := s.view[e.Key]; in && !v.First.IsZero() {
		first, ok = v.First, true
	}
	if !ok {
		first = s.opts.Now()
		s.seen[e.Key] = first
	}
	if e.First.Before(first) {
		e.First = first
	}
	if e.Last.Before(e.First) {
		e.Last = e.First
	}
}

// alternative is the other key that an entry of this instance's ID
// read as k may have been read as before: the seal it was read by
// changed since (this instance's key is its own sealed, "instance:ID/…"
// not). A reader drops it when it reads k changed or removed.
func (in ident) alternative(k usage.Key) usage.Key {
	if p, ok := strings.CutPrefix(k.Principal, usage.PrefixInstance+in.id+"/"); ok {
		k.Principal = p
	} else if !strings.HasPrefix(k.Principal, usage.PrefixInstance) && !strings.HasPrefix(k.Principal, usage.PrefixLegacy) {
		k.Principal = usage.PrefixInstance + in.id + "/" + k.Principal
	} else {
		return usage.Key{}
	}
	return k
}

// storedPrincipal is the principal a presented one may be stored under
// (Forget's first filter; what is presented under it is checked row by
// row).
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
