package ninep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hugelgupf/p9/linux"
)

// 9P framing: size[4] type[1] tag[2], little endian; size counts itself.
const (
	headerLen = 7
	// maxFrame is the largest message the 9P library accepts.
	maxFrame    = 4 << 20
	msgTversion = 100
	msgRversion = 101
	msgTauth    = 102
	msgTattach  = 104
	msgTflush   = 108
	msgRflush   = 109
	msgTread    = 116
	msgRlerr    = 7
	// rreadHeader is what an Rread adds to the data: size, type, tag, count.
	rreadHeader = headerLen + 4
)

// shim sits between a connection and the 9P library's per-connection
// handler (hugelgupf/p9 v0.3.0, toolsrv's copy in third_party/p9), and
// passes messages through unchanged except where the library, as it is,
// would fail a client or could be made to fail by one (FuzzConn found the
// second and third):
//
//   - Tauth is answered with Rlerror(ENOENT): "no authentication needed" in
//     the only form Debian's diod client accepts. The library hard-codes
//     ENOSYS, which diod treats as fatal.
//   - The attach name (aname) of a Tattach is checked, when the connection
//     must present a token (check: a TCP one), and then removed: the
//     library is handed a Tattach with an empty aname. The library would
//     walk the aname as a path from the root, so that a token there would
//     be ENOENT; and the token never reaches the library (whose message
//     strings, which its debug log formats, hold the aname). A missing or
//     wrong token (and a Tauth's, which diod's clients send first) is
//     answered with Rlerror(EACCES) and ends the connection, so that one
//     connection tries one token. A Tattach or Tauth too short to hold its
//     names gets EINVAL.
//   - Version negotiation is serialised: nothing but Tversion is passed on
//     until a Tversion succeeded (anything else gets EPROTO), nothing
//     follows a Tversion until its answer is out, and a second negotiation
//     is refused (EPROTO). The library sets up per-connection read buffers
//     in its Tversion handler without locking: a Tread before it panics
//     (the buffer pool is not there yet), and any request during it races
//     with it.
//   - A Tflush of itself, or of a Tflush in flight, is answered at once
//     (there is nothing to flush). The library's Tflush waits for the
//     flushed tag to finish, which these never do: the connection's
//     handler would wait forever.
//   - A request that reuses the tag of one in flight is dropped here, as
//     the library would drop it, unanswered; dropping it before the
//     library sees it keeps the shim's count of unanswered requests
//     exact (see drain).
//   - The message size a client may negotiate is capped (maxMsize: 64 KiB
//     for a tool's connection, see toolMsize), and a larger frame is
//     never read: the library keeps buffers of the negotiated size per
//     connection (4 MiB when asked).
//   - A Tread's count is cut to what an Rread of the negotiated size can
//     carry. The library reads into a buffer of that size, sliced to the
//     count: a larger count panics in the handler.
//
// It also keeps each outgoing message in one write, so its own answers never
// land inside one of the library's, and it delays the end of the input until
// the library has answered every request it was given (see drain).
//
// The library's other known bug, a WaitGroup race when a peer hangs up with
// requests in flight that could kill the server, is fixed in the copy
// itself (third_party/p9/PATCHES.md), not here.
type shim struct {
	rwc    io.ReadWriteCloser
	onDone func() // called once the peer stops sending
	// check, when set, vets the attach name of each Tattach and Tauth:
	// nil to go on, else the refusal (its errno is sent). When nil, the
	// attach name is ignored.
	check func(aname []byte) error
	// maxMsize is the largest message the peer may send or negotiate;
	// msize is the size negotiated (0 before).
	maxMsize, msize uint32

	buf       []byte // the current frame
	pend      []byte // what is left of it to hand to the library
	versioned bool   // a Tversion succeeded
	awaiting  bool   // a Tversion was passed on and its answer is not out yet
	out       *frameWriter
	done      sync.Once
}

// newShim makes the shim of a connection whose messages may be up to
// maxMsize bytes (at most maxFrame); check, when set, vets its attach
// names (see shim).
func newShim(rwc io.ReadWriteCloser, onDone func(), maxMsize uint32, check func(aname []byte) error) *shim {
	return &shim{rwc: rwc, onDone: onDone, check: check, maxMsize: min(maxMsize, maxFrame),
		out: &frameWriter{w: rwc, version: make(chan bool, 1), dead: make(chan struct{})}}
}

