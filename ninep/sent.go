package ninep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"github.com/toolsrv/toolsrv/registry"
)

// Overlay is a session's own catalog: the server's tools and the .meta
// definitions sent to the session (session/S/meta/NAME), each resolved
// against this server's host. toolsrv serve makes one per session from
// engine.Overlay when the first definition is sent. It must be safe for
// concurrent use.
type Overlay interface {
	// Catalog is the session's catalog; it must not block for long.
	Catalog() *registry.Catalog
	// Send resolves data as the definition of tool name and keeps it,
	// whatever it amounts to (a tool, hidden on this host, or problems),
	// replacing an earlier one of that name. The error is only for a
	// definition that could not be considered (the context ended).
	Send(ctx context.Context, name string, data []byte) (registry.Sent, error)
	// Withdraw removes the definition of name; false if there is none.
	Withdraw(ctx context.Context, name string) bool
	// Definition is the document sent as name.
	Definition(name string) ([]byte, bool)
	// Sent is what each definition amounts to, by name.
	Sent() []registry.Sent
	// Rank ranks the session's catalog and Call calls its tools.
	Ranker
	Caller
	// Close releases the overlay (the session ended).
	Close()
}

// Protocol names the tree this package serves, for clients that must
// know what they are talking to (a federation over ssh): the first line
// of /version. Its number changes when a change of the tree would break
// such a client.
const Protocol = "toolsrv-9p 1"

// versionText is the root version file.
func (s *Server) versionText() []byte {
	build := s.opts.Build
	if build == "" {
		build = "unknown"
	}
	return []byte(Protocol + "\nbuild " + oneLine(build) + "\n")
}

// metaDir is session/S/meta: one file per definition sent to the session.
// Writing NAME (creating it if need be) sends it, reading it gives it back
// as sent, removing it withdraws it.
var metaDir = dirSpec[*session]{
	each: &varChildren[*session]{
		names: func(_ place, se *session) []string {
			ov := se.overlay()
			if ov == nil {
				return nil
			}
			var out []string
			for _, s := range ov.Sent() {
				out = append(out, s.Name)
			}
			return out
		},
		sees: func(Access, *session, string) bool { return true }, // meta/ itself needs full access
		open: func(pl place, se *session, name string) (p9.File, error) {
			if ov := se.overlay(); ov != nil {
				if _, ok := ov.Definition(name); ok {
					return pl.child(name, func(p place) p9.File { return newSentFile(p, se, name) }), nil
				}
			}
			return nil, Refuse(linux.ENOENT, "no definition %s was sent to session %s (write session/%s/meta/%s to send one)", name, se.name, se.name, name)
		},
	},
	rm: &dirChange[*session]{needFull, func(pl place, se *session, name string) error {
		if err := pl.c.acc.maySend("withdraw"); err != nil {
			return err
		}
		if ov := se.overlay(); ov == nil || !ov.Withdraw(pl.c.ctx, name) {
			return Refuse(linux.ENOENT, "no definition %s was sent to session %s", name, se.name)
		}
		pl.c.srv.log.Info("definition withdrawn", "session", se.name, "tool", name)
		return nil
	}},
	create: func(pl place, se *session, name string) (p9.File, error) {
		// The fid becomes the new file (Tlcreate), still to be written.
		if err := pl.c.acc.maySend("send"); err != nil {
			return nil, err
		}
		if err := registry.ValidName(name); err != nil {
			return nil, Refuse(linux.EINVAL, "bad tool name %q: %v", name, err)
		}
		if _, err := se.sendable(name); err != nil {
			return nil, err
		}
		return pl.child(name, func(p place) p9.File { return newSentFile(p, se, name) }), nil
	},
}

// maySend refuses a connection that may not send definitions: one whose
// peer the operating system did not authenticate (TCP).
func (a Access) maySend(what string) error {
	if a.Unauthenticated != "" {
		return Refuse(linux.EACCES, "%s: definitions are taken only on connections the operating system authenticated "+
			"(the server's Unix socket, of its own user, or toolsrv serve --stdio under ssh); %s", what, a.Unauthenticated)
	}
	return nil
}

// sendable returns the session's overlay (made now if need be), or why
// name cannot be sent to it.
func (se *session) sendable(name string) (Overlay, error) {
	s := se.srv
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.ended {
		return nil, Refuse(linux.ENOENT, "session %s has ended", se.name)
	}
	if se.ov == nil {
		if s.opts.Overlays == nil {
			return nil, Refuse(linux.ENOSYS, "this server takes no tool definitions")
		}
		se.ov = s.opts.Overlays(se.name)
	}
	if _, ok := se.ov.Definition(name); !ok && len(se.ov.Sent()) >= s.opts.Limits.MaxSent {
		return nil, tooMany(fmt.Sprintf("send %s to session %s: too many definitions in the session", name, se.name), s.opts.Limits.MaxSent)
	}
	return se.ov, nil
}

// sentFile is session/S/meta/NAME. A write sends the definition when it
// is complete: when it parses as JSON, at the end of a write(2) (see
// splitMin), or at close. A write at offset 0 starts a new definition.
type sentFile struct {
	fileBase
	se   *session
	name string
	ct   content

	mu      sync.Mutex
	buf     []byte
	bufIn   held // what buf's array is charged
	pending bool
}

func newSentFile(pl place, se *session, name string) *sentFile {
	f := &sentFile{se: se, name: name, ct: newContent(pl, nil), bufIn: held{b: pl.c.buf}}
	f.ct.uncharged = true // the definition as the overlay keeps it
	f.ct.render = func() ([]byte, error) {
		if ov := se.overlay(); ov != nil {
			if b, ok := ov.Definition(name); ok {
				return b, nil
			}
		}
		return nil, nil
	}
	f.node = pl.node(p9.ModeRegular | 0o644)
	f.node.size = f.ct.length
	return f
}

