package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The built usage view is saved between runs (Options.UsageViewPath), so
// that a process that ranks once (toolsrv rank) need not read every entry
// of the history, build the view and choose its weight again: at 50,000
// entries that is most of what the history adds to its start. The file
// holds the view as it is ranked with and the weight chosen, with what it
// was made from: a base digest (the history's source as the store names
// it, usage.Derived; the catalog and its embedder, the last step, the
// options that change a ranking, the program) and the history's version.
// Same base and version: the view is taken as it is; same base, older
// version: it is brought up to date (usagedelta.go); otherwise, or from a
// damaged or foreign file, it is built again (and saved). The file is in
// the usage store's own private place, which the store removes when it
// forgets and when it starts a new file.
//
// Layout (little-endian): usageViewMagic, the base (32 bytes), the version
// (int64); uint32 fullN, drift, n, agents, dim, tools; the tool names and
// the agent names (each uint32 length, bytes); n tool ids, n agent ids
// (int32); n entry ID digests (16 bytes each); n trusts (float32, each
// in (0, 1]); when dim > 0, n scales (float32) and n×dim components
// (int8); n+1 word offsets (int32), the
// words' term ids (int32) and weights (float32); uint32 terms, their
// strings and IDFs (float64); the weight and the fit (uint32 entries,
// sample, then float64 weight, recall, base).

const usageViewMagic = "toolsrv-usage-view 4\n"

// usageViewEvery is the least time between two saves of the view by one
// index (a server reloading a busy history would otherwise write the
// whole view every few seconds); the first is saved at once.
const usageViewEvery = time.Minute

// usageViewBase is the digest of all a view of the history source names
// is made from but the history's version: the catalog, the last step,
// the options, the usage embedder and the program. A saved view of the
// same base and an older version can be brought up to date (a delta,
// usagedelta.go).
func (ix *Index) usageViewBase(source string) [32]byte {
	h := sha256.New()
	put := func(s string) {
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s))))
		h.Write([]byte(s))
	}
	put(usageViewMagic)
	put(source)
	put(fileio.ExecutableID())
	ix.mu.RLock()
	if ix.v != nil {
		put(strconv.FormatUint(ix.v.catalogDigest(), 16))
	}
	ix.mu.RUnlock()
	put(ix.LearnedID())
	put(strconv.FormatFloat(ix.opts.LexicalWeight, 'g', -1, 64))
	put(strconv.FormatFloat(ix.opts.ContextWeight, 'g', -1, 64))
	if e := ix.opts.UsageEmbedder; e != nil {
		put(e.ID())
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// viewHeader is what a saved view is of.
type viewHeader struct {
	base    [32]byte
	version int64
}

// viewHeaderSize is the bytes of the header after the magic.
const viewHeaderSize = 32 + 8

// readViewHeader parses the header at the start of b.
func readViewHeader(b []byte) (viewHeader, bool) {
	if !bytes.HasPrefix(b, []byte(usageViewMagic)) || len(b) < len(usageViewMagic)+viewHeaderSize {
		return viewHeader{}, false
	}
	b = b[len(usageViewMagic):]
	return viewHeader{base: [32]byte(b), version: int64(binary.LittleEndian.Uint64(b[32:]))}, true
}

// loadUsageView returns the saved view if it is of base, and its version
// (nil: none). A view of another base is not decoded.
func (ix *Index) loadUsageView(base [32]byte) (*usageView, int64) {
	path := ix.opts.UsageViewPath
	if path == "" {
		return nil, 0
	}
	b, err := fileio.ReadRegular(path, 1<<31)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			ix.log.Debug("saved usage view not read", "err", err)
		}
		return nil, 0
	}
	if h, ok := readViewHeader(b); !ok || h.base != base {
		return nil, 0
	}
	u, h, err := decodeView(b)
	if err != nil {
		ix.log.Debug("saved usage view not used", "err", err)
		return nil, 0
	}
	return u, h.version
}

// saveUsageView saves u, at most once per usageViewEvery. Otherwise (and
// for nil: no history) it removes the saved view, which no longer matches
// the history: nothing stale of a history (entries since forgotten among
// them) outlives a reload.
// gen is the save's usageSaveGen: a save that a newer SetUsage's
// follows does nothing.
func (ix *Index) saveUsageView(gen uint64, h viewHeader, u *usageView) {
	path := ix.opts.UsageViewPath
	if path == "" {
		return
	}
	ix.usage.saved.Lock()
	defer ix.usage.saved.Unlock()
	if gen != ix.usage.saved.gen {
		return
	}
	if u == nil || !ix.usage.saved.at.IsZero() && time.Since(ix.usage.saved.at) < usageViewEvery {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ix.log.Debug("saved usage view not removed", "err", err)
		}
		return
	}
	ix.usage.saved.at = time.Now()
	err := fileio.WriteAtomic(path, 0o600, func(w io.Writer) error { return encodeUsageView(w, h, u) })
	if err != nil {
		ix.log.Debug("usage view not saved", "err", err)
	}
}

