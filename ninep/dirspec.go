package ninep

import (
	"path"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// A directory is declared once, by a dirSpec: its fixed children (a table
// of name, kind, constructor and the access a connection needs to see
// them), the children that come and go (sessions, agents, loaded tools),
// and what mkdir and rm do in it. Both its listing (Readdir) and its lookup
// (Walk) are derived from that one declaration, so they cannot disagree.
// T is what the directory's children are made from: nothing at the root,
// the session for session/S, the agent for session/S/agent/A.
type dirSpec[T any] struct {
	// fixed are the entries that are always there (for a connection with
	// the access each needs).
	fixed []fixedChild[T]
	// each, when set, are the entries that come and go.
	each *varChildren[T]
	// unknown is the access a connection needs to be told that a name is
	// not here (ENOENT). Without it, any name it may not see, there or
	// not, is refused with the reason, as a name it may not see is.
	unknown need
	// mkdir and rm, when set, let a connection with their access make and
	// remove entries here (otherwise EPERM).
	mkdir, rm *dirChange[T]
}

// fixedChild is one entry that is always there.
type fixedChild[T any] struct {
	name string
	dir  bool
	need need
	mk   func(pl place, t T) p9.File
}

// varChildren are entries that come and go.
type varChildren[T any] struct {
	dir bool
	// names are the entries now, before sees filters them.
	names func(pl place, t T) []string
	// sees reports whether a connection with access a may see name here.
	sees func(a Access, t T, name string) bool
	// open walks to name, one it may see; a name that is not there is an
	// error (ENOENT, or a refusal that says why). It may open names that
	// names does not list (call/NAME of a tool that is not loaded).
	open func(pl place, t T, name string) (p9.File, error)
}

// dirChange is mkdir or rm.
type dirChange[T any] struct {
	need need
	do   func(pl place, t T, name string) error
}

// newDir makes the directory at pl declared by spec.
func newDir[T any](pl place, t T, spec *dirSpec[T]) *dir {
	d := &dir{entries: func() []entry { return spec.list(pl, t) }}
	d.node = pl.node(p9.ModeDirectory | 0o755)
	d.node.child = func(name string) (p9.File, error) { return spec.walk(pl, t, name) }
	if spec.mkdir != nil {
		d.mkdir = func(name string) error { return spec.mkdir.run(pl, t, "mkdir", name) }
	}
	if spec.rm != nil {
		d.unlink = func(name string) error { return spec.rm.run(pl, t, "rm", name) }
	}
	return d
}

// list is what the directory shows this connection.
func (sp *dirSpec[T]) list(pl place, t T) []entry {
	acc := pl.c.acc
	var out []entry
	for _, ch := range sp.fixed {
		if acc.has(ch.need) {
			out = append(out, entry{ch.name, ch.dir})
		}
	}
	if sp.each != nil {
		for _, name := range sp.each.names(pl, t) {
			if sp.each.sees(acc, t, name) {
				out = append(out, entry{name, sp.each.dir})
			}
		}
	}
	return out
}

// walk opens name for this connection, or says why it cannot.
func (sp *dirSpec[T]) walk(pl place, t T, name string) (p9.File, error) {
	acc := pl.c.acc
	refuse := func() error { return acc.refuse("/" + path.Join(pl.path, name)) }
	for _, ch := range sp.fixed {
		if ch.name != name {
			continue
		}
		if !acc.has(ch.need) {
			return nil, refuse()
		}
		return pl.child(name, func(p place) p9.File { return ch.mk(p, t) }), nil
	}
	if sp.each != nil {
		if !sp.each.sees(acc, t, name) {
			return nil, refuse()
		}
		return sp.each.open(pl, t, name)
	}
	if !acc.has(sp.unknown) {
		return nil, refuse()
	}
	return nil, linux.ENOENT
}

// run makes or removes name (op is "mkdir" or "rm"), recording a refusal
// in err.
func (ch *dirChange[T]) run(pl place, t T, op, name string) error {
	if !pl.c.acc.has(ch.need) {
		return pl.c.fail(pl.ag, pl.c.acc.refuse(op+" /"+path.Join(pl.path, name)))
	}
	if err := ch.do(pl, t, name); err != nil {
		return pl.c.fail(pl.ag, err)
	}
	return nil
}

// ignoreRm lets rm -r walk through a session: removing a fixed entry of a
// session or agent directory succeeds without effect, and removing the
// session or agent directory itself is what ends it.
func ignoreRm[T any]() *dirChange[T] {
	return &dirChange[T]{need: needNothing, do: func(place, T, string) error { return nil }}
}
