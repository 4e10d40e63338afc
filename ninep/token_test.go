package ninep

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"
)

// lockedBuffer is a log's output, written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const testToken = "tcp-token-0123456789abcdef"

// A connection over TCP gets nothing until it sends the token as its
// attach name: without it, or with a wrong one (a prefix of it, one
// character off, the Unix socket's habit "/"), the attach is refused with
// EACCES and the connection ends; with it, the whole tree. The refusals
// are logged, never with what the peer sent. A Unix socket's connection
// needs no token, and its attach name, whatever it is, is ignored.
func TestTCPAttachNeedsToken(t *testing.T) {
	var log lockedBuffer
	e := newEnv(t, func(o *Options) {
		o.Token = testToken
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	tcp := "tcp:" + e.listenTCP()
	ctx := context.Background()
	for _, c := range []struct {
		name, token, want string
	}{
		{"no token", "", "none was sent"},
		{"the root", "/", "is not the server's"},
		{"a prefix", testToken[:len(testToken)-1], "is not the server's"},
		{"one character off", testToken[:len(testToken)-1] + "F", "is not the server's"},
		{"longer", testToken + "0", "is not the server's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := Connect(ctx, tcp, WithToken(c.token))
			if err == nil {
				cl.Close()
				t.Fatal("attached")
			}
			if !errors.Is(err, linux.EACCES) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v; want EACCES, %q", err, c.want)
			}
		})
	}
	cl, err := Connect(ctx, tcp, WithToken(testToken))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cl.Close()
	if got := strings.Join(entryNames(t, cl, "/"), " "); got != "ctl err errors rank rank.json revision session tools tools.json version" {
		t.Errorf("ls / over TCP with the token: %s", got)
	}
	mustMkdir(t, cl, "session/s1")
	mustRead(t, cl, "tools")

	// The Unix socket: no token, or anything at all as the attach name.
	for _, aname := range []string{"", "/", "session", "not-the-token-0123456789"} {
		nc, err := Dial(ctx, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		u, err := ConnectOver(ctx, nc, e.addr, WithToken(aname))
		if err != nil {
			t.Fatalf("the Unix socket, attach name %q: %v", aname, err)
		}
		if got := entryNames(t, u, "/"); len(got) != 10 {
			t.Errorf("the Unix socket, attach name %q: attached at %v, want the root", aname, got)
		}
		u.Close()
	}

	logged := log.String()
	if !strings.Contains(logged, "refusing a 9P attach over TCP") || !strings.Contains(logged, "no token") {
		t.Errorf("refusals not logged:\n%s", logged)
	}
	if strings.Contains(logged, testToken[:10]) {
		t.Errorf("the log holds (part of) a token sent:\n%s", logged)
	}
}

// A refused attach ends the connection: one connection, one guess.
func TestTCPRefusedAttachEndsConnection(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Token = testToken })
	nc, err := net.Dial("tcp", e.listenTCP())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := NewClient(keepOpen{nc}, WithToken("wrong-token-0123456789abcdef")); !errors.Is(err, linux.EACCES) {
		t.Fatalf("a wrong token: %v, want EACCES", err)
	}
	nc.SetReadDeadline(time.Now().Add(safetyNet))
	if n, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("after a refused attach: read %d bytes, %v; want the server to hang up (EOF)", n, err)
	}
}

// keepOpen is a connection the 9P client cannot close.
type keepOpen struct{ net.Conn }

func (keepOpen) Close() error { return nil }

// A server without a token takes no TCP connection at all; New refuses a
// token too short to be one.
func TestTCPWithoutServerToken(t *testing.T) {
	e := newEnv(t, nil)
	tcp := "tcp:" + e.listenTCP()
	for _, tok := range []string{"", testToken} {
		if cl, err := Connect(context.Background(), tcp, WithToken(tok)); err == nil {
			cl.Close()
			t.Errorf("a server without a token took a TCP attach (token %q)", tok)
		} else if !errors.Is(err, linux.EACCES) {
			t.Errorf("token %q: %v, want EACCES", tok, err)
		}
	}
	if _, err := New(Options{Source: e.reg, Token: "short"}); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("New with a short token: %v", err)
	}
}

// On the wire, over TCP: a Tauth with a wrong token gets Rlerror(EACCES)
// and the connection ends; one with the token gets ENOENT ("no
// authentication needed"), then a Tattach with it Rattach, at the root;
// a Tattach too short to hold its names gets EINVAL.
func TestTCPAttachWire(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Token = testToken })
	tcp := e.listenTCP()
	const noFid = ^uint32(0)
	session := func(t *testing.T, msgs ...[]byte) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", tcp)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Write(frame(100, 0xFFFF, cat(u32(8192), str9("9P2000.L"))))
		if typ, _, _ := readFrame(t, c); typ != 101 {
			t.Fatalf("Rversion: type %d", typ)
		}
		c.Write(cat(msgs...))
		return c
	}
	wantErrno := func(t *testing.T, c net.Conn, errno linux.Errno) {
		t.Helper()
		if typ, _, body := readFrame(t, c); typ != msgRlerr || linux.Errno(binary.LittleEndian.Uint32(body)) != errno {
			t.Fatalf("answer type %d body %v, want Rlerror %v", typ, body, errno)
		}
	}

	c := session(t, frame(msgTauth, 1, cat(u32(7), str9("me"), str9("wrong-token-0123456789abcdef"), u32(0))))
	wantErrno(t, c, linux.EACCES)
	c.SetReadDeadline(time.Now().Add(safetyNet))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("after a refused Tauth: read %d bytes, %v; want EOF", n, err)
	}

	c = session(t, frame(msgTauth, 1, cat(u32(7), str9("me"), str9(testToken), u32(0))),
		frame(msgTattach, 2, cat(u32(1), u32(noFid), str9("me"), str9(testToken), u32(0))),
		frame(110, 3, cat(u32(1), u32(2), []byte{1, 0}, str9("tools")))) // Twalk fid 1 → 2, "tools"
	wantErrno(t, c, linux.ENOENT)
	if typ, tag, _ := readFrame(t, c); typ != 105 || tag != 2 {
		t.Fatalf("Tattach with the token: type %d tag %d, want Rattach", typ, tag)
	}
	if typ, _, body := readFrame(t, c); typ != 111 {
		t.Fatalf("walk to tools from the attached fid: type %d %v, want Rwalk (attached at the root)", typ, body)
	}

	c = session(t, frame(msgTattach, 2, cat(u32(1), u32(noFid), str9("me"), []byte{40, 0}, []byte("short"))))
	wantErrno(t, c, linux.EINVAL)
}

// A TCP connection that does not attach with the token within
// AttachTimeout is closed, so that peers without the token cannot hold the
// server's connections (MaxConns) by sending nothing; one that attached
// with it stays as long as it likes. (Neither figure is a speed: the test
// waits past the timeout and checks what is still open.)
func TestTCPAttachTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEnv(t, func(o *Options) {
		o.Token = testToken
		o.Limits.AttachTimeout = timeout
	})
	addr := e.listenTCP()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cl, err := Connect(context.Background(), "tcp:"+addr, WithToken(testToken))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cl.Close()
	// The bound of a test that would otherwise hang, not a measure.
	silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := silent.Read(make([]byte, 64)); err != io.EOF {
		t.Fatalf("a connection that sent nothing: read %d bytes, %v; want it closed (EOF)", n, err)
	}
	time.Sleep(2 * timeout)
	if got := strings.Join(entryNames(t, cl, "/"), " "); !strings.Contains(got, "tools") {
		t.Errorf("ls / over TCP after the attach timeout, attached with the token: %q", got)
	}
}
