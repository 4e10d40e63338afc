package ninep

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/hugelgupf/p9/linux"
)

// 9P framing: size[4] type[1] tag[2], little endian; size counts itself.
const (
	headerLen = 7
	// maxFrame is the largest message the 9P library accepts.
	maxFrame = 4 << 20
	msgTauth = 102
	msgRlerr = 7
)

// shim sits between a connection and the 9P library's per-connection
// handler. It answers Tauth itself with Rlerror(ENOENT) — "no authentication
// needed" in the only form Debian's diod client accepts (the library
// hard-codes ENOSYS, which diod treats as fatal) — and passes every other
// message through unchanged. It also keeps each outgoing message in one
// write, so its own answers never land inside one of the library's.
type shim struct {
	rwc    io.ReadWriteCloser
	onDone func() // called once the peer stops sending

	buf  []byte // the current frame
	pend []byte // what is left of it to hand to the library
	raw  bool   // a malformed header was seen: pass bytes through as they come
	out  *frameWriter
	done sync.Once
}

func newShim(rwc io.ReadWriteCloser, onDone func()) *shim {
	return &shim{rwc: rwc, onDone: onDone, out: &frameWriter{w: rwc}}
}

// Read hands the library whole frames, minus the Tauth ones.
func (s *shim) Read(p []byte) (int, error) {
	for len(s.pend) == 0 {
		if s.raw {
			n, err := s.rwc.Read(p)
			if err != nil {
				s.finish()
			}
			return n, err
		}
		if err := s.nextFrame(); err != nil {
			s.finish()
			return 0, err
		}
	}
	n := copy(p, s.pend)
	s.pend = s.pend[n:]
	return n, nil
}

func (s *shim) finish() { s.done.Do(s.onDone) }

func (s *shim) nextFrame() error {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(s.rwc, hdr[:]); err != nil {
		return err
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	if size < headerLen || size > maxFrame {
		// Let the library see the bad header and close the connection.
		s.raw = true
		s.pend = append(s.buf[:0], hdr[:]...)
		return nil
	}
	if cap(s.buf) < int(size) {
		s.buf = make([]byte, size)
	}
	frame := s.buf[:size]
	copy(frame, hdr[:])
	if _, err := io.ReadFull(s.rwc, frame[headerLen:]); err != nil {
		return err
	}
	if hdr[4] == msgTauth {
		return s.out.reply(rlerror(hdr[5], hdr[6], linux.ENOENT))
	}
	s.pend = frame
	return nil
}

// rlerror encodes Rlerror(tag, errno).
func rlerror(tagLo, tagHi byte, errno linux.Errno) []byte {
	b := make([]byte, headerLen+4)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	b[4], b[5], b[6] = msgRlerr, tagLo, tagHi
	binary.LittleEndian.PutUint32(b[headerLen:], uint32(errno))
	return b
}

// Close is called by the library when the connection is done.
func (s *shim) Close() error {
	s.finish()
	return s.rwc.Close()
}

// frameWriter collects the pieces the library writes for one message (it
// writes header, body and payload separately) and sends each message in a
// single write. Answers of the shim itself wait for a message boundary.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	queued [][]byte
	err    error
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.buf = append(f.buf, p...)
	for len(f.buf) >= 4 {
		size := int(binary.LittleEndian.Uint32(f.buf))
		if size < headerLen || len(f.buf) < size {
			break
		}
		if _, err := f.w.Write(f.buf[:size]); err != nil {
			f.err = err
			return 0, err
		}
		f.buf = f.buf[:copy(f.buf, f.buf[size:])]
	}
	if len(f.buf) == 0 {
		return len(p), f.flushQueued()
	}
	return len(p), nil
}

// reply sends a message of the shim's own, after the library's message in
// progress if there is one.
func (f *frameWriter) reply(msg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.queued = append(f.queued, msg)
	if len(f.buf) == 0 {
		return f.flushQueued()
	}
	return nil
}

func (f *frameWriter) flushQueued() error {
	for len(f.queued) > 0 {
		if _, err := f.w.Write(f.queued[0]); err != nil {
			f.err = err
			return err
		}
		f.queued = f.queued[1:]
	}
	return nil
}

// Close closes the connection (the library calls it when done).
func (f *frameWriter) Close() error {
	if c, ok := f.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
