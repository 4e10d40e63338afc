package usage

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// The embedded store keeps each entry whole in one column (rec), encoded
// here, beside the few columns its queries select by (tool, agent, last,
// version) and a hash of its key (a short unique index instead of one over
// every request's text). A snapshot then reads one column per row: with
// modernc.org/sqlite every column read costs about as much as decoding a
// whole entry in Go, so ten columns took 4-5 times as long as one (100,000
// entries: some 300 ms of CPU against 100).
//
// The format: a version byte (1), then the normalized request, the text,
// the tool, the agent (each a uvarint length and the bytes), count,
// failed (in 1/failScale), first, last (Unix ns), version (varints), and the number of
// offered tools and each one (length and bytes).

const recFormat = 1

// errRec is a record that does not decode: the store is damaged.
var errRec = fmt.Errorf("an entry does not decode: %w", errDamaged)

// encodeEntry appends e's record to b; failed is e's failures in
// 1/failScale (see merge).
func encodeEntry(b []byte, e *Entry, failed int64) []byte {
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, recFormat)
	str(e.Key.Request)
	str(e.Text)
	str(e.Key.Tool)
	str(e.Key.Agent)
	b = binary.AppendVarint(b, e.Count)
	b = binary.AppendVarint(b, failed)
	b = binary.AppendVarint(b, e.First.UnixNano())
	b = binary.AppendVarint(b, e.Last.UnixNano())
	b = binary.AppendVarint(b, e.Version)
	b = binary.AppendUvarint(b, uint64(len(e.Offered)))
	for _, o := range e.Offered {
		str(o)
	}
	return b
}

// decodeEntry decodes rec into e, and returns e's failures in 1/failScale.
// Its strings and offered list are carved from a (nil: allocated for e
// alone).
func decodeEntry(rec []byte, e *Entry, a *arena) (int64, error) {
	if a == nil {
		a = &arena{}
	}
	n, failed, err := decodeNext(rec, a.copy(rec), e, a)
	if err == nil && n != len(rec) {
		err = errRec
	}
	return failed, err
}

// decodeNext decodes the record at the start of b into e (records are
// self-delimiting, so several can follow one another), and returns its
// length and e's failures in 1/failScale. s holds the same bytes as b:
// e's strings are parts of it; its offered list comes from a.
func decodeNext(b []byte, s string, e *Entry, a *arena) (int, int64, error) {
	if len(b) == 0 || b[0] != recFormat {
		return 0, 0, errRec
	}
	i := 1
	bad := false
	str := func() string {
		n, k := binary.Uvarint(b[i:])
		if k <= 0 || uint64(len(b)-i-k) < n {
			bad = true
			return ""
		}
		i += k
		v := s[i : i+int(n)]
		i += int(n)
		return v
	}
	num := func() int64 {
		v, k := binary.Varint(b[i:])
		if k <= 0 {
			bad = true
			return 0
		}
		i += k
		return v
	}
	e.Key.Request = str()
	e.Text = str()
	e.Key.Tool = str()
	e.Key.Agent = str()
	e.Count = num()
	failed := num()
	e.Failed = (failed + failScale/2) / failScale
	e.First = time.Unix(0, num())
	e.Last = time.Unix(0, num())
	e.Version = num()
	n, k := binary.Uvarint(b[i:])
	if bad || k <= 0 || n > uint64(len(b)) {
		return 0, 0, errRec
	}
	i += k
	e.Offered = nil
	if n > 0 {
		e.Offered = a.list(int(n))
		for j := range e.Offered {
			e.Offered[j] = str()
		}
	}
	if bad {
		return 0, 0, errRec
	}
	return i, failed, nil
}

// arena hands out strings and string slices from a few large blocks
// rather than two allocations per entry: a snapshot of 100,000 entries
// made 200,000 small objects for the garbage collector to trace.
type arena struct {
	text  strings.Builder // written only by appending, so strings taken from it never change
	lists []string
}

// arenaBlock is the size of a block of text (bytes) and of lists
// (strings).
const arenaBlock = 1 << 16

// copy returns b as a string.
func (a *arena) copy(b []byte) string {
	if a.text.Cap()-a.text.Len() < len(b) {
		a.text = strings.Builder{}
		a.text.Grow(max(arenaBlock, len(b)))
	}
	start := a.text.Len()
	a.text.Write(b)
	return a.text.String()[start:]
}

// list returns a slice of n strings whose capacity is n, so that an
// append to it does not reach its neighbour's.
func (a *arena) list(n int) []string {
	if len(a.lists) < n {
		a.lists = make([]string, max(arenaBlock/16, n))
	}
	l := a.lists[:n:n]
	a.lists = a.lists[n:]
	return l
}

// Hash is what a store keeps entries unique by (with the PostgreSQL
// store, within a namespace): 16 bytes of the SHA-256 of the key's
// fields, each preceded by its length. Both stores use it, so the same
// key has the same hash in either.
func (k Key) Hash() []byte {
	h := sha256.New()
	for _, s := range []string{k.Request, k.Tool, k.Agent} {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	return h.Sum(nil)[:16]
}
