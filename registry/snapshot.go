package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The catalog snapshot (Options.CatalogCache) keeps, between runs, what
// every .meta file of the tool directories parsed into, with the file's
// size, times and inode. A load that finds a file unchanged by one stat
// takes its parse from the snapshot instead of opening, reading, hashing
// and parsing it: at 10,000 tools that was two fifths of a warm start's
// CPU.
//
// What counts as unchanged is stricter than what the registry checks while
// it watches (size and modification time): the change time and the inode
// must match too. A program cannot set a file's change time, and an editor
// that saves by renaming makes a new inode, so a file rewritten with the
// same size and a restored modification time (cp -p, touch -d, an archive
// unpacked again) is read again. A file whose change time is within
// snapRacy of the load that read it is left out of the snapshot: it could
// have been written again within the filesystem's time granularity after
// it was read, with the same times (git's "racy" entries). It is read
// again at the next start, and kept from then on.
//
// Only a file that parsed without problems is kept; the others are read
// every time, so that their problems come with their lines. The snapshot is
// written by one build of toolsrv and used only by it (fileio.ExecutableID):
// a parser that changed never sees another's output. A missing, foreign,
// truncated or corrupt snapshot is an empty one: it only ever speeds a load
// up.

// snapMagic names the format of the snapshot file and its version.
const snapMagic = "toolsrv-catalog 1\n"

// maxSnapBytes bounds the snapshot file read (about 1.2 KB a tool).
const maxSnapBytes = 1 << 30

// snapRacy is how recently changed a file may be and still be kept.
const snapRacy = 2 * time.Second

// snapSlack: the snapshot is rewritten once more than one file in
// snapSlack changed since it was written (see saveSnapshot).
const snapSlack = 64

// CatalogCacheFile names the catalog snapshot of a set of tool directories
// in dir (a cache directory): different directory lists keep different
// snapshots instead of evicting each other.
func CatalogCacheFile(dir string, toolDirs []string) string {
	abs := make([]string, len(toolDirs))
	for i, d := range toolDirs {
		abs[i] = d
		if a, err := filepath.Abs(d); err == nil {
			abs[i] = a
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(abs, "\x00")))
	return filepath.Join(dir, "catalog-"+hex.EncodeToString(sum[:8])+".snap")
}

// fileKey is what says a file is the one read before.
type fileKey struct {
	size, mtime, ctime int64 // bytes; nanoseconds since 1970
	ino, dev           uint64
}

// keyOf is the key of a stat; the zero key (no stat) matches nothing.
func keyOf(st *syscall.Stat_t) fileKey {
	if st == nil {
		return fileKey{}
	}
	return fileKey{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, dev: uint64(st.Dev)}
}

// snapEntry is one file of a snapshot: its key, its SHA-256 and its
// encoded Meta (decoded only if the file is found unchanged).
type snapEntry struct {
	key  fileKey
	sum  [32]byte
	meta string
}

// snapshot is a snapshot file as read: .meta path → entry.
type snapshot map[string]*snapEntry

// snapHeader is the snapshot file's header line.
type snapHeader struct {
	fileio.BodyCheck
	Program string `json:"program"`
	Files   int    `json:"files"`
}

// readSnapshot reads the snapshot at path written by program. No file is
// an empty snapshot and no error.
func readSnapshot(path, program string) (snapshot, error) {
	var h snapHeader
	body, err := fileio.ReadFramed(path, snapMagic, &h, maxSnapBytes)
	switch {
	case errors.Is(err, fileio.ErrNoFile):
		return nil, nil
	case err != nil:
		return nil, err
	case h.Program != program || program == "":
		return nil, errors.New("written by another build of toolsrv; it will be rewritten")
	}
	return parseSnapshot(body, h.Files)
}

// parseSnapshot parses a snapshot's body of (about) files entries.
func parseSnapshot(body []byte, files int) (snapshot, error) {
	// One string of the whole body: every string read from it (paths,
	// descriptions, prompts) is a substring, not a copy of its own. The
	// body is not copied into it either (unsafe.String): it is a buffer
	// of its own that nothing writes after the read, and copying 11 MB at
	// 10,000 tools was a third of reading the snapshot.
	r := snapReader{s: unsafe.String(unsafe.SliceData(body), len(body))}
	s := make(snapshot, max(0, min(files, len(body))))
	for r.err == nil && len(r.s) > 0 {
		p := r.str()
		e := &snapEntry{key: r.key()}
		copy(e.sum[:], r.fixed(len(e.sum)))
		e.meta = r.str()
		s[p] = e
	}
	if r.err != nil {
		return nil, fmt.Errorf("malformed: %w", r.err)
	}
	return s, nil
}

