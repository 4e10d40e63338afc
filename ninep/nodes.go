package ninep

import (
	"bytes"
	"errors"
	"hash/fnv"
	"path"
	"sort"
	"sync"

	"github.com/hugelgupf/p9/fsimpl/templatefs"
	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// The tree is built from four kinds of node, each composed from small
// mixins: node (identity, walk, attributes) plus the library's templatefs
// denials, and only what differs written out:
//
//	dir     a directory declared once by a dirSpec (dirspec.go), from
//	        which both its listing and its lookup come
//	roFile  read-only content, snapshotted per open file
//	cmdFile line commands (ctl, an agent's tools), optionally readable
//	txFile  a transaction: write a request, read the answer on the same fid
//
// Every fid owns its own File object (Walk with no names returns a fresh
// one), so per-open state such as a snapshot or an answer is never shared.

// splitMin is the shortest Twrite that may be a non-final piece of a larger
// write(2): clients split writes at msize minus the 24-byte I/O header, and
// msize is never below 4096. A shorter Twrite ends the client's write.
const splitMin = 4096 - 24

// maxRequest bounds what one transaction or command buffer may hold.
const maxRequest = 4 << 20

// place is where a node is: the connection, the path from the root ("" is
// the root), the session or agent whose err also records its refusals (nil
// outside a session) and how to make another File for it (Walk with no
// names).
type place struct {
	c     *conn
	path  string
	sink  errSink
	fresh func() p9.File
}

// child makes the node called name under pl with mk, which also makes every
// later File for it (a cloned fid).
func (pl place) child(name string, mk func(place) p9.File) p9.File {
	ch := place{c: pl.c, path: path.Join(pl.path, name), sink: pl.sink}
	ch.fresh = func() p9.File { return mk(ch) }
	return mk(ch)
}

func (pl place) node(mode p9.FileMode) node {
	return node{c: pl.c, sink: pl.sink, path: pl.path, mode: mode, fresh: pl.fresh}
}

// node is what every file and directory shares.
type node struct {
	p9.DefaultWalkGetAttr

	c     *conn
	sink  errSink // the session or agent this node belongs to (its err also records refusals), or nil
	path  string  // slash-separated from the root; "" is the root
	mode  p9.FileMode
	fresh func() p9.File                     // a new File for the same node (Walk(nil))
	child func(name string) (p9.File, error) // nil for files
	size  func() uint64                      // nil: 0
	open  func(mode p9.OpenFlags) error      // extra check at open; nil: none
}

func (n *node) qid() p9.QID { return p9.QID{Type: n.mode.QIDType(), Path: pathID(n.path)} }

// pathID is a stable QID path for a tree path.
func pathID(p string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	return h.Sum64()
}

// Walk implements p9.File.Walk: one name at a time (the library walks
// multi-element paths step by step).
func (n *node) Walk(names []string) ([]p9.QID, p9.File, error) {
	switch {
	case len(names) == 0:
		if err := n.c.fileOpened(); err != nil {
			return nil, nil, err
		}
		f := n.fresh()
		return nil, f, nil
	case len(names) > 1:
		return nil, nil, linux.EINVAL
	case n.child == nil:
		return nil, nil, linux.ENOTDIR
	}
	f, err := n.child(names[0])
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			e := ErrnoOf(err)
			err = Refuse(e, "/%s: %v", path.Join(n.path, names[0]), e)
		}
		return nil, nil, n.c.fail(n.sink, err)
	}
	if err := n.c.fileOpened(); err != nil {
		return nil, nil, err
	}
	return []p9.QID{f.(interface{ qid() p9.QID }).qid()}, f, nil
}

// GetAttr implements p9.File.GetAttr with the node's real size.
func (n *node) GetAttr(req p9.AttrMask) (p9.QID, p9.AttrMask, p9.Attr, error) {
	var size uint64
	if n.size != nil {
		size = n.size()
	}
	t := n.c.srv.start
	sec, nsec := uint64(t.Unix()), uint64(t.Nanosecond())
	nlink := p9.NLink(1)
	if n.mode.IsDir() {
		nlink = 2
	}
	attr := p9.Attr{
		Mode: n.mode, UID: p9.UID(n.c.srv.uid), GID: p9.GID(n.c.srv.gid), NLink: nlink,
		Size: size, BlockSize: 4096, Blocks: (size + 511) / 512,
		ATimeSeconds: sec, ATimeNanoSeconds: nsec, MTimeSeconds: sec, MTimeNanoSeconds: nsec,
		CTimeSeconds: sec, CTimeNanoSeconds: nsec,
	}
	valid := p9.AttrMask{Mode: true, NLink: true, UID: true, GID: true, Size: true, Blocks: true,
		ATime: true, MTime: true, CTime: true}
	return n.qid(), valid, attr, nil
}

