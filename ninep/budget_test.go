package ninep

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// connectMsize is Connect with the 9P message size the client asks for
// (the library's client keeps using it whatever the server answers).
func connectMsize(t *testing.T, addr string, msize uint32) (*Client, error) {
	t.Helper()
	nc, err := Dial(t.Context(), addr)
	if err != nil {
		return nil, err
	}
	c, err := p9.NewClient(nc, p9.WithMessageSize(msize))
	if err != nil {
		nc.Close()
		return nil, err
	}
	root, err := c.Attach("/")
	if err != nil {
		c.Close()
		return nil, err
	}
	cl := &Client{conn: nc, c: c, root: root, ctx: context.Background(), stop: func() bool { return false }}
	t.Cleanup(func() { cl.Close() })
	return cl, nil
}

// heapInUse is the heap's live bytes after a full collection.
func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The audit's hole 4: a tool's connections each negotiated a
// 4 MiB message size and held unfinished ctl commands of up to 4 MiB on
// every fid: gigabytes of the server's memory during one call. Here a tool
// tries to make the server hold over 60 MiB (8 connections of 4 MiB
// messages, 16 fids each, 256 KiB per fid); what the server holds stays
// small, the writes past its budget are refused with ENOSPC and the
// reason, and the owner is not affected.
func TestToolCannotInflateMemory(t *testing.T) {
	e, next := accessEnv(t, nil)
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	mustMkdir(t, owner, "session/s/agent/a")
	next.Store(&Access{Session: "s", Agent: "a"})
	const (
		conns   = 8
		fids    = 16
		perFid  = 256 << 10
		chunk   = 32 << 10 // a piece of a longer write(2): no command ends
		wantMax = 8 << 20  // what the tool may make the server hold, at most
	)
	piece := bytes.Repeat([]byte("x"), chunk)
	before := heapInUse()
	var (
		clients          []*Client
		written, refused int
		held             []p9.File
	)
	for i := 0; i < conns; i++ {
		cl, err := connectMsize(t, e.addr, 4<<20)
		if err != nil {
			if errors.Is(err, linux.EUSERS) {
				break
			}
			t.Fatalf("tool connection %d: %v", i, err)
		}
		clients = append(clients, cl)
		for j := 0; j < fids; j++ {
			f, err := cl.walk("session/s/agent/a/ctl")
			if err != nil {
				break // the connection's files are used up
			}
			held = append(held, f)
			if _, _, err := f.Open(p9.WriteOnly); err != nil {
				t.Fatalf("open ctl: %v", err)
			}
			for off := 0; off < perFid; off += chunk {
				if _, err := f.WriteAt(piece, int64(off)); err != nil {
					if !errors.Is(err, linux.ENOSPC) {
						t.Fatalf("conn %d fid %d: write: %v, want ENOSPC", i, j, err)
					}
					refused++
					break
				}
				written += chunk
			}
		}
	}
	after := heapInUse()
	grew := after - before
	t.Logf("tool: %d connections, %d fids, %d KiB accepted, %d writes refused; server heap %d KiB → %d KiB (+%d KiB)",
		len(clients), len(held), written>>10, refused, before>>10, after>>10, grew>>10)
	if grew > wantMax {
		t.Errorf("the tool made the heap grow by %d KiB, more than %d KiB", grew>>10, wantMax>>10)
	}
	if refused == 0 {
		t.Fatal("no write was refused")
	}
	if got := mustRead(t, owner, "session/s/agent/a/err"); !strings.Contains(got, "unfinished writes") {
		t.Errorf("agent err = %q, want the reason", got)
	}
	// The owner's own requests still go through, large ones too.
	big := `{"text":"` + strings.Repeat("y", 2<<20) + `"}`
	mustMkdir(t, owner, "session/o")
	mustMkdir(t, owner, "session/o/agent/a")
	mustWrite(t, owner, "session/o/agent/a/tools", "echo_text")
	ans, err := owner.Transact("session/o/agent/a/call/echo_text", []byte(big))
	if err != nil || !strings.Contains(string(ans), "yyyy") {
		t.Fatalf("the owner's call with 2 MiB of arguments: %v", err)
	}
	// What the tool held is given back when it lets go.
	for _, f := range held {
		f.Close()
	}
	for _, cl := range clients {
		cl.Close()
	}
	owner.Close()
	settle(t, e.srv)
	if end := heapInUse(); end-before > 2<<20 {
		t.Errorf("after the tool left the heap is %d KiB above where it started", (end-before)>>10)
	}
}

// fill writes 32 KiB pieces of a command or request that never ends to
// fids on p, a new fid every 64 KiB, until the server refuses one; it
// returns the bytes accepted, the fids (to clunk; the test's end clunks
// them too) and the refusal.
func fill(t *testing.T, cl *Client, p string) (int, []p9.File, error) {
	t.Helper()
	piece := bytes.Repeat([]byte("x"), 32<<10)
	var fids []p9.File
	accepted := 0
	for {
		f, err := cl.walk(p)
		if err != nil {
			return accepted, fids, cl.refused("walk", p, err)
		}
		fids = append(fids, f)
		t.Cleanup(func() { f.Close() })
		if _, _, err := f.Open(p9.WriteOnly); err != nil {
			return accepted, fids, cl.refused("open", p, err)
		}
		for off := 0; off < 64<<10; off += len(piece) {
			if _, err := f.WriteAt(piece, int64(off)); err != nil {
				return accepted, fids, cl.refused("write", p, err)
			}
			accepted += len(piece)
		}
	}
}

