package index

// The lexical cache keeps each document's lexical entry — what the lexicon
// makes of its tokens: its distinct terms with their weighted frequencies
// (in order of first occurrence), its length and its short-field terms —
// in a file beside the index cache, so that a start reads the entries
// instead of tokenizing the catalog again (at 10,000 tools, tokenizing and
// interning every word was a third of the index's start).
//
// An entry is keyed by the digest of the document's fields (lexKey), not by
// the tool, so the file serves whatever the catalog now holds: a new or
// changed document is tokenized as before, and the file is written again
// from the view when any was. Entries applied in the catalog's order build
// the same lexicon, term ids and posting order included, as tokenizing.
//
// The file only saves time. One that is missing, unreadable, corrupt or of
// another format is ignored and replaced at the next save; an entry that
// does not decode is a miss. In case the analysis changed without the
// format saying so, the first two documents that have an entry are also
// tokenized, and a difference discards the whole file.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// lexKey identifies a document's fields (document.lexKey).
type lexKey [16]byte

// lexMagic starts every lexical cache file; the number is its layout.
const lexMagic = "toolsrv-lexicon 2\n"

// lexAnalysis names the analysis the entries come from; change it with
// anything that changes a document's tokens (text.Index, appendTokens, the
// order of document.fields). The field weights are added by lexFormat.
const lexAnalysis = "index-6" // 2: class terms, phrases of stop words (issue 44); 3: every run of stop words in a keyword; 4: the file-name class <file>; 5: the class rows of the table; 6: phrases of a keyword only those it starts with, an arithmetic verb kept beside <op>

// lexFormat is what a file's entries depend on besides the fields' texts.
func lexFormat() string {
	return fmt.Sprintf("%s weights=%v,%v,%v,%v,%v short=%d", lexAnalysis,
		weightName, weightDescription, weightKeywords, weightArgs, weightPrompt, numShortFields)
}

// lexHeader is the JSON line after lexMagic.
type lexHeader struct {
	Format string `json:"format"`
	Terms  int    `json:"terms"`
	Docs   int    `json:"docs"`
	// Binary identifies the program that wrote the document memo
	// (fileio.ExecutableID); the memo is used only by the same one.
	Binary string `json:"binary,omitempty"`
	fileio.BodyCheck
}

// lexPath is the lexical cache beside the index cache file at indexPath.
func lexPath(indexPath string) string {
	return strings.TrimSuffix(indexPath, ".gob") + ".lex"
}

// The body, little-endian throughout:
//
//	terms  uint32, then per term: len uint32, bytes, documents uint32
//	docs   uint32, then per document:
//	  key [16]byte, length float32,
//	  n uint32, n × (term uint32, tf float32)     distinct terms
//	  m uint32, m × uint32 (term<<4 | field mask) short-field terms
//	tools  uint32, then per tool (the document memo):
//	  name, tool hash, document hash (each len uint32, bytes), lexKey [16]byte
//
// where term is an index into the file's terms.

// lexCache is a read lexical cache file.
type lexCache struct {
	body  []byte
	vocab [][]byte       // by term index: the term (in body)
	df    []int32        // by term index: how many of the file's documents hold it
	at    map[lexKey]int // an entry's offset in body, after its key
	memo  *docMemo       // nil unless this program wrote it
}

// readLexCache reads and checks the lexical cache file at path
// (fileio.ReadFramed: fileio.ErrNoFile when there is none); its document memo is read
// when it was written by program (fileio.ExecutableID).
func readLexCache(path, program string) (*lexCache, error) {
	var h lexHeader
	body, err := fileio.ReadFramed(path, lexMagic, &h, maxCacheSize)
	if err != nil {
		return nil, err
	}
	if h.Format != lexFormat() {
		return nil, fmt.Errorf("entries of %q, this index makes %q", h.Format, lexFormat())
	}
	return parseLex(body, program != "" && h.Binary == program)
}

