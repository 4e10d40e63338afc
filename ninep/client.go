package ninep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// Client is a small 9P client for this tree, built on the 9P library's own
// client. A refused request comes back as a *RefusedError carrying the errno
// and the reason read from the connection's err file.
type Client struct {
	conn io.ReadWriteCloser
	c    *p9.Client
	root p9.File
	// ctx is Connect's context (Background for NewClient); stop ends its
	// watch over the connection.
	ctx  context.Context
	stop func() bool
}

// RefusedError is a request the server refused.
type RefusedError struct {
	Op, Path string
	Errno    linux.Errno
	Reason   string // from err; may be empty
}

func (e *RefusedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s /%s: %v", e.Op, e.Path, e.Errno)
	}
	return fmt.Sprintf("%s /%s: %v: %s", e.Op, e.Path, e.Errno, e.Reason)
}

// Unwrap lets errors.Is(err, linux.EACCES) work.
func (e *RefusedError) Unwrap() error { return e.Errno }

// A ClientOption changes how a client attaches.
type ClientOption func(*clientOptions)

type clientOptions struct {
	token string
}

// WithToken sends token as the attach name (aname): what a server's
// connections over TCP must send (Options.Token). Connect sends it to a
// tcp: address only; ConnectOver and NewClient send it whenever given.
// Without it the attach name is empty.
func WithToken(token string) ClientOption {
	return func(o *clientOptions) { o.token = token }
}

// Connect dials addr (unix:PATH or tcp:HOST:PORT) and attaches to the root.
// The connection lives until Close or until ctx ends: then it is closed, so
// a call blocked on a server that does not answer returns (with ctx's
// error) instead of waiting forever. The 9P library's client takes no
// context; this is how a signal reaches it.
func Connect(ctx context.Context, addr string, opts ...ClientOption) (*Client, error) {
	a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	if a.Net != "tcp" {
		// A Unix socket's server ignores the attach name: the token
		// goes where it is needed only.
		opts = append(opts, WithToken(""))
	}
	nc, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return ConnectOver(ctx, nc, addr, opts...)
}

// ConnectOver is Connect over a connection already made (a pipe to ssh,
// say); addr names the server in errors. rwc is closed when ctx ends, and
// on failure.
func ConnectOver(ctx context.Context, rwc io.ReadWriteCloser, addr string, opts ...ClientOption) (*Client, error) {
	stop := context.AfterFunc(ctx, func() { rwc.Close() })
	cl, err := NewClient(rwc, opts...)
	if err != nil {
		stop()
		rwc.Close()
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		var o clientOptions
		for _, f := range opts {
			f(&o)
		}
		switch {
		case errors.Is(err, linux.EUSERS):
			return nil, fmt.Errorf("9P session with %s: the server refused the connection: it serves as many connections as its limit allows; close idle clients and retry (%w)", addr, err)
		case errors.Is(err, linux.EACCES) && o.token == "":
			return nil, fmt.Errorf("9P session with %s: the server refused the attach: over TCP it takes only clients that send its token, and none was sent (%w)", addr, err)
		case errors.Is(err, linux.EACCES):
			return nil, fmt.Errorf("9P session with %s: the server refused the attach: over TCP it takes only clients that send its token, and the token sent is not the server's (%w)", addr, err)
		}
		return nil, fmt.Errorf("9P session with %s: %w", addr, err)
	}
	cl.ctx, cl.stop = ctx, stop
	return cl, nil
}

// NewClient speaks 9P over an established connection, a socket or a pipe
// to one (closing it is the caller's way to interrupt a blocked call).
func NewClient(nc io.ReadWriteCloser, opts ...ClientOption) (*Client, error) {
	var o clientOptions
	for _, f := range opts {
		f(&o)
	}
	c, err := p9.NewClient(nc)
	if err != nil {
		return nil, err
	}
	root, err := c.Attach(o.token)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	return &Client{conn: nc, c: c, root: root, ctx: context.Background(), stop: func() bool { return false }}, nil
}

// Close ends the connection.
func (cl *Client) Close() error {
	cl.stop()
	cl.root.Close()
	return cl.c.Close()
}