func clunk(fids []p9.File) {
	for _, f := range fids {
		f.Close()
	}
}

// What open files hold for clients is bounded per connection, per tool
// peer (an agent's tools) and for all tools together; a write past a
// budget gets ENOSPC and the reason names the budget; clunking gives the
// bytes back.
func TestBufferedBudgets(t *testing.T) {
	const (
		perConn = 512 << 10
		perPeer = 256 << 10
		tools   = 640 << 10
	)
	e, next := accessEnv(t, func(o *Options) {
		o.Limits = Limits{MaxBuffered: perConn, Tool: ToolLimits{PeerBuffered: perPeer, Buffered: tools}}
	})
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	for _, a := range []string{"a", "b", "c", "d"} {
		mustMkdir(t, owner, "session/s/agent/"+a)
	}
	toolClient := func(agent string) *Client {
		next.Store(&Access{Session: "s", Agent: agent})
		defer next.Store(&Access{})
		return e.client()
	}
	// within checks that what was accepted before the refusal is at least
	// half the budget (arrays grow by doubling and are charged whole) and
	// at most all of it.
	within := func(t *testing.T, what string, got, budget int) {
		t.Helper()
		if got > budget || got < budget/2 {
			t.Errorf("%s: %d KiB accepted, want between %d and %d KiB", what, got>>10, budget>>11, budget>>10)
		}
	}
	t.Run("a connection", func(t *testing.T) {
		cl := e.client()
		got, fids, err := fill(t, cl, "rank")
		wantRefused(t, err, linux.ENOSPC, "this connection", "512 KiB")
		within(t, "rank requests", got, perConn)
		// Another connection is not affected.
		other := e.client()
		n, more, err := fill(t, other, "session/s/ctl")
		wantRefused(t, err, linux.ENOSPC, "this connection")
		within(t, "another connection", n, perConn)
		clunk(more)
		// Clunked fids give their bytes back.
		clunk(fids)
		n, fids, err = fill(t, cl, "session/s/ctl")
		wantRefused(t, err, linux.ENOSPC, "this connection")
		within(t, "after clunking", n, perConn)
		clunk(fids)
	})
	t.Run("an agent's tools", func(t *testing.T) {
		c1, c2 := toolClient("a"), toolClient("a")
		n1, f1, err := fill(t, c1, "session/s/agent/a/ctl")
		wantRefused(t, err, linux.ENOSPC, "the tool connections of agent a of session s", "256 KiB")
		_, f2, err := fill(t, c2, "session/s/agent/a/tools")
		wantRefused(t, err, linux.ENOSPC, "agent a of session s")
		within(t, "agent a's first connection", n1, perPeer)
		if got := mustRead(t, owner, "session/s/agent/a/err"); !strings.Contains(got, "unfinished writes") {
			t.Errorf("agent err = %q", got)
		}
		// Another agent's tools are not affected.
		n, fb, err := fill(t, toolClient("b"), "session/s/agent/b/ctl")
		wantRefused(t, err, linux.ENOSPC, "agent b of session s")
		within(t, "agent b", n, perPeer)
		clunk(f1)
		clunk(f2)
		clunk(fb)
	})
	t.Run("all tools", func(t *testing.T) {
		total := 0
		var held [][]p9.File
		var err error
		for _, a := range []string{"b", "c", "d"} {
			var n int
			var fids []p9.File
			n, fids, err = fill(t, toolClient(a), "session/s/agent/"+a+"/ctl")
			total += n
			held = append(held, fids)
		}
		wantRefused(t, err, linux.ENOSPC, "all tool connections together", "640 KiB")
		within(t, "all tools", total, tools)
		for _, fids := range held {
			clunk(fids)
		}
	})
	t.Run("everything given back", func(t *testing.T) {
		if n := e.srv.toolBuf.used.Load(); n != 0 {
			t.Errorf("the tools' budget is charged %d bytes with every file clunked", n)
		}
	})
}

// A snapshot a reader works through is charged too: a tool whose agent's
// schemas do not fit its budget gets ENOBUFS and the reason; the shared
// catalog texts are not charged.
func TestSnapshotBudget(t *testing.T) {
	e, next := accessEnv(t, func(o *Options) {
		o.Limits = Limits{MaxBuffered: 2 << 10, Tool: ToolLimits{PeerBuffered: 512}}
	})
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	mustMkdir(t, owner, "session/s/agent/a")
	mustWrite(t, owner, "session/s/agent/a/tools", "echo_text\nweather\nfile_read\n")
	schemas := mustRead(t, owner, "session/s/agent/a/schemas")
	if len(schemas) <= 512 {
		t.Fatalf("schemas are %d bytes: too small for this test", len(schemas))
	}
	if n := len(mustRead(t, owner, "tools.json")); n <= 2<<10 {
		t.Fatalf("tools.json is %d bytes, within the connection's budget anyway", n)
	}
	next.Store(&Access{Session: "s", Agent: "a"})
	tool := e.client()
	_, err := tool.Read("session/s/agent/a/schemas")
	wantRefused(t, err, linux.ENOBUFS, "read /session/s/agent/a/schemas", "the tool connections of agent a of session s", "512 bytes")
	if got := mustRead(t, tool, "session/s/agent/a/tools"); !strings.Contains(got, "weather") {
		t.Errorf("tools = %q", got)
	}
	if n := e.srv.toolBuf.used.Load(); n != 0 {
		t.Errorf("the tools' budget is charged %d bytes with every file clunked", n)
	}
}
