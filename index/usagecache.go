package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math"
	"path/filepath"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The usage requests' vectors are cached beside the index's files, one
// file per usage embedder: records of the text's SHA-256 (16 bytes), the
// vector's scale (float32) and its dim int8 components. A missing,
// foreign or damaged file is an empty cache: it only saves embedding.

const usageVecMagic = "toolsrv-usage-vectors 1\n"

// usageVecPath is the cache file of embedder id ("": no cache).
// It lives in the directory of the index's cache file (made private when
// the index opened it); without one, nothing is cached.
func (ix *Index) usageVecPath(id string) string {
	p := ix.cachePath.Load()
	if ix.opts.NoCache || p == nil {
		return ""
	}
	return filepath.Join(filepath.Dir(*p), "usage-"+safeName(id)+".vec")
}

func usageKey(text string) [16]byte {
	s := sha256.Sum256([]byte(text))
	var k [16]byte
	copy(k[:], s[:16])
	return k
}

// usageRow is a request's vector as the usage signal keeps it: dim int8
// components and their scale (the vector ≈ q·scale; scale 0: no vector).
type usageRow struct {
	q     []int8
	scale float32
}

// loadUsageVectors reads the cache of embedder id into a map by text key.
// The rows are the file's, as they are: no component is converted.
func (ix *Index) loadUsageVectors(id string) map[string]usageRow {
	m := map[string]usageRow{}
	path := ix.usageVecPath(id)
	if path == "" {
		return m
	}
	b, err := fileio.ReadRegular(path, 1<<30)
	if err != nil || !bytes.HasPrefix(b, []byte(usageVecMagic)) {
		return m
	}
	b = b[len(usageVecMagic):]
	if len(b) < 4 {
		return m
	}
	dim := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	rec := 16 + 4 + dim
	if dim <= 0 || dim > 1<<16 || len(b)%rec != 0 {
		return m
	}
	all := make([]int8, len(b)/rec*dim) // one allocation for every row
	for ; len(b) > 0; b = b[rec:] {
		row := all[:dim:dim]
		all = all[dim:]
		copy(int8Bytes(row), b[20:rec])
		m[string(b[:16])] = usageRow{row, math.Float32frombits(binary.LittleEndian.Uint32(b[16:]))}
	}
	return m
}

// saveUsageVectors writes m (by text key) as the cache of embedder id.
func (ix *Index) saveUsageVectors(id string, m map[string]usageRow, dim int) {
	path := ix.usageVecPath(id)
	if path == "" || ix.opts.ReadOnlyCache || len(m) == 0 {
		return
	}
	var buf bytes.Buffer
	buf.Grow(len(usageVecMagic) + 4 + len(m)*(16+4+dim))
	buf.WriteString(usageVecMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(dim))
	rec := make([]byte, 16+4+dim)
	for k, r := range m {
		if len(r.q) != dim || len(k) != 16 {
			continue
		}
		copy(rec, k)
		binary.LittleEndian.PutUint32(rec[16:], math.Float32bits(r.scale))
		for i, x := range r.q {
			rec[20+i] = byte(x)
		}
		buf.Write(rec)
	}
	if err := fileio.WriteAtomic(path, 0o600, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		ix.log.Debug("usage vectors not cached", "err", err)
	}
}
