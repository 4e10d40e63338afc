package ninep

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// frame encodes one 9P message.
func frame(typ byte, tag uint16, body []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(body))
	binary.LittleEndian.PutUint32(b, uint32(headerLen+len(body)))
	b[4] = typ
	binary.LittleEndian.PutUint16(b[5:], tag)
	return append(b, body...)
}

func str9(s string) []byte {
	b := binary.LittleEndian.AppendUint16(nil, uint16(len(s)))
	return append(b, s...)
}

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func readFrame(t *testing.T, c net.Conn) (typ byte, tag uint16, body []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(safetyNet))
	var hdr [headerLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body = make([]byte, binary.LittleEndian.Uint32(hdr[:])-headerLen)
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	return hdr[4], binary.LittleEndian.Uint16(hdr[5:]), body
}

// TestTauthAnswersENOENT speaks raw 9P: Tauth gets Rlerror(ENOENT) — "no
// authentication required" for diod's client — and the session goes on.
func TestTauthAnswersENOENT(t *testing.T) {
	e := newEnv(t, nil)
	c, err := Dial(t.Context(), e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const noFid = ^uint32(0)
	c.Write(frame(100, 0xFFFF, cat(u32(8192), str9("9P2000.L"))))
	if typ, _, body := readFrame(t, c); typ != 101 || string(body[6:]) != "9P2000.L" {
		t.Fatalf("Rversion = %d %q", typ, body)
	}
	// Tauth and Tattach back to back: the answers must not interleave.
	c.Write(cat(frame(msgTauth, 1, cat(u32(7), str9("me"), str9(""), u32(0))),
		frame(104, 2, cat(u32(1), u32(noFid), str9("me"), str9(""), u32(0)))))
	got := map[uint16][]byte{}
	types := map[uint16]byte{}
	for i := 0; i < 2; i++ {
		typ, tag, body := readFrame(t, c)
		got[tag], types[tag] = body, typ
	}
	if types[1] != msgRlerr || binary.LittleEndian.Uint32(got[1]) != 2 {
		t.Fatalf("Tauth answer: type %d body %v, want Rlerror ENOENT (2)", types[1], got[1])
	}
	if types[2] != 105 {
		t.Fatalf("Tattach answer: type %d body %v, want Rattach", types[2], got[2])
	}
}

// TestGarbageClosesConnection: a bad header ends the connection without
// hurting the server.
func TestGarbageClosesConnection(t *testing.T) {
	e := newEnv(t, nil)
	c, err := Dial(t.Context(), e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{1, 0, 0, 0, 100, 0, 0, 9, 9, 9})
	c.SetReadDeadline(time.Now().Add(safetyNet))
	if n, err := c.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Fatalf("read after garbage = %d, %v; want the connection closed", n, err)
	}
	// The server still serves others.
	if got := mustRead(t, e.client(), "revision"); got == "" {
		t.Fatal("empty revision")
	}
}

// rawSession starts a connection with acc over a pipe and negotiates msize:
// it returns the client's end and the msize the server agreed to. A panic
// in a handler fails the test.
func rawSession(t *testing.T, acc Access, msize uint32) (net.Conn, uint32) {
	t.Helper()
	reg := registry.New(registry.Options{Dirs: []string{"testdata/tools"}, Logger: quietLogger()})
	if err := reg.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := fuzzServer(t, reg)
	srv.onPanic = func(msg string) { t.Errorf("a handler panicked: %s", msg) }
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConnAs(context.Background(), b, acc)
	}()
	t.Cleanup(func() { a.Close(); <-done })
	a.Write(frame(msgTversion, 0xFFFF, cat(u32(msize), str9("9P2000.L"))))
	typ, _, body := readFrame(t, a)
	if typ != msgRversion {
		t.Fatalf("Rversion = %d %v", typ, body)
	}
	return a, binary.LittleEndian.Uint32(body)
}

// A tool's connection negotiates at most 64 KiB messages (the library
// keeps buffers of the negotiated size per connection); a full client's
// up to the library's 4 MiB.
func TestMessageSizeCap(t *testing.T) {
	tool := Access{Session: "s", Agent: "a"}
	for _, c := range []struct {
		name      string
		acc       Access
		ask, want uint32
	}{
		{"full client, 4 MiB", Access{}, 4 << 20, 4 << 20},
		{"full client, more", Access{}, 64 << 20, 4 << 20},
		{"tool, 4 MiB", tool, 4 << 20, toolMsize},
		{"tool, 8 KiB", tool, 8 << 10, 8 << 10},
		{"denied, 1 MiB", Access{Denied: "no"}, 1 << 20, toolMsize},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := rawSession(t, c.acc, c.ask)
			if got != c.want {
				t.Errorf("asked %d, got msize %d, want %d", c.ask, got, c.want)
			}
		})
	}
	t.Run("tool frame larger than its msize", func(t *testing.T) {
		conn, _ := rawSession(t, tool, 4<<20)
		big := frame(118 /* Twrite */, 1, cat(u32(0), make([]byte, 8), u32(100<<10), make([]byte, 100<<10)))
		go conn.Write(big) // blocks until the server closes its end
		conn.SetReadDeadline(time.Now().Add(safetyNet))
		buf := make([]byte, 64)
		if n, err := conn.Read(buf); err == nil || os.IsTimeout(err) {
			t.Fatalf("read after a %d-byte frame = %d %x, %v; want the connection closed", len(big), n, buf[:n], err)
		}
	})
}

// A Tread asking for more than an Rread of the negotiated size can carry
// gets what fits (the library sliced its msize buffer to the count and
// panicked).
func TestReadCountCut(t *testing.T) {
	const msize = 8 << 10
	conn, got := rawSession(t, Access{}, msize)
	if got != msize {
		t.Fatalf("msize %d", got)
	}
	const noFid = ^uint32(0)
	conn.Write(frame(104 /* Tattach */, 1, cat(u32(1), u32(noFid), str9("me"), str9(""), u32(0))))
	if typ, _, body := readFrame(t, conn); typ != 105 {
		t.Fatalf("Tattach: %d %v", typ, body)
	}
	conn.Write(frame(110 /* Twalk */, 2, cat(u32(1), u32(2), []byte{1, 0}, str9("tools.json"))))
	if typ, _, body := readFrame(t, conn); typ != 111 {
		t.Fatalf("Twalk: %d %v", typ, body)
	}
	conn.Write(frame(12 /* Tlopen */, 3, cat(u32(2), u32(0))))
	if typ, _, body := readFrame(t, conn); typ != 13 {
		t.Fatalf("Tlopen: %d %v", typ, body)
	}
	conn.Write(frame(msgTread, 4, cat(u32(2), make([]byte, 8), u32(1<<20))))
	typ, _, body := readFrame(t, conn)
	if typ != 117 {
		t.Fatalf("Tread of 1 MiB: type %d %v, want Rread", typ, body)
	}
	if n := binary.LittleEndian.Uint32(body); n == 0 || n > msize-rreadHeader {
		t.Fatalf("Rread carries %d bytes; want some, at most %d", n, msize-rreadHeader)
	}
}
