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
	"path/filepath"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The usage requests' vectors are cached, one file per usage embedder:
// records of the text's SHA-256 (16 bytes), the vector's scale (float32)
// and its dim int8 components. A missing, foreign or damaged file (a
// scale no unit vector has among them) is an empty cache: it only saves
// embedding. The vectors are derived from the users' requests, so they
// live and go with the history: beside the saved view, in the usage
// store's private place, which the store clears when it forgets (without
// one, in the directory of the index's cache file); a whole build keeps
// only the vectors of the history's requests (a request forgotten,
// expired or evicted leaves none behind), and an empty history removes
// the file.

const usageVecMagic = "toolsrv-usage-vectors 1\n"

// usageVecPath is the cache file of embedder id ("": no cache): beside
// the saved view (Options.UsageViewPath), else in the directory of the
// index's cache file (made private when the index opened it); without
// either, nothing is cached.
func (ix *Index) usageVecPath(id string) string {
	if ix.opts.UsageViewPath != "" {
		return ix.opts.UsageViewPath + "." + safeName(id) + ".vec"
	}
	return ix.cacheDirUsageVecPath(id)
}

// cacheDirUsageVecPath is the cache file of embedder id in the index's
// cache directory ("": none).
func (ix *Index) cacheDirUsageVecPath(id string) string {
	p := ix.cachePath.Load()
	if ix.opts.NoCache || p == nil {
		return ""
	}
	return filepath.Join(filepath.Dir(*p), "usage-"+safeName(id)+".vec")
}

// removeUsageVectors removes the cache of the usage embedder's vectors
// (the history is empty), in memory and on disk.
func (ix *Index) removeUsageVectors() {
	e := ix.opts.UsageEmbedder
	if e == nil {
		return
	}
	c := &ix.usage.vecs
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vecs = nil
	if ix.opts.ReadOnlyCache {
		return
	}
	for _, p := range []string{ix.usageVecPath(e.ID()), ix.cacheDirUsageVecPath(e.ID())} {
		if p == "" {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ix.log.Debug("usage vectors not removed", "err", err)
		}
	}
}

// keepOnly drops the rows not used (a whole history's requests took the
// others) and reports whether it dropped any.
func (v *usageVecs) keepOnly(used []bool) bool {
	n := 0
	for _, u := range used {
		if u {
			n++
		}
	}
	if n == len(used) {
		return false
	}
	kept := &usageVecs{dim: v.dim, row: make(map[[16]byte]int32, n),
		q: make([]int8, 0, (n+usageDeltaRoom)*v.dim), scale: make([]float32, 0, n)}
	for k, r := range v.row {
		if used[r] {
			kept.row[k] = int32(len(kept.scale))
			kept.scale = append(kept.scale, v.scale[r])
			kept.q = append(kept.q, v.q[int(r)*v.dim:(int(r)+1)*v.dim]...)
		}
	}
	*v = *kept
	return true
}

// usageKey is the first 16 bytes of text's SHA-256: a request's key in
// the vector cache, an entry's ID digest in the saved view.
func usageKey(text string) [16]byte {
	s := sha256.Sum256([]byte(text))
	return [16]byte(s[:16])
}

// loadUsageVectors reads the cache of embedder id (vectors of dim
// components; a file of another dim is no cache). The rows are the
// file's, as they are: no component is converted.
func (ix *Index) loadUsageVectors(id string, dim int) *usageVecs {
	v := &usageVecs{dim: dim, row: map[[16]byte]int32{}}
	path := ix.usageVecPath(id)
	if path == "" || dim <= 0 {
		return v
	}
	if old := ix.cacheDirUsageVecPath(id); old != path && old != "" && !ix.opts.ReadOnlyCache {
		// Where an earlier toolsrv kept them, outside the store's reach.
		os.Remove(old)
	}
	b, err := fileio.ReadRegular(path, 1<<30)
	if err != nil || !bytes.HasPrefix(b, []byte(usageVecMagic)) {
		return v
	}
	b = b[len(usageVecMagic):]
	if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) != dim {
		return v
	}
	b = b[4:]
	rec := 16 + 4 + dim
	if len(b)%rec != 0 {
		return v
	}
	n := len(b) / rec
	v.row = make(map[[16]byte]int32, n)
	v.q = make([]int8, n*dim, (n+usageDeltaRoom)*dim) // room for a few new ones
	v.scale = make([]float32, n)
	for i := 0; i < n; i, b = i+1, b[rec:] {
		v.row[[16]byte(b[:16])] = int32(i)
		v.scale[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[16:]))
		if !rowScaleOK(v.scale[i]) { // damaged
			return &usageVecs{dim: dim, row: map[[16]byte]int32{}}
		}
		copy(int8Bytes(v.q[i*dim:(i+1)*dim]), b[20:rec])
	}
	return v
}

// saveUsageVectors writes v as the cache of embedder id.
func (ix *Index) saveUsageVectors(id string, v *usageVecs) {
	path := ix.usageVecPath(id)
	if path == "" || ix.opts.ReadOnlyCache || len(v.row) == 0 {
		return
	}
	dim := v.dim
	var buf bytes.Buffer
	buf.Grow(len(usageVecMagic) + 4 + len(v.row)*(16+4+dim))
	buf.WriteString(usageVecMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(dim))
	rec := make([]byte, 16+4+dim)
	for k, r := range v.row {
		copy(rec, k[:])
		binary.LittleEndian.PutUint32(rec[16:], math.Float32bits(v.scale[r]))
		copy(rec[20:], int8Bytes(v.q[int(r)*dim:(int(r)+1)*dim]))
		buf.Write(rec)
	}
	if err := fileio.WriteAtomic(path, 0o600, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		ix.log.Debug("usage vectors not cached", "err", err)
	}
}
