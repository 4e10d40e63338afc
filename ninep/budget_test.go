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

// The audit's hole 5 (memory): a tool's connections each negotiated a
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
