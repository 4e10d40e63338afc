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

// loadUsageVectors reads the cache of embedder id into a map by text key.
func (ix *Index) loadUsageVectors(id string) map[string][]float32 {
	m := map[string][]float32{}
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
	for ; len(b) > 0; b = b[rec:] {
		scale := math.Float32frombits(binary.LittleEndian.Uint32(b[16:]))
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(int8(b[20+i])) * scale
		}
		m[string(b[:16])] = v
	}
	return m
}

// saveUsageVectors writes m (by text key) as the cache of embedder id.
func (ix *Index) saveUsageVectors(id string, m map[string][]float32) {
	path := ix.usageVecPath(id)
	if path == "" || ix.opts.ReadOnlyCache || len(m) == 0 {
		return
	}
	var dim int
	for _, v := range m {
		dim = len(v)
		break
	}
	var buf bytes.Buffer
	buf.WriteString(usageVecMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(dim))
	rec := make([]byte, 16+4+dim)
	for k, v := range m {
		if len(v) != dim || len(k) != 16 {
			continue
		}
		copy(rec, k)
		var mx float32
		for _, x := range v {
			mx = max(mx, float32(math.Abs(float64(x))))
		}
		scale := mx / 127
		binary.LittleEndian.PutUint32(rec[16:], math.Float32bits(scale))
		for i, x := range v {
			q := 0.0
			if scale > 0 {
				q = math.Round(float64(x / scale))
			}
			rec[20+i] = byte(int8(q))
		}
		buf.Write(rec)
	}
	if err := fileio.WriteAtomic(path, 0o600, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		ix.log.Debug("usage vectors not cached", "err", err)
	}
}
