package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerStdio is the MCP stdio transport of "toolsrv mcp": newline-delimited
// JSON-RPC on a process's standard input and output, as the SDK's
// IOTransport reads and writes it, with two differences.
//
//   - A line that is not one JSON value is answered with the JSON-RPC
//     parse error (-32700, id null), and one that is JSON but no JSON-RPC
//     message (a number, an empty batch, a message without "jsonrpc":
//     "2.0") with invalid request (-32600); the session goes on. The SDK
//     ends the session at the first such line, without a word to the
//     client, so ServerStdio checks every line before the SDK reads it and
//     passes only the good ones on. A line longer than MaxLineLength
//     gets the parse error too (the SDK would end the session).
//   - The end of standard input does not end the session at once: the
//     requests read before it are answered first (a client may write a
//     script of requests and close its end of the pipe), for Drain at
//     most; then the session ends, and what still runs is cancelled.
//     Closed tells when standard input has ended: a client shuts a stdio
//     server down by closing it, and the server has to exit soon after
//     even while calls still run (the SDK's session waits for them).
type ServerStdio struct {
	in      *bufio.Reader
	out     *lockedWriter
	log     *slog.Logger
	maxLine int
	drain   time.Duration

	// Read's state (the SDK reads from one goroutine).
	pending []byte // the rest of the line being passed on
	line    []byte // the line being read (reused)

	// unanswered counts the requests passed on that the SDK has not
	// answered yet; answered is signalled when it drops to zero.
	mu         sync.Mutex
	unanswered int
	answered   chan struct{}

	closeOnce sync.Once
	closed    chan struct{}
}

// DefaultDrain is how long the requests read before the end of standard
// input have to be answered before the session ends (NewServerStdio).
const DefaultDrain = 500 * time.Millisecond

// MaxLineLength bounds one line of standard input (the SDK's own bound).
const MaxLineLength = sdk.DefaultMaxLineLength

// NewServerStdio reads requests from in and writes answers to out; log hears
// about bad lines. At the end of in, the requests read are answered within
// drain (0: DefaultDrain) before the session ends.
func NewServerStdio(in io.Reader, out io.Writer, log *slog.Logger, drain time.Duration) *ServerStdio {
	return newServerStdio(in, out, log, MaxLineLength, drain)
}

func newServerStdio(in io.Reader, out io.Writer, log *slog.Logger, maxLine int, drain time.Duration) *ServerStdio {
	if log == nil {
		log = slog.Default()
	}
	if drain <= 0 {
		drain = DefaultDrain
	}
	return &ServerStdio{in: bufio.NewReaderSize(in, 64<<10), out: &lockedWriter{w: out}, log: log, maxLine: maxLine,
		drain: drain, answered: make(chan struct{}, 1), closed: make(chan struct{})}
}

// Transport is the SDK transport over s; connect it once.
func (s *ServerStdio) Transport() sdk.Transport {
	// ServerStdio bounds lines itself; the SDK's bound would end the session.
	return &sdk.IOTransport{Reader: s, Writer: &answerCounter{s: s}, MaxLineLength: -1}
}

// Closed is closed when standard input has ended (or failed).
func (s *ServerStdio) Closed() <-chan struct{} { return s.closed }

// Read passes the good lines of standard input on, each ending in '\n'.
// At the end of the input it returns the end only once the requests
// passed on are answered, or Drain has passed.
func (s *ServerStdio) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		line, err := s.readLine()
		if err != nil {
			s.closeOnce.Do(func() { close(s.closed) })
			s.awaitAnswers()
			return 0, err
		}
		if line != nil {
			s.count(line, +1)
			s.pending = line
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// awaitAnswers waits until every request passed on is answered, Drain at
// most.
func (s *ServerStdio) awaitAnswers() {
	t := time.NewTimer(s.drain)
	defer t.Stop()
	for {
		s.mu.Lock()
		n := s.unanswered
		s.mu.Unlock()
		if n <= 0 {
			return
		}
		select {
		case <-s.answered:
		case <-t.C:
			s.log.Debug("mcp: standard input closed; ending the session with requests unanswered", "unanswered", n)
			return
		}
	}
}

// count adds sign for each request (a message with an id and a method) of
// msg, one message or a batch, to the requests awaiting an answer, or for
// each response when sign is -1.
func (s *ServerStdio) count(msg []byte, sign int) {
	n := 0
	one := func(m []byte) {
		jm, err := jsonrpc.DecodeMessage(m)
		if err != nil {
			return
		}
		switch jm := jm.(type) {
		case *jsonrpc.Request:
			if sign > 0 && jm.IsCall() {
				n++
			}
		case *jsonrpc.Response:
			if sign < 0 {
				n++
			}
		}
	}
	if t := bytes.TrimSpace(msg); len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil {
			return
		}
		for _, m := range batch {
			one(m)
		}
	} else {
		one(t)
	}
	if n == 0 {
		return
	}
	s.mu.Lock()
	s.unanswered += sign * n
	zero := s.unanswered <= 0
	s.mu.Unlock()
	if zero {
		select {
		case s.answered <- struct{}{}:
		default:
		}
	}
}

