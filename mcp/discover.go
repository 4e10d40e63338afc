package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// discoverWait is how long a stdio server has to answer the client's
// server/discover (the 2026-07-28 revision's first request) before it is
// taken for "method not found".
const discoverWait = 3 * time.Second

// methodDiscover is the 2026-07-28 revision's first request of a client.
const methodDiscover = "server/discover"

// discoverFallback is a client connection that answers the client's
// server/discover itself, with "method not found", when the server has
// not within wait. A server of an earlier revision must answer a request
// it does not know with that error, and the client then goes on with
// initialize; but some (hand-written ones, mostly) answer nothing at all,
// and the client would wait for the answer until the start timeout, then
// give up on a server that would have answered initialize. The server's
// own answer, if it comes after that, is dropped. Every other message
// passes as it is. A server slow to start (a package runner fetching its
// package) that speaks both revisions is then spoken to in the earlier
// one, which every server of today answers; one that speaks only
// 2026-07-28 would need its answer within wait.
type discoverFallback struct {
	sdk.Connection
	wait time.Duration

	start sync.Once
	in    chan jsonrpc.Message // what the server sent, read by pump
	err   error                // why in was closed
	done  chan struct{}        // closed by Close
	stop  sync.Once
	fake  chan jsonrpc.Message

	mu      sync.Mutex
	waiting map[jsonrpc.ID]*time.Timer // discover requests without an answer yet
	gaveUp  map[jsonrpc.ID]bool        // answered here: the server's answer is dropped
}

func newDiscoverFallback(c sdk.Connection, wait time.Duration) *discoverFallback {
	return &discoverFallback{Connection: c, wait: wait, in: make(chan jsonrpc.Message), done: make(chan struct{}),
		fake: make(chan jsonrpc.Message, 4), waiting: map[jsonrpc.ID]*time.Timer{}, gaveUp: map[jsonrpc.ID]bool{}}
}

// Write passes msg on, and starts the wait of a server/discover request.
func (d *discoverFallback) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodDiscover && req.ID.IsValid() {
		id := req.ID
		d.mu.Lock()
		d.waiting[id] = time.AfterFunc(d.wait, func() { d.giveUp(id) })
		d.mu.Unlock()
	}
	return d.Connection.Write(ctx, msg)
}

// giveUp answers the discover request id with "method not found", unless
// the server answered it meanwhile.
func (d *discoverFallback) giveUp(id jsonrpc.ID) {
	d.mu.Lock()
	_, still := d.waiting[id]
	if still {
		delete(d.waiting, id)
		d.gaveUp[id] = true
	}
	d.mu.Unlock()
	if !still {
		return
	}
	resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
		Message: "no answer to " + methodDiscover + " (toolsrv took it for method not found, and goes on with initialize)"}}
	select {
	case d.fake <- resp:
	default: // (never: one discover at a time, a buffer of four)
	}
}

// Read returns the next message: an answer made by giveUp, or what the
// server sent (but its late answers to discover requests answered here).
func (d *discoverFallback) Read(ctx context.Context) (jsonrpc.Message, error) {
	d.start.Do(func() { go d.pump() })
	for {
		select {
		case m := <-d.fake:
			return m, nil
		case m, ok := <-d.in:
			if !ok {
				return nil, d.err
			}
			if resp, isResp := m.(*jsonrpc.Response); isResp {
				d.mu.Lock()
				if t := d.waiting[resp.ID]; t != nil {
					t.Stop()
					delete(d.waiting, resp.ID)
				}
				late := d.gaveUp[resp.ID]
				delete(d.gaveUp, resp.ID)
				d.mu.Unlock()
				if late {
					continue
				}
			}
			return m, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pump reads the connection until it fails (Close ends a read waiting).
func (d *discoverFallback) pump() {
	for {
		m, err := d.Connection.Read(context.Background())
		if err != nil {
			d.err = err
			close(d.in)
			return
		}
		select {
		case d.in <- m:
		case <-d.done:
			return
		}
	}
}

// Close closes the connection and stops the waits.
func (d *discoverFallback) Close() error {
	d.stop.Do(func() {
		close(d.done)
		d.mu.Lock()
		for id, t := range d.waiting {
			t.Stop()
			delete(d.waiting, id)
		}
		d.mu.Unlock()
	})
	return d.Connection.Close()
}
