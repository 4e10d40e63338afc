package ninep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/internal/token"
	"github.com/toolsrv/toolsrv/registry"
)

// Source is the live catalog. *registry.Registry satisfies it.
type Source interface {
	// Catalog returns the current snapshot; it must not block.
	Catalog() *registry.Catalog
	// Load rescans the tool directories (the root ctl's "reload").
	Load(ctx context.Context) error
}

// Ranker ranks the catalog's tools for a request: an engine.Frontend (the
// engine, or a session's overlay) in toolsrv serve. The 9P tree only
// renders what it answers.
type Ranker interface {
	Rank(ctx context.Context, r engine.Request) (engine.Answer, error)
}

// Caller runs one tool call: an engine.Frontend in toolsrv serve. A tool
// that ran and failed returns its result with an exec.ErrExit error (the
// call transaction answers the result); any other failure is refused
// with the errno engine.KindOf gives.
type Caller interface {
	Call(ctx context.Context, c engine.CallRequest) (*exec.Result, error)
}

// Options configure a Server.
type Options struct {
	// Source is the catalog (required).
	Source Source
	// Ranker answers the rank files; nil makes them answer ENOSYS.
	Ranker Ranker
	// Caller runs call/NAME requests; nil makes them answer ENOSYS
	// ("execution is not available"). A session with an overlay calls
	// through the overlay (which ranks and calls its own catalog).
	Caller Caller
	// Loaded, when set, is told of every load of a tool by an agent
	// (ctl's tool_load, a write to its tools file), with who loaded it:
	// the engine's Loaded, which decides what that records (a tool's own
	// connection is engine.Caller.ByTool).
	Loaded func(c engine.Caller, tool string)
	// NoToolFits, when set, is told by an agent's ctl "no_tool [ANSWER]"
	// that it answered the request of ANSWER (its latest answer when
	// none) without a tool: the engine's NoToolFits, which records it.
	// nil makes no_tool answer ENOSYS.
	NoToolFits func(c engine.Caller, answer string) error
	// Profiles returns an agent's profile when its directory is made; nil
	// gives every agent an empty profile (nothing auto-loaded, all allowed).
	Profiles func(agent string) (*registry.Profile, error)
	// WorkDir is a new session's working directory (default: the current
	// directory). A session's ctl "cwd PATH" changes it.
	WorkDir string
	// WarmTurns is how many turns a warm tool may stay unused (default 5).
	WarmTurns int
	// Logger receives connection events (default slog.Default()).
	Logger *slog.Logger
	// Access decides what a newly accepted connection may do (see Access);
	// nil gives every connection full access. The server wires it to the
	// exec runner's peer identification, so that a tool's own connection
	// reaches its agent and nothing else.
	Access func(net.Conn) Access
	// CheckWorkDir vets a session's "cwd PATH" (after the path is found
	// to be an absolute path of a directory) and returns the directory
	// the session works in from then on (the path with its symlinks
	// resolved, say: what was checked); nil accepts any directory as is.
	CheckWorkDir func(dir string) (string, error)
	// Limits bound connections, open files, sessions, agents, sent
	// definitions, the bytes open files hold, and the share of all that
	// tools get.
	Limits Limits
	// Overlays makes a session's own catalog when the first .meta
	// definition is sent to it (session/S/meta/NAME); nil: sessions take
	// no definitions (ENOSYS).
	Overlays func(session string) Overlay
	// Build says which build of the server this is (the second line of
	// /version, after Protocol).
	Build string
	// Token is the secret that a connection Serve accepted other than on a
	// Unix socket (TCP: its peer cannot be identified) must send as the
	// attach name (aname) of its Tattach, and of its Tauth if it sends
	// one, before it gets anything: what "diodcat -a TOKEN" and v9fs's
	// "aname=TOKEN" send. A missing or wrong one is refused (EACCES,
	// logged without it) and ends the connection; compared in constant
	// time. Empty: such connections are always refused. A Unix socket's
	// connections, and those given to ServeConn and ServeConnAs, need
	// none (their peers are identified otherwise): their attach name is
	// ignored. Every attach is at the root. New refuses a token that
	// token.Check refuses.
	Token string
}

// Server serves the toolsrv 9P tree. Sessions and agents live in the Server
// and are shared by every connection; each connection has its own err file
// and its own open files, so transaction answers never cross connections.
type Server struct {
	opts     Options
	log      *slog.Logger
	uid, gid uint32
	start    time.Time

	mu       sync.Mutex
	sessions map[string]*session

	conns connCount
	// toolBuf is the budget of all tool connections' open files;
	// refusing counts the connections being refused (see refuse), and
	// refusedLog paces their log.
	toolBuf    *budget
	refusing   atomic.Int32
	refusedLog logEvery

	text atomic.Pointer[catalogText]

	// token is what is kept of Options.Token (hasToken: one was given).
	token    token.Sum
	hasToken bool

	// onPanic, when set, is told about a panic that the 9P library caught
	// in one of our handlers (the fuzz test fails on it).
	onPanic func(msg string)
}