// parseLex indexes a body: the terms, where each entry starts and, with
// memo, the document memo.
func parseLex(body []byte, memo bool) (*lexCache, error) {
	bad := errors.New("truncated or corrupt lexical cache")
	r := lexBytes{b: body}
	nt, ok := r.count(4)
	if !ok {
		return nil, bad
	}
	c := &lexCache{body: body, vocab: make([][]byte, nt), df: make([]int32, nt)}
	for i := range c.vocab {
		n, ok := r.count(1)
		if !ok || len(body)-r.off < n+4 {
			return nil, bad
		}
		c.vocab[i] = r.next(n)
		df := r.u32()
		if df > uint32(len(body)) {
			return nil, bad
		}
		c.df[i] = int32(df)
	}
	nd, ok := r.count(16 + 4 + 4 + 4)
	if !ok {
		return nil, bad
	}
	c.at = make(map[lexKey]int, nd)
	for range nd {
		var k lexKey
		copy(k[:], r.next(len(k)))
		off := r.off
		r.next(4) // length
		n, ok := r.count(8)
		if !ok {
			return nil, bad
		}
		r.next(8 * n)
		m, ok := r.count(4)
		if !ok {
			return nil, bad
		}
		r.next(4 * m)
		c.at[k] = off
	}
	nm, ok := r.count(3*4 + len(lexKey{}))
	if !ok {
		return nil, bad
	}
	// The memo's strings are cut from one copy of its part of the file
	// (none when the memo is not used).
	var sec string
	base := r.off
	if memo {
		sec = string(body[r.off:])
		c.memo = &docMemo{m: make(map[memoKey]memoEntry, nm)}
	}
	str := func() (string, bool) {
		n, ok := r.count(1)
		if !ok {
			return "", false
		}
		at := r.off - base
		r.next(n)
		if !memo {
			return "", true
		}
		return sec[at : at+n], true
	}
	for range nm {
		name, ok1 := str()
		tool, ok2 := str()
		hash, ok3 := str()
		if !ok1 || !ok2 || !ok3 || len(body)-r.off < len(lexKey{}) {
			return nil, bad
		}
		var k lexKey
		copy(k[:], r.next(len(k)))
		if memo {
			c.memo.m[memoKey{name, tool}] = memoEntry{hash, k}
		}
	}
	if r.off != len(body) {
		return nil, bad
	}
	return c, nil
}

// lexBytes reads a body.
type lexBytes struct {
	b   []byte
	off int
}

// count reads a uint32 count of items of at least size bytes each; ok is
// false when they cannot fit in what is left.
func (r *lexBytes) count(size int) (int, bool) {
	if len(r.b)-r.off < 4 {
		return 0, false
	}
	n := int(binary.LittleEndian.Uint32(r.b[r.off:]))
	r.off += 4
	if n > (len(r.b)-r.off)/size {
		return 0, false
	}
	return n, true
}

// next returns the next n bytes (the caller checked they are there).
func (r *lexBytes) next(n int) []byte {
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *lexBytes) u32() uint32 {
	x := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return x
}

// lexApply puts a lexCache's entries into one lexicon.
type lexApply struct {
	c     *lexCache
	remap []int32 // by term index: the lexicon's term id + 1 (0: not yet looked up)
	// arena holds the posting lists of the terms new to the lexicon, each
	// with room for the documents the file says hold it (one allocation
	// of chunk postings instead of growing thousands of lists; none when
	// chunk is 0).
	arena []posting
	chunk int
}

func (c *lexCache) applier() *lexApply {
	if c == nil {
		return nil
	}
	return &lexApply{c: c, remap: make([]int32, len(c.vocab)), chunk: 1 << 14}
}

// has says whether there is an entry for key.
func (a *lexApply) has(key lexKey) bool {
	if a == nil {
		return false
	}
	_, ok := a.c.at[key]
	return ok
}

// add indexes the entry of key in slot of l, as addTokens would, and leaves
// the short-field terms in l.short. It returns false, changing no document
// of l, when there is no entry (or no cache: a is nil) or it does not
// decode.
func (a *lexApply) add(l *lexicon, slot int, key lexKey) bool {
	if a == nil {
		return false
	}
	off, ok := a.c.at[key]
	if !ok {
		return false
	}
	r := lexBytes{b: a.c.body, off: off}
	length := math.Float32frombits(r.u32())
	n := int(r.u32())
	cur := l.cur[:0]
	ok = true
	for range n {
		id := a.id(l, r.u32())
		tf := math.Float32frombits(r.u32())
		if id < 0 || l.pos[id] != 0 || !(tf > 0) { // unknown, stopword, repeated
			ok = false
			break
		}
		l.pos[id] = 1
		cur = append(cur, termTF{id, tf})
	}
	for _, c := range cur {
		l.pos[c.id] = 0
	}
	l.cur = cur
	if !ok || !(length > 0) {
		return false
	}
	m := int(r.u32())
	l.short = l.short[:0]
	for range m {
		x := r.u32()
		id := a.id(l, x>>4)
		if id < 0 || x&0xf == 0 {
			return false
		}
		l.short = append(l.short, uint32(id)<<4|x&0xf)
	}
	l.place(slot, length)
	return true
}

// id is the lexicon's id of the file's term i, -1 if there is none.
func (a *lexApply) id(l *lexicon, i uint32) int32 {
	if int(i) < len(a.remap) {
		if x := a.remap[i]; x != 0 {
			return x - 1
		}
	}
	return a.lookUp(l, i)
}

// lookUp is id for a term not seen yet: it is interned and, if new to
// the lexicon, given its room in the arena.
func (a *lexApply) lookUp(l *lexicon, i uint32) int32 {
	if int(i) >= len(a.remap) {
		return -1
	}
	id := l.termIDBytes(a.c.vocab[i])
	if id < 0 {
		return -1
	}
	if df := int(a.c.df[i]); l.postings[id] == nil && df > 0 && a.chunk > 0 {
		if len(a.arena) < df {
			a.arena = make([]posting, max(df, a.chunk))
		}
		l.postings[id], a.arena = a.arena[:0:df], a.arena[df:]
	}
	a.remap[i] = id + 1
	return id
}