// keepable says the catalog snapshot keeps fe: it parsed without
// problems, and it was not changed within snapRacy of since (the start of
// the load that read it).
func (fe *fileEntry) keepable(since time.Time) bool {
	return fe.meta != nil && len(fe.errs) == 0 && fe.key != (fileKey{}) && fe.key.ctime < since.Add(-snapRacy).UnixNano()
}

// snapFile is what the snapshot keeps of a file, taken under the
// registry's lock (a parsed Meta is never changed).
type snapFile struct {
	path string
	key  fileKey
	sum  [32]byte
	meta *Meta
}

// writeSnapshot writes the snapshot of files to path, readable by its
// owner only (it holds every definition, prompts included), making its
// directory if there is none; it encodes one file at a time as it writes
// (fileio.WriteFramed streams it: the snapshot is as large as the files).
func writeSnapshot(path, program string, files []snapFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileio.WriteFramed(path, 0o600, snapMagic, &snapHeader{Program: program, Files: len(files)}, func(out io.Writer) error {
		var w, m snapWriter // one file's entry and its definition, reused
		for _, f := range files {
			m.b = m.b[:0]
			m.meta(f.meta)
			if m.err != nil {
				return fmt.Errorf("%s: %w", f.path, m.err)
			}
			w.b = w.b[:0]
			w.str(f.path)
			w.key(f.key)
			w.b = append(w.b, f.sum[:]...)
			w.bytes(m.b)
			if _, err := out.Write(w.b); err != nil {
				return err
			}
		}
		return nil
	})
}

// snapWriter appends values to b; the first value that cannot be written
// is err.
type snapWriter struct {
	b   []byte
	err error
}

func (w *snapWriter) uvarint(x uint64) { w.b = binary.AppendUvarint(w.b, x) }
func (w *snapWriter) varint(x int64)   { w.b = binary.AppendVarint(w.b, x) }
func (w *snapWriter) bytes(p []byte)   { w.uvarint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *snapWriter) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }

func (w *snapWriter) key(k fileKey) {
	w.varint(k.size)
	w.varint(k.mtime)
	w.varint(k.ctime)
	w.uvarint(k.ino)
	w.uvarint(k.dev)
}

func (w *snapWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// count writes a length that tells nil (0) from empty (1).
func (w *snapWriter) count(n int, isNil bool) {
	if isNil {
		w.uvarint(0)
		return
	}
	w.uvarint(uint64(n) + 1)
}

func (w *snapWriter) strs(ss []string) {
	w.count(len(ss), ss == nil)
	for _, s := range ss {
		w.str(s)
	}
}

// fields writes the fields f sets, each by its declaration's codec.
func (w *snapWriter) fields(f fields) {
	w.count(len(f), f == nil)
	for i := range metaFields {
		d := &metaFields[i]
		if v, ok := f[d.name]; ok {
			w.uvarint(uint64(i))
			d.enc(w, v)
		}
	}
}

// meta writes everything a parsed Meta holds but its lines (which are
// read from the file when a problem needs one).
func (w *snapWriter) meta(m *Meta) {
	w.fields(m.fields)
	w.count(len(m.Variants), m.Variants == nil)
	for _, v := range m.Variants {
		w.count(len(v.Match), v.Match == nil)
		for k, alts := range v.Match {
			w.str(k)
			w.strs(alts)
		}
		w.fields(v.fields)
	}
	w.count(len(m.Extra), m.Extra == nil)
	for k, raw := range m.Extra {
		w.str(k)
		w.bytes(raw)
	}
	w.strs(m.Warnings)
}

// snapReader reads what snapWriter wrote from a string; after the first
// malformed value err is set and every read returns a zero value. The
// strings it returns are substrings of s.
type snapReader struct {
	s   string
	err error
}

var errSnapShort = errors.New("ends in the middle of a value")

func (r *snapReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.s = ""
}

// next is the start of r.s where a varint can be (the conversion of at
// most binary.MaxVarintLen64 bytes does not escape: no allocation).
func (r *snapReader) next() []byte { return []byte(r.s[:min(len(r.s), binary.MaxVarintLen64)]) }

func (r *snapReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *snapReader) varint() int64   { return readVarint(r, binary.Varint) }

// readVarint reads one varint with decode (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](r *snapReader, decode func([]byte) (T, int)) T {
	x, n := decode(r.next())
	if n <= 0 {
		r.fail(errSnapShort)
		return 0
	}
	r.s = r.s[n:]
	return x
}

// key reads what snapWriter.key wrote.
func (r *snapReader) key() fileKey {
	return fileKey{size: r.varint(), mtime: r.varint(), ctime: r.varint(), ino: r.uvarint(), dev: r.uvarint()}
}