// Read hands the library whole frames, minus the ones the shim answers.
func (s *shim) Read(p []byte) (int, error) {
	for len(s.pend) == 0 {
		if s.awaiting {
			select {
			case ok := <-s.out.version:
				s.versioned = ok
			case <-s.out.dead:
				s.finish()
				return 0, io.ErrClosedPipe
			}
			s.awaiting = false
		}
		if err := s.nextFrame(); err != nil {
			s.drain()
			return 0, err
		}
	}
	n := copy(p, s.pend)
	s.pend = s.pend[n:]
	return n, nil
}

func (s *shim) finish() { s.done.Do(s.onDone) }

// drain runs when the input ends, before the library is told: it holds the
// end of input back until every request handed over has been answered (the
// connection's calls are cancelled first: the peer is gone), so a peer that
// hangs up still gets, and the library still sends, one answer per request.
// drainWait bounds the wait, so that a request that never finishes cannot
// hold the connection open.
func (s *shim) drain() {
	s.finish()
	s.out.waitAnswered(drainWait)
}

const drainWait = 5 * time.Second

func (s *shim) nextFrame() error {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(s.rwc, hdr[:]); err != nil {
		return err
	}
	size := binary.LittleEndian.Uint32(hdr[:4])
	if size < headerLen || size > s.maxMsize {
		// End the connection here: the library checks a frame against
		// the msize it stores only after its Rversion is out, so a frame
		// sent right after the Rversion could pass its check.
		return fmt.Errorf("9P frame of %d bytes outside [%d, %d]", size, headerLen, s.maxMsize)
	}
	if cap(s.buf) < int(size) {
		s.buf = make([]byte, size)
	}
	frame := s.buf[:size]
	copy(frame, hdr[:])
	if _, err := io.ReadFull(s.rwc, frame[headerLen:]); err != nil {
		return err
	}
	switch {
	case hdr[4] == msgTversion && !s.versioned:
		s.awaiting = true
		if len(frame) >= headerLen+4 {
			// msize[4] version[s]: ask the library for no more than allowed.
			m := min(binary.LittleEndian.Uint32(frame[headerLen:]), s.maxMsize)
			binary.LittleEndian.PutUint32(frame[headerLen:], m)
			s.msize = m
		}
	case hdr[4] == msgTversion:
		return s.out.reply(rlerror(hdr[5], hdr[6], linux.EPROTO))
	case !s.versioned:
		return s.out.reply(rlerror(hdr[5], hdr[6], linux.EPROTO))
	case hdr[4] == msgTauth:
		// afid[4] uname[s] aname[s] n_uname[4]
		if _, _, ok, err := s.vetAttach(frame, 4); !ok {
			return err
		}
		return s.out.reply(rlerror(hdr[5], hdr[6], linux.ENOENT))
	case hdr[4] == msgTattach:
		// fid[4] afid[4] uname[s] aname[s] n_uname[4]: hand the library
		// the same with an empty aname.
		at, end, ok, err := s.vetAttach(frame, 8)
		if !ok {
			return err
		}
		n := copy(frame[at+2:], frame[end:])
		frame = frame[:at+2+n]
		frame[at], frame[at+1] = 0, 0
		binary.LittleEndian.PutUint32(frame, uint32(len(frame)))
	}
	if hdr[4] == msgTread && len(frame) >= headerLen+16 {
		// fid[4] offset[8] count[4]
		count := frame[headerLen+12:]
		if n := binary.LittleEndian.Uint32(count); n > s.msize-min(s.msize, rreadHeader) {
			binary.LittleEndian.PutUint32(count, s.msize-min(s.msize, rreadHeader))
		}
	}
	flush := hdr[4] == msgTflush
	if flush && len(frame) >= headerLen+2 {
		// The library's Tflush waits for the old tag to finish: flushing
		// itself or another flush would wait forever. Nothing to flush.
		old := binary.LittleEndian.Uint16(frame[headerLen:])
		if old == binary.LittleEndian.Uint16(hdr[5:]) || s.out.isFlush(old) {
			return s.out.reply([]byte{headerLen, 0, 0, 0, msgRflush, hdr[5], hdr[6]})
		}
	}
	if !s.out.start(binary.LittleEndian.Uint16(hdr[5:]), flush) {
		return nil // a busy tag: the library would drop it unanswered
	}
	s.pend = frame
	return nil
}

// errAttachRefused ends a connection whose attach name was refused.
var errAttachRefused = errors.New("9P attach refused")