// agrees tokenizes d and says whether that gives the document the entry
// the file holds for it (see the file comment).
func (a *lexApply) agrees(d *document) bool {
	d.need()
	fresh, cached := newLexicon(), newLexicon()
	fresh.add(0, d.fields)
	var fs, cs shortTerms
	fs.set(0, fresh)
	one := &lexApply{c: a.c, remap: make([]int32, len(a.c.vocab))} // no arena for one document
	if !one.add(cached, 0, d.lexKey) {
		return false
	}
	cs.set(0, cached)
	return fresh.docLen[0] == cached.docLen[0] &&
		slices.Equal(fresh.docTerms[0], cached.docTerms[0]) &&
		slices.Equal(fresh.terms, cached.terms) &&
		slices.EqualFunc(fresh.postings, cached.postings, func(x, y []posting) bool { return slices.Equal(x, y) }) &&
		slices.Equal(fs.bySlot[0], cs.bySlot[0])
}

// lexPlan is the vocabulary of a lexical cache file (its first section)
// and the counts its header gives, found by going over v's documents once
// before its entries are written (write), so that the body is never held
// whole (at 100,000 tools, 49 MB grown by appending).
type lexPlan struct {
	v           *view
	vocab       []int32 // term id → index in the file + 1
	names       []int32 // by index in the file: the term id
	df          []int32 // by index in the file: its documents
	docs, tools int
}

// live says that slot s has a lexical entry to write.
func (p *lexPlan) live(s int) bool {
	l := p.v.lex
	return p.v.slots[s].live && s < len(l.docLen) && l.docLen[s] != 0
}

// planLex finds the vocabulary of v's live documents, in the order their
// entries name their terms.
func planLex(v *view) *lexPlan {
	l := v.lex
	p := &lexPlan{v: v, vocab: make([]int32, len(l.terms))}
	index := func(id int32) int32 {
		if p.vocab[id] == 0 {
			p.names = append(p.names, id)
			p.df = append(p.df, 0)
			p.vocab[id] = int32(len(p.names))
		}
		return p.vocab[id] - 1
	}
	for s := range v.slots {
		if v.slots[s].live && v.slots[s].tool != "" {
			p.tools++
		}
		if !p.live(s) {
			continue
		}
		p.docs++
		for _, id := range l.docTerms[s] {
			p.df[index(id)]++
		}
		for _, x := range v.short.row(s) {
			index(int32(x >> 4))
		}
	}
	return p
}

// write writes the body: the vocabulary, the entries of the live
// documents and the document memo.
func (p *lexPlan) write(out io.Writer) (err error) {
	v, l, le := p.v, p.v.lex, binary.LittleEndian
	var b []byte
	flush := func(force bool) {
		if err == nil && (force || len(b) >= 64<<10) {
			_, err = out.Write(b)
			b = b[:0]
		}
	}
	b = le.AppendUint32(b, uint32(len(p.names)))
	for x, id := range p.names {
		b = le.AppendUint32(b, uint32(len(l.terms[id])))
		b = append(b, l.terms[id]...)
		b = le.AppendUint32(b, uint32(p.df[x]))
		flush(false)
	}
	b = le.AppendUint32(b, uint32(p.docs))
	for s := range v.slots {
		if !p.live(s) {
			continue
		}
		b = append(b, v.slots[s].lex[:]...)
		b = le.AppendUint32(b, math.Float32bits(l.docLen[s]))
		b = le.AppendUint32(b, uint32(len(l.docTerms[s])))
		for i, id := range l.docTerms[s] {
			b = le.AppendUint32(b, uint32(p.vocab[id]-1))
			b = le.AppendUint32(b, math.Float32bits(l.postings[id][l.docPos[s][i]].tf))
		}
		short := v.short.row(s)
		b = le.AppendUint32(b, uint32(len(short)))
		for _, x := range short {
			b = le.AppendUint32(b, uint32(p.vocab[int32(x>>4)]-1)<<4|x&0xf)
		}
		flush(false)
	}
	str := func(x string) {
		b = le.AppendUint32(b, uint32(len(x)))
		b = append(b, x...)
	}
	b = le.AppendUint32(b, uint32(p.tools))
	for s := range v.slots {
		sl := &v.slots[s]
		if !sl.live || sl.tool == "" {
			continue
		}
		str(sl.name)
		str(sl.tool)
		str(sl.hash)
		b = append(b, sl.lex[:]...)
		flush(false)
	}
	flush(true)
	return err
}

// writeLexCache writes v's entries and document memo to path atomically
// (fileio.WriteFramed); program is fileio.ExecutableID.
func writeLexCache(path string, v *view, program string) error {
	p := planLex(v)
	h := lexHeader{Format: lexFormat(), Terms: len(p.names), Docs: p.docs, Binary: program}
	if err := fileio.WriteFramed(path, 0o600, lexMagic, &h, p.write); err != nil {
		return fmt.Errorf("writing the lexical cache: %w", err)
	}
	return nil
}