// New returns a Server. It does not listen; call Serve or ServeConn.
func New(opts Options) (*Server, error) {
	if opts.Source == nil {
		return nil, errors.New("ninep: Options.Source is required (the registry)")
	}
	if opts.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("ninep: no working directory for sessions: %w; set Options.WorkDir", err)
		}
		opts.WorkDir = wd
	}
	if opts.WarmTurns <= 0 {
		opts.WarmTurns = 5
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Limits.setDefaults()
	s := &Server{
		opts: opts, log: opts.Logger,
		uid: uint32(os.Getuid()), gid: uint32(os.Getgid()), start: time.Now(),
		sessions: map[string]*session{},
		toolBuf:  newBudget("all tool connections together", opts.Limits.Tool.Buffered, nil),
	}
	if opts.Token != "" {
		if err := token.Check(opts.Token); err != nil {
			return nil, fmt.Errorf("ninep: Options.Token: %w", err)
		}
		s.token, s.hasToken = token.SumOf(opts.Token), true
		s.opts.Token = "" // (the sum is all it needs)
	}
	return s, nil
}

// Serve accepts connections on l until ctx ends, then closes l and every
// connection it accepted and waits for their handlers to finish.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accepting 9P connections on %s: %w", l.Addr(), err)
		}
		if !s.conns.enter(s.opts.Limits.MaxConns) {
			s.logRefused("refusing a 9P connection: too many connections", "limit", s.opts.Limits.MaxConns)
			s.refuse(nc, nc.SetDeadline)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := Access{}
			if s.opts.Access != nil {
				acc = s.opts.Access(nc)
			}
			if acc != (Access{}) {
				s.log.Info("9P connection", "access", acc.String(), "denied", acc.Denied)
			}
			p, err := s.admit(acc)
			if err != nil {
				s.conns.leave()
				s.logRefused("refusing a 9P connection of a tool", "access", acc.String(), "reason", err)
				s.refuse(nc, nc.SetDeadline)
				return
			}
			defer s.conns.leave()
			if p != nil {
				defer s.conns.leaveTool(p)
			}
			s.serveConn(ctx, nc, acc, p, tcpPeer(nc))
		}()
	}
}

// admit takes a tool's connection into the tools' share (see
// toolshare.go), or says why it cannot; a full client's needs nothing
// (nil).
func (s *Server) admit(acc Access) (*toolPeer, error) {
	if !acc.tool() {
		return nil, nil
	}
	return s.conns.enterTool(acc, s.opts.Limits.Tool, s.toolBuf)
}

// ServeConn serves one connection (already accepted) with full access until
// the peer closes it or ctx ends. It always closes rwc.
func (s *Server) ServeConn(ctx context.Context, rwc io.ReadWriteCloser) {
	s.serveConn(ctx, rwc, Access{}, nil, "")
}

// ServeConnAs serves one connection with the given access. A tool's
// connection counts in the tools' share (Limits.Tool) as one Serve
// accepted would, and past it is refused as Serve refuses it.
func (s *Server) ServeConnAs(ctx context.Context, rwc io.ReadWriteCloser, acc Access) {
	p, err := s.admit(acc)
	if err != nil {
		s.logRefused("refusing a 9P connection of a tool", "access", acc.String(), "reason", err)
		refuseConn(rwc, nil)
		return
	}
	if p != nil {
		defer s.conns.leaveTool(p)
	}
	s.serveConn(ctx, rwc, acc, p, "")
}

// tcpPeer is, for a connection that must send the token (one that did
// not come through a Unix socket), the address of its peer; "" for one on
// a Unix socket. A connection whose kind cannot be told must send it.
func tcpPeer(nc net.Conn) string {
	if a := nc.LocalAddr(); a != nil && a.Network() == "unix" {
		return ""
	}
	if a := nc.RemoteAddr(); a != nil && a.String() != "" {
		return a.String()
	}
	return "an unknown peer"
}