// StatFS implements p9.File.StatFS.
func (n *node) StatFS() (p9.FSStat, error) {
	return p9.FSStat{Type: 0x01021997 /* V9FS_MAGIC */, BlockSize: 4096, NameLength: 255}, nil
}

// Open implements p9.File.Open: the permission bits decide which modes are
// allowed, and a refused open says why in err.
func (n *node) Open(mode p9.OpenFlags) (p9.QID, uint32, error) {
	perm := n.mode.Permissions()
	name := "/" + n.path
	switch mode.Mode() {
	case p9.ReadOnly:
		if perm&0o444 == 0 {
			return p9.QID{}, 0, n.c.fail(n.sink, Refuse(linux.EACCES, "%s is write-only", name))
		}
	case p9.WriteOnly, p9.ReadWrite:
		if perm&0o222 == 0 {
			return p9.QID{}, 0, n.c.fail(n.sink, Refuse(linux.EACCES, "%s is read-only", name))
		}
		if mode.Mode() == p9.ReadWrite && perm&0o444 == 0 {
			return p9.QID{}, 0, n.c.fail(n.sink, Refuse(linux.EACCES, "%s is write-only; open it for writing only", name))
		}
	default:
		return p9.QID{}, 0, linux.EINVAL
	}
	if n.open != nil {
		if err := n.open(mode); err != nil {
			return p9.QID{}, 0, err
		}
	}
	return n.qid(), 0, nil
}

// Close implements p9.File.Close.
func (n *node) Close() error {
	n.c.fileClosed()
	return nil
}

// fileBase is a regular file: node plus the library's read-only-file
// denials (writes EROFS unless overridden, directory operations ENOTDIR).
type fileBase struct {
	node
	templatefs.ReadOnlyFile
}

// dirBase is a directory: node plus the library's read-only-directory
// denials (read/write EISDIR, creation EROFS unless overridden).
type dirBase struct {
	node
	templatefs.ReadOnlyDir
}

// entry is one directory entry.
type entry struct {
	name string
	dir  bool
}

// dir is a directory; newDir derives its functions from its dirSpec.
type dir struct {
	dirBase
	entries func() []entry
	// mkdir, unlink and create, when set, make the directory writable;
	// they record their own refusals.
	mkdir  func(name string) error
	unlink func(name string) error
	create func(name string) (p9.File, error)
}

// Readdir implements p9.File.Readdir. Offsets are entry indexes.
func (d *dir) Readdir(offset uint64, count uint32) (p9.Dirents, error) {
	ents := d.entries()
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	var out p9.Dirents
	for i := offset; i < uint64(len(ents)) && uint32(len(out)) < count; i++ {
		e := ents[i]
		typ := p9.TypeRegular
		if e.dir {
			typ = p9.TypeDir
		}
		out = append(out, p9.Dirent{
			QID:    p9.QID{Type: typ, Path: pathID(path.Join(d.path, e.name))},
			Offset: i + 1, Type: typ, Name: e.name,
		})
	}
	return out, nil
}

// Mkdir implements p9.File.Mkdir.
func (d *dir) Mkdir(name string, _ p9.FileMode, _ p9.UID, _ p9.GID) (p9.QID, error) {
	if d.mkdir == nil {
		return p9.QID{}, d.c.fail(d.sink, Refuse(linux.EPERM, "cannot create directories in /%s", d.path))
	}
	if err := d.mkdir(name); err != nil {
		return p9.QID{}, err
	}
	return p9.QID{Type: p9.TypeDir, Path: pathID(path.Join(d.path, name))}, nil
}

// Create implements p9.File.Create: files can be made only where the
// directory's declaration says (a session's meta/); elsewhere the tree is
// fixed.
func (d *dir) Create(name string, flags p9.OpenFlags, _ p9.FileMode, _ p9.UID, _ p9.GID) (p9.File, p9.QID, uint32, error) {
	if d.create == nil {
		return nil, p9.QID{}, 0, d.c.fail(d.sink, Refuse(linux.EPERM, "cannot create files in /%s: the tree is fixed; write to an existing file", d.path))
	}
	if flags.Mode() == p9.ReadOnly {
		return nil, p9.QID{}, 0, d.c.fail(d.sink, Refuse(linux.EACCES, "create /%s: open it for writing", path.Join(d.path, name)))
	}
	f, err := d.create(name)
	if err != nil {
		return nil, p9.QID{}, 0, err
	}
	return f, f.(interface{ qid() p9.QID }).qid(), 0, nil
}

