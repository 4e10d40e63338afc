package ninep

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"testing"
	"time"
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
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
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
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Fatalf("read after garbage = %d, %v; want the connection closed", n, err)
	}
	// The server still serves others.
	if got := mustRead(t, e.client(), "revision"); got == "" {
		t.Fatal("empty revision")
	}
}