func split(p string) []string {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// refused wraps an errno from the server with the reason in err. After
// Connect's context ended, the error is the context's.
func (cl *Client) refused(op, p string, err error) error {
	if cl.ctx.Err() != nil {
		return fmt.Errorf("%s /%s: %w", op, strings.Trim(path.Clean("/"+p), "/"), context.Cause(cl.ctx))
	}
	var errno linux.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("%s /%s: %w", op, p, err)
	}
	reason, _ := cl.readPath("err")
	return &RefusedError{Op: op, Path: strings.Trim(path.Clean("/"+p), "/"), Errno: errno, Reason: strings.TrimSpace(string(reason))}
}

func (cl *Client) walk(p string) (p9.File, error) {
	_, f, err := cl.root.Walk(split(p))
	return f, err
}

func (cl *Client) readPath(p string) ([]byte, error) {
	f, err := cl.walk(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return nil, err
	}
	return readAll(f)
}

func readAll(f p9.File) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, int64(len(out)))
		out = append(out, buf[:n]...)
		if err == io.EOF || (err == nil && n == 0) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// Read returns the contents of a file.
func (cl *Client) Read(p string) ([]byte, error) {
	b, err := cl.readPath(p)
	if err != nil {
		return nil, cl.refused("read", p, err)
	}
	return b, nil
}

// Write writes data to a file in one request (split into messages as
// needed) and closes it.
func (cl *Client) Write(p string, data []byte) error {
	f, err := cl.walk(p)
	if err != nil {
		return cl.refused("write", p, err)
	}
	defer f.Close()
	if _, _, err := f.Open(p9.WriteOnly); err != nil {
		return cl.refused("write", p, err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return cl.refused("write", p, err)
	}
	return nil
}

// Transact writes a request to a transaction file (rank, call/NAME) and
// returns the answer read on the same open file.
func (cl *Client) Transact(p string, req []byte) ([]byte, error) {
	f, err := cl.walk(p)
	if err != nil {
		return nil, cl.refused("write", p, err)
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadWrite); err != nil {
		return nil, cl.refused("write", p, err)
	}
	if _, err := f.WriteAt(req, 0); err != nil {
		return nil, cl.refused("write", p, err)
	}
	ans, err := readAll(f)
	if err != nil {
		return nil, cl.refused("read", p, err)
	}
	return ans, nil
}

// Send writes a .meta definition to p, a session's meta/NAME, creating the
// file if the session has no definition of that name yet. A definition
// with problems is refused (EINVAL) with them, and kept by the server,
// listed in the session's errors until replaced or removed.
func (cl *Client) Send(p string, data []byte) error {
	parts := split(p)
	if len(parts) == 0 {
		return cl.refused("write", p, linux.EISDIR)
	}
	dir, name := path.Join(parts[:len(parts)-1]...), parts[len(parts)-1]
	f, err := cl.walk(p)
	if err == nil {
		if _, _, err = f.Open(p9.WriteOnly); err != nil {
			f.Close()
			return cl.refused("write", p, err)
		}
	} else {
		if !errors.Is(err, linux.ENOENT) {
			return cl.refused("write", p, err)
		}
		d, err := cl.walk(dir)
		if err != nil {
			return cl.refused("write", p, err)
		}
		f, _, _, err = d.Create(name, p9.WriteOnly, 0o644, p9.NoUID, p9.NoGID)
		if err != nil {
			d.Close()
			return cl.refused("write", p, err)
		}
		// Tlcreate turned d's fid into the new file's.
	}
	defer f.Close()
	if _, err := f.WriteAt(data, 0); err != nil {
		return cl.refused("write", p, err)
	}
	return nil
}

// IsSent reports whether p is a definition sent to a session:
// session/S/meta/NAME.
func IsSent(p string) bool {
	parts := split(p)
	return len(parts) == 4 && parts[0] == "session" && parts[2] == "meta"
}

// A Reader reads one file again and again on one open fid (a revision to
// follow): each Read renders it afresh.
type Reader struct {
	cl *Client
	p  string
	f  p9.File
}

// Open opens p for reading with Reader.Read; Close it when done.
func (cl *Client) Open(p string) (*Reader, error) {
	f, err := cl.walk(p)
	if err != nil {
		return nil, cl.refused("read", p, err)
	}
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		f.Close()
		return nil, cl.refused("read", p, err)
	}
	return &Reader{cl: cl, p: p, f: f}, nil
}