// ReadAt implements p9.File.ReadAt: the definition as it was sent.
func (f *sentFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ct.readAt(p, off)
	if err != nil {
		return 0, f.c.fail(f.sink, err)
	}
	return n, nil
}

// WriteAt implements p9.File.WriteAt.
func (f *sentFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.ct.invalidate()
	if err := f.c.acc.maySend("send " + f.name); err != nil {
		return 0, f.c.fail(f.sink, err)
	}
	if off == 0 || !f.pending {
		f.buf = f.buf[:0]
	}
	if len(f.buf)+len(p) > registry.MaxSentSize {
		f.dropLocked()
		return 0, f.c.fail(f.sink, Refuse(linux.EFBIG, "definition %s is larger than %d bytes (%d KiB), the limit for a sent definition; nothing was sent: shorten its prompt",
			f.name, registry.MaxSentSize, registry.MaxSentSize>>10))
	}
	buf, full := f.bufIn.grow(f.buf, len(p), registry.MaxSentSize)
	if full != nil {
		f.dropLocked()
		return 0, f.c.fail(f.sink, full.refusal(linux.ENOSPC, "send "+f.name))
	}
	f.buf = append(buf, p...)
	f.pending = true
	t := bytes.TrimSpace(f.buf)
	if len(p) < splitMin || json.Valid(t) || (len(t) > 0 && t[0] != '{') {
		if err := f.sendLocked(); err != nil {
			return 0, f.c.fail(f.sink, err)
		}
	}
	return len(p), nil
}

// sendLocked sends what was written. A definition with problems is kept
// (listed, its problems in the session's errors) and the write is refused
// with them.
func (f *sentFile) sendLocked() error {
	data := f.buf
	f.buf, f.pending = nil, false
	defer f.bufIn.release() // data is the send's until it returns
	ov, err := f.se.sendable(f.name)
	if err != nil {
		return err
	}
	res, err := ov.Send(f.c.ctx, f.name, data)
	if err != nil {
		return fmt.Errorf("send %s: %w", f.name, err)
	}
	log := f.c.srv.log
	switch {
	case len(res.Problems) > 0:
		log.Info("definition sent: invalid", "session", f.se.name, "tool", f.name, "problems", len(res.Problems))
		msgs := make([]string, len(res.Problems))
		for i, p := range res.Problems {
			msgs[i] = oneLine(p.Error())
		}
		return Refuse(linux.EINVAL, "definition %s is not usable on this host (kept, listed in session/%s/errors until replaced or removed): %s",
			f.name, f.se.name, strings.Join(msgs, "; "))
	case res.Hidden != nil:
		log.Info("definition sent: hidden on this host", "session", f.se.name, "tool", f.name, "reason", res.Hidden.Reason)
	default:
		log.Info("definition sent", "session", f.se.name, "tool", f.name, "variant", res.Tool.Variant, "command", res.Tool.Command.Kind)
	}
	return nil
}

// dropLocked forgets the definition being written.
func (f *sentFile) dropLocked() {
	f.buf, f.pending = nil, false
	f.bufIn.release()
}

// SetAttr implements p9.File.SetAttr: truncation (echo x > meta/NAME) is
// accepted; the write that follows replaces the definition.
func (f *sentFile) SetAttr(valid p9.SetAttrMask, _ p9.SetAttr) error {
	return acceptTruncate(valid)
}

// Close implements p9.File.Close: a definition still pending is sent now
// (its refusal can only be recorded in err).
func (f *sentFile) Close() error {
	f.mu.Lock()
	if f.pending {
		if err := f.sendLocked(); err != nil {
			f.c.fail(f.sink, err)
		}
	}
	f.dropLocked()
	f.mu.Unlock()
	f.ct.release()
	return f.node.Close()
}

// sessionTexts is the rendering of a session's catalog: as the server's,
// but errors is about what was sent to the session (see sentNotes).
func (se *session) texts() *catalogText {
	ov := se.overlay()
	if ov == nil {
		t := se.srv.texts()
		if cur := se.text.Load(); cur != nil && cur.cat == t.cat {
			return cur
		}
		st := *t
		st.errors = nil
		se.text.Store(&st)
		return &st
	}
	cat := ov.Catalog()
	if cur := se.text.Load(); cur != nil && cur.cat == cat {
		return cur
	}
	t := renderCatalog(cat)
	t.errors = sentNotes(ov.Sent(), cat)
	se.text.Store(t)
	return t
}

// sentNotes is a session's errors file: for each sent definition, by
// name, a line per problem (file[:line]: [field "f":] reason, as /errors),
// and a line when it is hidden here, when the host's tool of its name is
// served instead, or when it shadows the host's tool.
func sentNotes(sent []registry.Sent, cat *registry.Catalog) []byte {
	var b bytes.Buffer
	for _, s := range sent {
		for _, p := range s.Problems {
			fmt.Fprintln(&b, oneLine(p.Error()))
		}
		if s.Hidden != nil {
			fmt.Fprintf(&b, "%s: hidden on this host: %s\n", s.File, oneLine(s.Hidden.Reason))
		}
		if t, ok := cat.Get(s.Name); ok && s.Tool == nil {
			fmt.Fprintf(&b, "%s: the host's %s (%s) is served in this session instead\n", s.File, s.Name, t.File)
		}
		for _, sh := range cat.Shadowed {
			if sh.ShadowedBy == s.File {
				fmt.Fprintf(&b, "%s: shadows the host's %s (%s): the sent definition is served in this session\n", s.File, sh.Name, sh.File)
			}
		}
	}
	return b.Bytes()
}
