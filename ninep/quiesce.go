package ninep

import (
	"bytes"
	"runtime"
	"strconv"
	"time"
)

// The 9P library (p9 v0.3.0) ends a connection with WaitGroup.Wait while its
// request goroutines may still call Add: a goroutine it has just started,
// or one that finished a request and is looping back for the next. If that
// happens while Wait is waiting, the WaitGroup panics, and when the panic
// is in a request goroutine it kills the process. shim.drain therefore
// holds back the end of input until every other request goroutine of the
// connection is parked waiting for input (blocked on the library's receive
// mutex, already counted in the WaitGroup): then the end of input makes them
// leave one by one and nobody calls Add again. The library offers no hook
// for this, so the goroutines are found in a dump of all stacks: those
// running handleRequest on this connection's state, and those they started.

const p9HandleRequest = "github.com/hugelgupf/p9/p9.(*connState).handleRequest"

// quiesce waits (until deadline) for the request goroutines of the calling
// goroutine's 9P connection to be parked. It must be called from a library
// request goroutine (inside the shim's Read). It reports whether it saw
// them parked; false also when the stacks could not be read.
func quiesce(deadline time.Time) bool {
	buf := make([]byte, 16<<10)
	self := buf[:runtime.Stack(buf, false)]
	selfID, _ := goroutineHeader(self)
	// This connection's state: the receiver of handleRequest in our stack.
	i := bytes.Index(self, []byte(p9HandleRequest+"(0x"))
	if selfID < 0 || i < 0 {
		return false
	}
	addr := self[i+len(p9HandleRequest)+1:]
	addr = addr[:bytes.IndexAny(addr, ",)")]
	marker := []byte(p9HandleRequest + "(" + string(addr))
	created := []byte("created by " + p9HandleRequest + " in goroutine ")
	for {
		all := allStacks()
		type g struct {
			parked  bool
			creator int
			ours    bool
		}
		gs := map[int]*g{}
		for _, blk := range bytes.Split(all, []byte("\n\n")) {
			id, state := goroutineHeader(blk)
			if id < 0 {
				continue
			}
			x := &g{parked: state == "sync.Mutex.Lock", creator: -1, ours: bytes.Contains(blk, marker)}
			if j := bytes.Index(blk, created); j >= 0 {
				rest := blk[j+len(created):]
				if k := bytes.IndexByte(rest, '\n'); k >= 0 {
					rest = rest[:k]
				}
				x.creator, _ = strconv.Atoi(string(rest))
			}
			gs[id] = x
		}
		// Goroutines started by ours are ours (they may not have run yet).
		for changed := true; changed; {
			changed = false
			for _, x := range gs {
				if !x.ours && x.creator >= 0 && gs[x.creator] != nil && gs[x.creator].ours {
					x.ours, changed = true, true
				}
			}
		}
		busy := 0
		for id, x := range gs {
			if x.ours && id != selfID && !x.parked {
				busy++
			}
		}
		if busy == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// goroutineHeader parses "goroutine N [state...]:" at the start of a stack.
func goroutineHeader(blk []byte) (id int, state string) {
	blk = bytes.TrimLeft(blk, "\n")
	if !bytes.HasPrefix(blk, []byte("goroutine ")) {
		return -1, ""
	}
	rest := blk[len("goroutine "):]
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return -1, ""
	}
	id, err := strconv.Atoi(string(rest[:sp]))
	if err != nil {
		return -1, ""
	}
	rest = rest[sp+1:]
	if len(rest) > 0 && rest[0] == '[' {
		if end := bytes.IndexAny(rest, ",]"); end > 0 {
			state = string(rest[1:end])
		}
	}
	return id, state
}

func allStacks() []byte {
	buf := make([]byte, 256<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