// Read returns the file's current contents.
func (r *Reader) Read() ([]byte, error) {
	b, err := readAll(r.f)
	if err != nil {
		return nil, r.cl.refused("read", r.p, err)
	}
	return b, nil
}

// Close releases the open file.
func (r *Reader) Close() error { return r.f.Close() }

// A Tx is a transaction file (rank, call/NAME) kept open for one request
// after another: each Do costs a write and a read, where Transact also
// walks, opens and clunks. A Tx is for one request at a time.
type Tx struct {
	cl *Client
	p  string
	f  p9.File
}

// OpenTx opens the transaction file p for Do; Close it when done.
func (cl *Client) OpenTx(p string) (*Tx, error) {
	f, err := cl.walk(p)
	if err != nil {
		return nil, cl.refused("write", p, err)
	}
	if _, _, err := f.Open(p9.ReadWrite); err != nil {
		f.Close()
		return nil, cl.refused("write", p, err)
	}
	return &Tx{cl: cl, p: p, f: f}, nil
}

// Do writes a request (a new one: at offset 0) and returns its answer.
func (tx *Tx) Do(req []byte) ([]byte, error) {
	if _, err := tx.f.WriteAt(req, 0); err != nil {
		return nil, tx.cl.refused("write", tx.p, err)
	}
	ans, err := readAll(tx.f)
	if err != nil {
		return nil, tx.cl.refused("read", tx.p, err)
	}
	return ans, nil
}

// Close releases the open file.
func (tx *Tx) Close() error { return tx.f.Close() }

// IsTransaction reports whether p is a transaction file: rank, rank.json, or a file
// under an agent's call directory.
func IsTransaction(p string) bool {
	parts := split(p)
	if len(parts) == 0 {
		return false
	}
	if last := parts[len(parts)-1]; last == "rank" || last == "rank.json" {
		return true
	}
	return len(parts) >= 2 && parts[len(parts)-2] == "call"
}

// Entry is one directory entry.
type Entry struct {
	Name string
	Dir  bool
}

// List returns a directory's entries.
func (cl *Client) List(p string) ([]Entry, error) {
	f, err := cl.walk(p)
	if err != nil {
		return nil, cl.refused("ls", p, err)
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return nil, cl.refused("ls", p, err)
	}
	var out []Entry
	var off uint64
	for {
		ents, err := f.Readdir(off, 64<<10)
		if err != nil {
			return nil, cl.refused("ls", p, err)
		}
		if len(ents) == 0 {
			return out, nil
		}
		for _, e := range ents {
			out = append(out, Entry{Name: e.Name, Dir: e.Type == p9.TypeDir})
			off = e.Offset
		}
	}
}

// Mkdir makes a session (session/S) or an agent (session/S/agent/A).
func (cl *Client) Mkdir(p string) error {
	parts := split(p)
	if len(parts) == 0 {
		return cl.refused("mkdir", p, linux.EEXIST)
	}
	d, err := cl.walk(path.Join(parts[:len(parts)-1]...))
	if err != nil {
		return cl.refused("mkdir", p, err)
	}
	defer d.Close()
	if _, err := d.Mkdir(parts[len(parts)-1], 0o755, p9.NoUID, p9.NoGID); err != nil {
		return cl.refused("mkdir", p, err)
	}
	return nil
}

// Remove ends a session or an agent (or removes any other removable entry).
func (cl *Client) Remove(p string) error {
	parts := split(p)
	if len(parts) == 0 {
		return cl.refused("rm", p, linux.EPERM)
	}
	d, err := cl.walk(path.Join(parts[:len(parts)-1]...))
	if err != nil {
		return cl.refused("rm", p, err)
	}
	defer d.Close()
	if err := d.UnlinkAt(parts[len(parts)-1], 0); err != nil {
		return cl.refused("rm", p, err)
	}
	return nil
}

// Stat returns a file's size and mode.
func (cl *Client) Stat(p string) (size uint64, mode p9.FileMode, err error) {
	f, err := cl.walk(p)
	if err != nil {
		return 0, 0, cl.refused("stat", p, err)
	}
	defer f.Close()
	_, _, a, err := f.GetAttr(p9.AttrMaskAll)
	if err != nil {
		return 0, 0, cl.refused("stat", p, err)
	}
	return a.Size, a.Mode, nil
}
