package ninep

import (
	"fmt"
	"sync/atomic"

	"github.com/hugelgupf/p9/linux"
)

// budget bounds the bytes that open files keep for clients: unfinished
// writes (a command without its newline yet, a request or a definition
// still arriving) and the snapshots readers work through. Budgets nest: a
// connection's is inside its tool peer's, which is inside the budget of
// all tool connections (see Limits); a charge must fit in each.
type budget struct {
	what   string // whose bytes, for the refusal: "this connection", ...
	max    int64
	used   atomic.Int64
	parent *budget
}

func newBudget(what string, max int, parent *budget) *budget {
	return &budget{what: what, max: int64(max), parent: parent}
}

// take charges n bytes to b and every budget around it, or to none of
// them: then it returns the budget that had no room.
func (b *budget) take(n int64) *budget {
	for l := b; l != nil; l = l.parent {
		if !l.tryTake(n) {
			for u := b; u != l; u = u.parent {
				u.used.Add(-n)
			}
			return l
		}
	}
	return nil
}

func (b *budget) tryTake(n int64) bool {
	for {
		cur := b.used.Load()
		if cur+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// give returns n bytes to b and every budget around it.
func (b *budget) give(n int64) {
	for l := b; l != nil; l = l.parent {
		l.used.Add(-n)
	}
}

// refusal is the refusal of a request that did not fit in b: a write gets
// ENOSPC (what write(2) returns when there is no room), a read ENOBUFS.
func (b *budget) refusal(errno linux.Errno, name string) error {
	return Refuse(errno, "%s: the unfinished writes and open files' contents held for %s would exceed their limit of %s (%s held now); "+
		"end commands with a newline, finish or abandon requests in progress, and clunk files you no longer use",
		name, b.what, sizeText(b.max), sizeText(b.used.Load()))
}

// sizeText writes a byte count the way the limits are documented.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// held is what one open file keeps for its client, charged to its
// connection's budget. The zero value with a nil budget charges nothing.
type held struct {
	b *budget
	n int64
}

// resize charges n bytes instead of what was charged; on refusal nothing
// changes and the full budget is returned.
func (h *held) resize(n int64) *budget {
	if h.b == nil {
		h.n = n
		return nil
	}
	switch d := n - h.n; {
	case d > 0:
		if full := h.b.take(d); full != nil {
			return full
		}
	case d < 0:
		h.b.give(-d)
	}
	h.n = n
	return nil
}

// release gives back everything charged.
func (h *held) release() { h.resize(0) }

// grow returns buf with room for n more bytes (never more than limit in
// all), charging the array it has to allocate in place of the one buf is
// in (which h is charged for, and which is dropped). The array grows
// geometrically, so charging the whole array charges at most twice what
// is held.
func (h *held) grow(buf []byte, n, limit int) ([]byte, *budget) {
	need := len(buf) + n
	if need <= cap(buf) {
		return buf, nil
	}
	size := max(need, min(2*cap(buf), limit))
	if full := h.resize(int64(size)); full != nil {
		if size == need {
			return buf, full
		}
		size = need
		if full := h.resize(int64(size)); full != nil {
			return buf, full
		}
	}
	nb := make([]byte, len(buf), size)
	copy(nb, buf)
	return nb, nil
}