// usageSaveGen numbers a SetUsage's save.
func (ix *Index) usageSaveGen() uint64 {
	ix.usage.saved.Lock()
	defer ix.usage.saved.Unlock()
	ix.usage.saved.gen++
	return ix.usage.saved.gen
}

// WaitSaves waits until the files the index writes in the background
// (the usage view) are written: call it before the process ends.
func (ix *Index) WaitSaves() { ix.usage.saved.wg.Wait() }

// encodeUsageView writes u in the layout above.
func encodeUsageView(w io.Writer, h viewHeader, u *usageView) error {
	terms := make([]string, len(u.idf))
	for t, id := range u.dict {
		terms[id] = t
	}
	b := make([]byte, 0, u.savedSize()) // one allocation: no copy of megabytes as it grows
	b = append(b, usageViewMagic...)
	b = append(b, h.base[:]...)
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(h.version))
	b = le.AppendUint32(b, uint32(u.fullN))
	b = le.AppendUint32(b, uint32(u.drift))
	b = le.AppendUint32(b, uint32(u.n))
	b = le.AppendUint32(b, uint32(u.agents))
	b = le.AppendUint32(b, uint32(u.dim))
	b = le.AppendUint32(b, uint32(len(u.tools)))
	for _, t := range u.tools {
		b = le.AppendUint32(b, uint32(len(t)))
		b = append(b, t...)
	}
	for _, a := range u.agentNames {
		b = le.AppendUint32(b, uint32(len(a)))
		b = append(b, a...)
	}
	for _, x := range u.toolID {
		b = le.AppendUint32(b, uint32(x))
	}
	for _, x := range u.agent {
		b = le.AppendUint32(b, uint32(x))
	}
	for _, id := range u.ids {
		b = append(b, id[:]...)
	}
	for _, x := range u.trust {
		b = le.AppendUint32(b, math.Float32bits(x))
	}
	if u.dim > 0 {
		for _, x := range u.qscale {
			b = le.AppendUint32(b, math.Float32bits(x))
		}
		b = append(b, int8Bytes(u.qvecs)...)
	}
	for _, x := range u.wordsAt {
		b = le.AppendUint32(b, uint32(x))
	}
	for _, tw := range u.words {
		b = le.AppendUint32(b, uint32(tw.id))
	}
	for _, tw := range u.words {
		b = le.AppendUint32(b, math.Float32bits(tw.w))
	}
	b = le.AppendUint32(b, uint32(len(terms)))
	for _, t := range terms {
		b = le.AppendUint32(b, uint32(len(t)))
		b = append(b, t...)
	}
	for _, x := range u.idf {
		b = le.AppendUint64(b, math.Float64bits(x))
	}
	b = le.AppendUint64(b, math.Float64bits(u.w))
	b = le.AppendUint32(b, uint32(u.loo.Entries))
	b = le.AppendUint32(b, uint32(u.loo.Sample))
	for _, x := range []float64{u.loo.Weight, u.loo.Recall, u.loo.Base} {
		b = le.AppendUint64(b, math.Float64bits(x))
	}
	_, err := w.Write(b)
	return err
}

// savedSize is the size of u's saved view (encodeUsageView).
func (u *usageView) savedSize() int {
	size := len(usageViewMagic) + viewHeaderSize + 4*2 + 4*4 + 16*len(u.ids) + 4*len(u.trust) + len(u.qvecs) + 4*len(u.qscale) + 4*(2*u.n+len(u.wordsAt)) +
		8*len(u.words) + 4 + 12*len(u.idf) + 8 + 8 + 3*8
	for t := range u.dict {
		size += len(t)
	}
	for _, t := range u.tools {
		size += 4 + len(t)
	}
	for _, a := range u.agentNames {
		size += 4 + len(a)
	}
	return size
}

// int8Bytes is q's memory as bytes (the same bits).
func int8Bytes(q []int8) []byte {
	if len(q) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q))
}

// errUsageView is a saved view that does not match or does not parse.
var errUsageView = errors.New("saved usage view: not this history's, or damaged")

// viewReader reads the layout, failing once for good.
type viewReader struct {
	b   []byte
	bad bool
}

func (r *viewReader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *viewReader) u32() int {
	if p := r.take(4); p != nil {
		return int(binary.LittleEndian.Uint32(p))
	}
	return 0
}

func (r *viewReader) f64() float64 {
	if p := r.take(8); p != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
	return 0
}

// ids reads n int32s, each below limit.
func (r *viewReader) ids(n, limit int) []int32 {
	p := r.take(4 * n)
	if p == nil {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		x := binary.LittleEndian.Uint32(p[4*i:])
		if int64(x) >= int64(limit) {
			r.bad = true
			return nil
		}
		out[i] = int32(x)
	}
	return out
}