// fixed reads n bytes.
func (r *snapReader) fixed(n int) string {
	if n > len(r.s) {
		r.fail(errSnapShort)
		return ""
	}
	p := r.s[:n]
	r.s = r.s[n:]
	return p
}

// str reads a length-prefixed string.
func (r *snapReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.s)) {
		r.fail(errSnapShort)
		return ""
	}
	return r.fixed(int(n))
}

func (r *snapReader) bool() bool { return r.fixed(1) == "\x01" }

// count reads what snapWriter.count wrote. A count larger than the bytes
// left (each element takes one at least) is malformed.
func (r *snapReader) count() (n int, isNil bool) {
	c := r.uvarint()
	switch {
	case c == 0:
		return 0, r.err == nil
	case c-1 > uint64(len(r.s)):
		r.fail(errSnapShort)
		return 0, true
	}
	return int(c - 1), false
}

func (r *snapReader) strs() []string {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (r *snapReader) fields() fields {
	n, isNil := r.count()
	if isNil {
		return nil
	}
	f := make(fields, n)
	for range n {
		i := r.uvarint()
		if i >= uint64(len(metaFields)) {
			r.fail(fmt.Errorf("field number %d out of range", i))
			return f
		}
		d := &metaFields[i]
		f[d.name] = d.dec(r)
	}
	return f
}

// meta reads a Meta that snapWriter.meta wrote.
func (r *snapReader) meta() *Meta {
	m := &Meta{lines: newFieldLines(nil, metaLines)}
	m.fields = r.fields()
	if n, isNil := r.count(); !isNil {
		m.Variants = make([]variant, n)
		for i := range m.Variants {
			v := &m.Variants[i]
			if k, isNil := r.count(); !isNil {
				v.Match = make(match, k)
				for range k {
					key := r.str()
					v.Match[key] = r.strs()
				}
			}
			v.fields = r.fields()
		}
	}
	if n, isNil := r.count(); !isNil {
		m.Extra = make(map[string]json.RawMessage, n)
		for range n {
			k := r.str()
			m.Extra[k] = json.RawMessage(r.str())
		}
	}
	m.Warnings = r.strs()
	return m
}

// decodeMeta decodes an entry's Meta, whose lines come from the file at
// path (when a problem asks for one).
func (e *snapEntry) decodeMeta(path string) (*Meta, error) {
	r := snapReader{s: e.meta}
	m := r.meta()
	switch {
	case r.err != nil:
		return nil, r.err
	case len(r.s) > 0:
		return nil, errors.New("bytes left after the definition")
	}
	m.lines.fromFile(path, e.sum)
	return m, nil
}

// valueCodec is how a field parsed into a T is written to a snapshot and
// read back (field derives each declaration's from T): strings, flags,
// durations, string lists, raw JSON and the registry's string types
// directly, anything else as JSON (a struct such as ToolLimits). Every
// field's sample value must survive the round trip (TestSnapshotFields).
func valueCodec[T any]() (enc func(*snapWriter, any), dec func(*snapReader) any) {
	var zero T
	switch any(zero).(type) {
	case string:
		return stringCodec[string]()
	case Tier: // the registry's own string types, without reflection
		return stringCodec[Tier]()
	case Concurrency:
		return stringCodec[Concurrency]()
	case bool:
		return func(w *snapWriter, v any) { w.bool(v.(bool)) }, func(r *snapReader) any { return r.bool() }
	case time.Duration:
		return func(w *snapWriter, v any) { w.varint(int64(v.(time.Duration))) },
			func(r *snapReader) any { return time.Duration(r.varint()) }
	case []string:
		return func(w *snapWriter, v any) { w.strs(v.([]string)) }, func(r *snapReader) any { return r.strs() }
	case json.RawMessage:
		return func(w *snapWriter, v any) { w.bytes(v.(json.RawMessage)) },
			func(r *snapReader) any { return json.RawMessage(r.str()) }
	}
	return func(w *snapWriter, v any) {
			b, err := json.Marshal(v)
			if err != nil && w.err == nil {
				w.err = err
			}
			w.bytes(b)
		}, func(r *snapReader) any {
			var x T
			if err := json.Unmarshal([]byte(r.str()), &x); err != nil && r.err == nil {
				r.fail(err)
			}
			return x
		}
}

// stringCodec is valueCodec for a string type S.
func stringCodec[S ~string]() (enc func(*snapWriter, any), dec func(*snapReader) any) {
	return func(w *snapWriter, v any) { w.str(string(v.(S))) }, func(r *snapReader) any { return S(r.str()) }
}