// serveConn serves one connection; p is its tool peer's share (nil for a
// full client, or a tool connection served outside the count); remote,
// when set, is the address of a peer that must send the token (tcpPeer).
func (s *Server) serveConn(ctx context.Context, rwc io.ReadWriteCloser, acc Access, p *toolPeer, remote string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := s.opts.Limits
	c := &conn{srv: s, ctx: ctx, acc: acc, err: acc.Denied, maxFiles: l.MaxFiles}
	msize := uint32(maxFrame)
	var around *budget
	if acc.tool() {
		c.maxFiles, msize, around = l.Tool.Files, toolMsize, s.toolBuf
		if p != nil {
			around = p.buf
		}
	}
	c.buf = newBudget("this connection", l.MaxBuffered, around)
	stop := context.AfterFunc(ctx, func() { rwc.Close() })
	defer stop()

	var check func([]byte) error
	if remote != "" {
		// Until it attaches with the token, the connection has
		// AttachTimeout; after that, as long as it likes.
		dl, _ := rwc.(interface{ SetReadDeadline(time.Time) error })
		if dl != nil {
			dl.SetReadDeadline(time.Now().Add(l.AttachTimeout))
		}
		check = func(aname []byte) error {
			err := c.checkToken(aname, remote)
			if err == nil && dl != nil {
				dl.SetReadDeadline(time.Time{})
			}
			return err
		}
	}
	sh := newShim(rwc, cancel, msize, check)
	srv := p9.NewServer(attacher{c}, p9.WithServerLogger(p9Logger{s}))
	// Handle returns when the reader fails (peer gone, ctx ended, garbage
	// on the wire) and every request in flight has been answered.
	_ = srv.Handle(sh, sh.out)
}

// checkToken vets the attach name of a connection that must send the
// token (see Options.Token): nil, or the refusal, whose reason (in the
// connection's err, and logged at most once a second) never holds what
// the peer sent.
func (c *conn) checkToken(aname []byte, remote string) error {
	s := c.srv
	ok := s.hasToken && s.token.Matches(aname)
	why := ""
	switch {
	case ok:
		return nil
	case !s.hasToken:
		why = "this server has no token, so it takes no connection but on its Unix socket"
	case len(aname) == 0:
		why = "no token: the attach name (aname) is empty"
	default:
		why = "a wrong token in the attach name (aname)"
	}
	s.logRefused("refusing a 9P attach over TCP: "+why, "remote", remote)
	return c.fail(nil, Refuse(linux.EACCES, "refused: %s; a connection over TCP must send the server's token as its attach name (diodcat -a TOKEN, mount -o aname=TOKEN; toolsrv 9p sends it)", why))
}

// catalog is the current catalog snapshot.
func (s *Server) catalog() *registry.Catalog { return s.opts.Source.Catalog() }

// p9Logger receives the 9P library's log lines. It formats only the lines
// that matter: the library logs every message it sends and receives.
type p9Logger struct{ s *Server }

func (l p9Logger) Printf(format string, v ...any) {
	switch {
	case strings.HasPrefix(format, "panic"):
		msg := fmt.Sprintf(format, v...)
		l.s.log.Error("9P handler panicked", "msg", msg)
		if l.s.onPanic != nil {
			l.s.onPanic(msg)
		}
	case strings.HasPrefix(format, "p9.send"):
		l.s.log.Debug("9P send failed", "msg", fmt.Sprintf(format, v...))
	}
}

func (l p9Logger) Print(v ...any) {}

// attacher gives each connection its own root.
type attacher struct{ c *conn }

func (a attacher) Attach() (p9.File, error) {
	if err := a.c.fileOpened(); err != nil {
		return nil, err
	}
	return a.c.root(), nil
}

// conn is one client connection: its context (cancelled when the peer goes
// away, which also cancels its calls) and the text of its err file.
type conn struct {
	srv      *Server
	ctx      context.Context
	acc      Access
	files    atomic.Int64 // Files handed to the library and not yet closed
	maxFiles int          // the most it may hold
	// buf is the budget of what its open files hold for it.
	buf *budget

	mu  sync.Mutex
	err string
}

// errSink is a session or an agent: its err file shows why the last
// refused request made in it failed.
type errSink interface{ setErr(msg string) }

// fail records why a request was refused (in this connection's err file and,
// for a request in a session or an agent, in its err) and returns the errno
// to send.
func (c *conn) fail(sink errSink, err error) error {
	c.note(sink, err.Error())
	return ErrnoOf(err)
}

// note records msg in this connection's err file and, when sink is set,
// in the session's or agent's.
func (c *conn) note(sink errSink, msg string) {
	c.mu.Lock()
	c.err = msg
	c.mu.Unlock()
	if sink != nil {
		sink.setErr(msg)
	}
}

// toolNote says, in a refusal, that a limit is a tool connection's.
func (c *conn) toolNote() string {
	if c.acc.tool() {
		return " for a tool's connection"
	}
	return ""
}

func (c *conn) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