// vetAttach finds the attach name of a Tattach or Tauth frame, whose
// uname[s] begins fixed bytes after the header, and vets it (check): at
// and end are the offsets of its length field and of the byte after it.
// ok false: the frame has been answered here, with EINVAL when it is too
// short to hold its names (err is nil, or the write's error), with the
// refusal's errno when check refused the name (err is errAttachRefused,
// which ends the connection).
func (s *shim) vetAttach(frame []byte, fixed int) (at, end int, ok bool, err error) {
	str := func(i int) int { // the end of the 9P string at i, or -1
		if i+2 > len(frame) {
			return -1
		}
		if e := i + 2 + int(binary.LittleEndian.Uint16(frame[i:])); e <= len(frame) {
			return e
		}
		return -1
	}
	tagLo, tagHi := frame[5], frame[6]
	if at = str(headerLen + fixed); at >= 0 {
		end = str(at)
	}
	if at < 0 || end < 0 || end+4 > len(frame) {
		return 0, 0, false, s.out.reply(rlerror(tagLo, tagHi, linux.EINVAL))
	}
	if s.check != nil {
		if cerr := s.check(frame[at+2 : end]); cerr != nil {
			if err := s.out.reply(rlerror(tagLo, tagHi, ErrnoOf(cerr))); err != nil {
				return 0, 0, false, err
			}
			return 0, 0, false, errAttachRefused
		}
	}
	return at, end, true, nil
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
	mu sync.Mutex
	// inflight counts requests handed to the library and not answered yet;
	// busy holds their tags (an answer to a malformed request carries no
	// tag, so busy may keep a stale tag until inflight is back to 0).
	inflight int
	busy     map[uint16]bool // tag → is a Tflush
	// answered, when not nil, is closed when inflight drops to 0.
	answered chan struct{}

	w       io.Writer
	buf     []byte
	queued  [][]byte
	err     error
	version chan bool     // receives, per message, whether it was an accepting Rversion
	dead    chan struct{} // closed when writing fails or the connection closes
	once    sync.Once
}

// start records a request handed to the library; false if its tag is busy.
func (f *frameWriter) start(tag uint16, flush bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, busy := f.busy[tag]; busy {
		return false
	}
	if f.busy == nil {
		f.busy = map[uint16]bool{}
	}
	f.busy[tag] = flush
	f.inflight++
	return true
}

// isFlush reports whether tag is a Tflush in flight.
func (f *frameWriter) isFlush(tag uint16) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy[tag]
}

// waitAnswered waits until every request handed to the library has been
// answered, or until d has passed.
func (f *frameWriter) waitAnswered(d time.Duration) {
	f.mu.Lock()
	if f.inflight == 0 {
		f.mu.Unlock()
		return
	}
	if f.answered == nil {
		f.answered = make(chan struct{})
	}
	answered := f.answered
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-answered:
	case <-t.C:
	}
}

// kill marks the connection dead: later messages are dropped (but still
// counted) so the library never sees a write error mid-message.
func (f *frameWriter) kill(err error) error {
	if f.err == nil {
		f.err = err
	}
	f.once.Do(func() { close(f.dead) })
	return err
}

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buf = append(f.buf, p...)
	for len(f.buf) >= 4 {
		size := int(binary.LittleEndian.Uint32(f.buf))
		if size < headerLen || len(f.buf) < size {
			break
		}
		if f.err == nil {
			if _, err := f.w.Write(f.buf[:size]); err != nil {
				f.kill(err)
			}
		}
		f.inflight--
		delete(f.busy, binary.LittleEndian.Uint16(f.buf[5:]))
		if f.inflight <= 0 {
			f.inflight = 0
			clear(f.busy)
			if f.answered != nil {
				close(f.answered)
				f.answered = nil
			}
		}
		// Until a version is agreed, the library answers nothing but
		// Tversions, one at a time (see shim): report how each went. An
		// accepted one is an Rversion (msize[4] version[s]) other than
		// "unknown"; a malformed one gets an Rlerror.
		ok := f.buf[4] == msgRversion && size > headerLen+6 && string(f.buf[headerLen+6:size]) != "unknown"
		select {
		case f.version <- ok:
		default:
		}
		f.buf = f.buf[:copy(f.buf, f.buf[size:])]
	}
	if len(f.buf) == 0 && f.err == nil {
		f.flushQueued()
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
			return f.kill(err)
		}
		f.queued = f.queued[1:]
	}
	return nil
}

// Close closes the connection (the library calls it when done).
func (f *frameWriter) Close() error {
	f.mu.Lock()
	f.kill(io.ErrClosedPipe)
	f.mu.Unlock()
	if c, ok := f.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