func (r *viewReader) f32s(n int) []float32 {
	p := r.take(4 * n)
	if p == nil {
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	return out
}

func (r *viewReader) strs(n int) []string {
	if n > len(r.b)/4 {
		r.bad = true
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = string(r.take(r.u32()))
	}
	return out
}

// decodeView parses b into a view ready to rank with (its postings and
// tool lists rebuilt) and what it is of. It never trusts b: every count
// and id is checked against what it indexes.
func decodeView(b []byte) (*usageView, viewHeader, error) {
	h, ok := readViewHeader(b)
	if !ok {
		return nil, h, errUsageView
	}
	r := &viewReader{b: b[len(usageViewMagic)+viewHeaderSize:]}
	fullN, drift := r.u32(), r.u32()
	u := &usageView{n: r.u32(), agents: r.u32(), dim: r.u32(), fullN: fullN, drift: drift}
	const most = 1 << 26
	if u.n <= 0 || u.n > most || u.agents > u.n || u.dim > 1<<16 {
		return nil, h, errUsageView
	}
	u.tools = r.strs(r.u32())
	u.agentNames = r.strs(u.agents)
	u.toolID = r.ids(u.n, len(u.tools))
	u.agent = r.ids(u.n, u.agents)
	if p := r.take(16 * u.n); p != nil {
		u.ids = make([][16]byte, u.n)
		for i := range u.ids {
			u.ids[i] = [16]byte(p[16*i:])
		}
	}
	u.trust = r.f32s(u.n)
	for _, x := range u.trust {
		if !(x > 0 && x <= 1) {
			return nil, h, errUsageView
		}
	}
	if u.dim > 0 {
		u.qscale = r.f32s(u.n)
		for _, x := range u.qscale {
			if !rowScaleOK(x) {
				return nil, h, errUsageView
			}
		}
		if p := r.take(u.n * u.dim); p != nil {
			// (room for the rows a delta adds: usagedelta.go)
			u.qvecs = make([]int8, len(p), len(p)+usageDeltaRoom*u.dim)
			copy(int8Bytes(u.qvecs), p)
		}
	}
	u.wordsAt = r.ids(u.n+1, most)
	if r.bad {
		return nil, h, errUsageView
	}
	nw := int(u.wordsAt[u.n])
	wid := r.ids(nw, most)
	ww := r.f32s(nw)
	terms := r.strs(r.u32())
	if r.bad {
		return nil, h, errUsageView
	}
	idf := r.take(8 * len(terms))
	u.w = r.f64()
	u.loo.Entries, u.loo.Sample = r.u32(), r.u32()
	u.loo.Weight, u.loo.Recall, u.loo.Base = r.f64(), r.f64(), r.f64()
	if r.bad || len(r.b) != 0 || u.wordsAt[0] != 0 {
		return nil, h, errUsageView
	}
	// Every number a ranking computes with is finite and in its range (a
	// NaN would reach the scores, and JSON cannot say it).
	if !(u.w >= 0 && u.w <= usageGrid[len(usageGrid)-1]) {
		return nil, h, errUsageView
	}
	for _, x := range []float64{u.loo.Weight, u.loo.Recall, u.loo.Base} {
		if !(x >= 0 && x <= math.MaxFloat64) {
			return nil, h, errUsageView
		}
	}
	for i := 1; i <= u.n; i++ {
		if u.wordsAt[i] < u.wordsAt[i-1] {
			return nil, h, errUsageView
		}
	}
	u.idf = make([]float64, len(terms))
	u.dict = make(map[string]int32, len(terms))
	for i, t := range terms {
		u.idf[i] = math.Float64frombits(binary.LittleEndian.Uint64(idf[8*i:]))
		if !(u.idf[i] >= 0 && u.idf[i] <= math.MaxFloat64) {
			return nil, h, errUsageView
		}
		u.dict[t] = int32(i)
	}
	if len(u.dict) != len(terms) { // a term twice
		return nil, h, errUsageView
	}
	u.words = make([]termWeight, nw)
	for i := range u.words {
		// A row's words are unit-norm weights, in increasing term order.
		if int(wid[i]) >= len(terms) || !(ww[i] >= 0 && ww[i] <= 1) {
			return nil, h, errUsageView
		}
		u.words[i] = termWeight{wid[i], ww[i]}
	}
	for i := 0; i < u.n; i++ {
		row := u.row(int32(i))
		for k := 1; k < len(row); k++ {
			if row[k].id <= row[k-1].id {
				return nil, h, errUsageView
			}
		}
	}
	u.reindex()
	return u, h, nil
}

// reindex rebuilds u's postings (from its words) and its entries by tool.
func (u *usageView) reindex() {
	df := make([]int32, len(u.idf))
	for _, tw := range u.words {
		df[tw.id]++
	}
	u.post = make([][]termWeight, len(u.idf))
	for id, n := range df {
		u.post[id] = make([]termWeight, 0, n)
	}
	for i := 0; i < u.n; i++ {
		for _, tw := range u.row(int32(i)) {
			u.post[tw.id] = append(u.post[tw.id], termWeight{int32(i), tw.w})
		}
	}
	u.byTool = make(map[string][]int32, len(u.tools))
	for i, t := range u.toolID {
		u.byTool[u.tools[t]] = append(u.byTool[u.tools[t]], int32(i))
	}
}