// UnlinkAt implements p9.File.UnlinkAt (rm, rmdir and Tremove alike).
func (d *dir) UnlinkAt(name string, _ uint32) error {
	if d.unlink == nil {
		return d.c.fail(d.sink, Refuse(linux.EPERM, "cannot remove /%s", path.Join(d.path, name)))
	}
	return d.unlink(name)
}

// content is per-open content that is rendered on demand and kept stable
// while one reader works through it: reading at offset 0 renders afresh.
// The snapshot is charged to the connection's budget, unless uncharged
// (see newUnchargedFile).
type content struct {
	mu        sync.Mutex
	render    func() ([]byte, error)
	uncharged bool
	name      string // the file's path, for refusals
	h         held
	snap      []byte
	have      bool
}

func newContent(pl place, render func() ([]byte, error)) content {
	return content{render: render, name: "/" + pl.path, h: held{b: pl.c.buf}}
}

func (ct *content) readAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, linux.EINVAL
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if off == 0 || !ct.have {
		b, err := ct.render()
		if err != nil {
			return 0, err
		}
		n := int64(len(b))
		if ct.uncharged {
			n = 0
		}
		if full := ct.h.resize(n); full != nil {
			ct.snap, ct.have = nil, false
			ct.h.release()
			return 0, full.refusal(linux.ENOBUFS, "read "+ct.name)
		}
		ct.snap, ct.have = b, true
	}
	if off >= int64(len(ct.snap)) {
		return 0, nil
	}
	return copy(p, ct.snap[off:]), nil
}

func (ct *content) length() uint64 {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.have {
		return uint64(len(ct.snap))
	}
	b, err := ct.render()
	if err != nil {
		return 0
	}
	return uint64(len(b))
}

func (ct *content) invalidate() {
	ct.mu.Lock()
	ct.have = false
	ct.mu.Unlock()
}

// release drops the snapshot (the file is closed).
func (ct *content) release() {
	ct.mu.Lock()
	ct.snap, ct.have = nil, false
	ct.h.release()
	ct.mu.Unlock()
}

// roFile is read-only content.
type roFile struct {
	fileBase
	ct content
}

func newROFile(pl place, render func() ([]byte, error)) *roFile {
	f := &roFile{ct: newContent(pl, render)}
	f.node = pl.node(p9.ModeRegular | 0o444)
	f.node.size = f.ct.length
	return f
}

// newUnchargedFile is read-only content whose snapshots are not charged
// to the connection's budget: text every reader shares (a catalog's), or
// a line (an err file's, which a client at its budget must still be able
// to read).
func newUnchargedFile(pl place, render func() ([]byte, error)) *roFile {
	f := newROFile(pl, render)
	f.ct.uncharged = true
	return f
}

// ReadAt implements p9.File.ReadAt.
func (f *roFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ct.readAt(p, off)
	if err != nil {
		return 0, f.c.fail(f.sink, err)
	}
	return n, nil
}

// Close implements p9.File.Close.
func (f *roFile) Close() error {
	f.ct.release()
	return f.node.Close()
}

// cmdFile takes line commands. A command ends at a newline, or at the end of
// a write that cannot be a piece of a longer one (see splitMin); anything
// left over runs when the file is closed.
type cmdFile struct {
	fileBase
	ct   content // nil render: write-only
	exec func(line string) error

	mu     sync.Mutex
	pend   []byte
	pendIn held // what pend's array is charged
}

func newCmdFile(pl place, render func() ([]byte, error), exec func(string) error) *cmdFile {
	f := &cmdFile{ct: newContent(pl, render), exec: exec, pendIn: held{b: pl.c.buf}}
	f.node = pl.node(p9.ModeRegular | 0o222)
	if render != nil {
		f.node.mode |= 0o444
		f.node.size = f.ct.length
	}
	return f
}

// ReadAt implements p9.File.ReadAt.
func (f *cmdFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ct.readAt(p, off)
	if err != nil {
		return 0, f.c.fail(f.sink, err)
	}
	return n, nil
}