// answerCounter is the SDK's writer: it counts the answers it writes.
type answerCounter struct{ s *ServerStdio }

func (a *answerCounter) Write(p []byte) (int, error) {
	n, err := a.s.out.Write(p)
	a.s.count(p, -1)
	return n, err
}

// Close does not close standard output: that is the process's business.
func (a *answerCounter) Close() error { return nil }

// Close does not close standard input: that is the process's business.
func (s *ServerStdio) Close() error { return nil }

// readLine reads the next line: the line and its '\n' when it is good to
// pass on, nil when it was blank or bad (and bad ones are answered), an
// error at the end of the input.
func (s *ServerStdio) readLine() ([]byte, error) {
	s.line = s.line[:0]
	tooLong := false
	for {
		chunk, err := s.in.ReadSlice('\n')
		tooLong = tooLong || len(s.line)+len(chunk) > s.maxLine
		if !tooLong {
			s.line = append(s.line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(s.line) == 0 && !tooLong {
			return nil, err
		}
		// A whole line, or the last one without its '\n' (the error
		// comes again at the next read).
		break
	}
	if tooLong {
		s.answer(jsonrpc.CodeParseError, fmt.Sprintf("Parse error: a line longer than %d bytes", s.maxLine), nil)
		return nil, nil
	}
	msg := bytes.TrimSpace(s.line)
	if len(msg) == 0 {
		return nil, nil
	}
	if why := badMessage(msg); why != nil {
		s.answer(why.code, why.msg, why.id)
		return nil, nil
	}
	return append(msg, '\n'), nil
}

// badLine is why a line is refused.
type badLine struct {
	code int64
	msg  string
	id   json.RawMessage // the request's id, when it has a usable one
}

// badMessage says what is wrong with msg (trimmed, not empty), or nil
// when the SDK can take it: one JSON-RPC message, or a batch (an array)
// of them.
func badMessage(msg []byte) *badLine {
	if !json.Valid(msg) {
		var v any
		err := json.Unmarshal(msg, &v)
		if err == nil { // valid alone, not with what follows
			err = errors.New("more than one JSON value on the line")
		}
		return &badLine{code: jsonrpc.CodeParseError, msg: "Parse error: " + err.Error()}
	}
	invalid := func(err error, id json.RawMessage) *badLine {
		return &badLine{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: " + err.Error(), id: id}
	}
	if msg[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(msg, &batch); err != nil {
			return invalid(err, nil)
		}
		if len(batch) == 0 {
			return invalid(errors.New("an empty batch"), nil)
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return invalid(err, nil)
			}
		}
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return invalid(err, requestID(msg))
	}
	return nil
}

// requestID is msg's "id" when it is a string or a number, else nil.
func requestID(msg []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}

// answer writes an error response for a refused line (id null unless
// given).
func (s *ServerStdio) answer(code int64, msg string, id json.RawMessage) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	if err != nil {
		return
	}
	s.log.Warn("mcp: refused a line of standard input", "code", code, "why", msg)
	if _, err := s.out.Write(append(b, '\n')); err != nil {
		s.log.Warn("mcp: answering a refused line", "err", err)
	}
}

// lockedWriter keeps the SDK's messages and ServerStdio's answers whole: each
// is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does not close standard output: that is the process's business.
func (l *lockedWriter) Close() error { return nil }