// WriteAt implements p9.File.WriteAt. The offset is ignored: commands are a
// stream.
func (f *cmdFile) WriteAt(p []byte, _ int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.ct.invalidate()
	if len(f.pend)+len(p) > maxRequest {
		f.dropPending()
		return 0, f.c.fail(f.sink, Refuse(linux.EFBIG, "command longer than %d bytes", maxRequest))
	}
	pend, full := f.pendIn.grow(f.pend, len(p), maxRequest)
	if full != nil {
		f.dropPending()
		return 0, f.c.fail(f.sink, full.refusal(linux.ENOSPC, "write "+f.ct.name))
	}
	f.pend = append(pend, p...)
	for {
		i := bytes.IndexByte(f.pend, '\n')
		if i < 0 {
			break
		}
		line := string(f.pend[:i])
		f.pend = f.pend[i+1:]
		if err := f.run(line); err != nil {
			f.dropPending()
			return 0, err
		}
	}
	if len(f.pend) > 0 && len(p) < splitMin {
		line := string(f.pend)
		f.dropPending()
		if err := f.run(line); err != nil {
			return 0, err
		}
	}
	if len(f.pend) == 0 {
		f.dropPending()
	}
	return len(p), nil
}

// dropPending forgets the unfinished command.
func (f *cmdFile) dropPending() {
	f.pend = nil
	f.pendIn.release()
}

func (f *cmdFile) run(line string) error {
	line = trimLine(line)
	if line == "" {
		return nil
	}
	if err := f.exec(line); err != nil {
		return f.c.fail(f.sink, err)
	}
	return nil
}

// SetAttr implements p9.File.SetAttr: truncation (echo cmd > ctl) is
// accepted and ignored.
func (f *cmdFile) SetAttr(valid p9.SetAttrMask, _ p9.SetAttr) error {
	return acceptTruncate(valid)
}

// Close implements p9.File.Close: a command still buffered runs now (its
// refusal can only be recorded in err).
func (f *cmdFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pend) > 0 {
		line := string(f.pend)
		f.dropPending()
		_ = f.run(line)
	}
	f.ct.release()
	return f.node.Close()
}

// acceptTruncate allows a SetAttr that only truncates or touches times.
func acceptTruncate(valid p9.SetAttrMask) error {
	if valid.Permissions || valid.UID || valid.GID {
		return linux.EPERM
	}
	return nil
}

// txFile is a transaction file (rank, call/NAME): a write sets the request,
// a read on the same fid returns the answer. A request is run as soon as it
// is known to be complete (complete reports that, given whether the last
// write was short), otherwise at the first read.
type txFile struct {
	fileBase
	runReq   func(req []byte) ([]byte, error)
	complete func(req []byte, short bool) bool

	mu      sync.Mutex
	req     []byte
	reqIn   held // what req's array is charged
	pending bool
	ans     []byte
}

func newTxFile(pl place, run func([]byte) ([]byte, error), complete func([]byte, bool) bool) *txFile {
	f := &txFile{runReq: run, complete: complete, reqIn: held{b: pl.c.buf}}
	f.node = pl.node(p9.ModeRegular | 0o666)
	f.node.size = f.length
	return f
}

func (f *txFile) length() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return uint64(len(f.ans))
}

// WriteAt implements p9.File.WriteAt. A write at offset 0 starts a new
// request; later offsets continue it.
func (f *txFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off == 0 || !f.pending {
		f.req, f.ans = f.req[:0], nil
	}
	if len(f.req)+len(p) > maxRequest {
		f.dropRequest()
		return 0, f.c.fail(f.sink, Refuse(linux.EFBIG, "request longer than %d bytes", maxRequest))
	}
	req, full := f.reqIn.grow(f.req, len(p), maxRequest)
	if full != nil {
		f.dropRequest()
		return 0, f.c.fail(f.sink, full.refusal(linux.ENOSPC, "write /"+f.path))
	}
	f.req = append(req, p...)
	f.pending = true
	if f.complete(f.req, len(p) < splitMin) {
		if err := f.runLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// dropRequest forgets the request being written.
func (f *txFile) dropRequest() {
	f.req, f.pending = nil, false
	f.reqIn.release()
}

func (f *txFile) runLocked() error {
	req := f.req
	f.req, f.pending = nil, false
	ans, err := f.runReq(req)
	f.reqIn.release() // the request's array is the run's until it returns
	if err != nil {
		f.ans = nil
		return f.c.fail(f.sink, err)
	}
	f.ans = ans
	return nil
}

// ReadAt implements p9.File.ReadAt.
func (f *txFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, linux.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending {
		if err := f.runLocked(); err != nil {
			return 0, err
		}
	}
	if off >= int64(len(f.ans)) {
		return 0, nil
	}
	return copy(p, f.ans[off:]), nil
}

// Close implements p9.File.Close.
func (f *txFile) Close() error {
	f.mu.Lock()
	f.dropRequest()
	f.mu.Unlock()
	return f.node.Close()
}

// SetAttr implements p9.File.SetAttr (truncation is accepted and ignored).
func (f *txFile) SetAttr(valid p9.SetAttrMask, _ p9.SetAttr) error {
	return acceptTruncate(valid)
}
