package builtin

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync/atomic"
)

// tableMagic starts every table file; the digit is the format version.
const tableMagic = "TSEMB001"

// Table is the trained model: a vocabulary of terms (as produced by text.Table),
// one vector per term, optional hashed character n-gram vectors for terms the
// vocabulary lacks, and a prior IDF per term (from the training corpus) used
// when no catalog has been fitted.
//
// On disk each vector is int8 with a per-row float32 scale (absmax/127).
type Table struct {
	Dim     int
	Vocab   []string  // sorted, unique
	Prior   []float32 // len(Vocab): prior IDF weight per term
	Buckets int       // number of char n-gram buckets (0: none)
	MinN    int       // n-gram lengths, counted in bytes of "<term>"
	MaxN    int
	// Vectors holds (len(Vocab)+Buckets) rows of Dim values: vocabulary
	// rows first, then bucket rows. It is nil in a table read in place
	// (ViewTable), whose rows stay quantized.
	Vectors []float32
	// quant holds, in a table read in place, each row as on disk: its
	// float32 scale (little endian) and Dim int8 values; dequant holds the
	// rows dequantized so far (filled on first use, by any goroutine).
	quant   []byte
	dequant []atomic.Pointer[[]float32]
}

// Rows is the number of vectors in the table.
func (t *Table) Rows() int { return len(t.Vocab) + t.Buckets }

// Row returns row i, read only: the table's own slice or, in a table read
// in place, the row dequantized the first time it is read and kept (the
// values ReadTable computes).
func (t *Table) Row(i int) []float32 {
	if t.quant == nil {
		return t.Vectors[i*t.Dim : (i+1)*t.Dim]
	}
	if r := t.dequant[i].Load(); r != nil {
		return *r
	}
	row := t.dequantize(i, make([]float32, t.Dim))
	t.dequant[i].Store(&row) // a concurrent reader may store the same values
	return row
}

// dequantize writes quantized row i into dst (Dim values) and returns it.
func (t *Table) dequantize(i int, dst []float32) []float32 {
	b := t.quantRow(i)
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for j, q := range b[4:] {
		dst[j] = float32(int8(q)) * scale
	}
	return dst
}

// addRow adds row i to dst, value by value.
func (t *Table) addRow(i int, dst []float32) {
	for j, x := range t.Row(i) {
		dst[j] += x
	}
}

func (t *Table) quantRow(i int) []byte {
	stride := 4 + t.Dim
	return t.quant[i*stride : (i+1)*stride : (i+1)*stride]
}

// Validate checks the table's shape.
func (t *Table) Validate() error {
	switch {
	case t.Dim <= 0 || t.Dim > 4096:
		return fmt.Errorf("table dimension %d out of range", t.Dim)
	case len(t.Prior) != len(t.Vocab):
		return fmt.Errorf("table has %d prior weights for %d terms", len(t.Prior), len(t.Vocab))
	case t.quant != nil && (t.Vectors != nil || len(t.quant) != t.Rows()*(4+t.Dim)):
		return fmt.Errorf("table has %d bytes of quantized rows, want %d rows × %d", len(t.quant), t.Rows(), 4+t.Dim)
	case t.quant == nil && len(t.Vectors) != t.Rows()*t.Dim:
		return fmt.Errorf("table has %d values, want %d rows × %d", len(t.Vectors), t.Rows(), t.Dim)
	case t.Buckets < 0 || (t.Buckets > 0 && (t.MinN < 1 || t.MaxN < t.MinN || t.MaxN > 32)):
		return fmt.Errorf("table n-gram settings invalid: %d buckets, n %d..%d", t.Buckets, t.MinN, t.MaxN)
	}
	if !sort.StringsAreSorted(t.Vocab) {
		return errors.New("table vocabulary is not sorted")
	}
	for i := 1; i < len(t.Vocab); i++ {
		if t.Vocab[i] == t.Vocab[i-1] {
			return fmt.Errorf("table vocabulary repeats %q", t.Vocab[i])
		}
	}
	return nil
}

// quantizeRow maps a row to int8 with scale absmax/127, so v ≈ q·scale.
func quantizeRow(dst []int8, v []float32) float32 {
	var amax float32
	for _, x := range v {
		if a := float32(math.Abs(float64(x))); a > amax {
			amax = a
		}
	}
	if amax == 0 {
		for i := range dst {
			dst[i] = 0
		}
		return 0
	}
	scale := amax / 127
	for i, x := range v {
		q := math.Round(float64(x / scale))
		dst[i] = int8(max(-127, min(127, q)))
	}
	return scale
}

// WriteTo writes the table in the int8 file format.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	cw := &countWriter{w: bw}
	le := binary.LittleEndian
	cw.Write([]byte(tableMagic))
	hdr := []uint32{uint32(t.Dim), uint32(len(t.Vocab)), uint32(t.Buckets), uint32(t.MinN), uint32(t.MaxN)}
	for _, h := range hdr {
		cw.Write(le.AppendUint32(nil, h))
	}
	for _, s := range t.Vocab {
		if len(s) > 255 {
			return cw.n, fmt.Errorf("term %.20q… longer than 255 bytes", s)
		}
		cw.Write([]byte{byte(len(s))})
		cw.Write([]byte(s))
	}
	for _, p := range t.Prior {
		cw.Write(le.AppendUint32(nil, math.Float32bits(p)))
	}
	q := make([]int8, t.Dim)
	buf := make([]byte, 4+t.Dim)
	for i := 0; i < t.Rows(); i++ {
		scale := quantizeRow(q, t.Row(i))
		le.PutUint32(buf, math.Float32bits(scale))
		for j, x := range q {
			buf[4+j] = byte(x)
		}
		cw.Write(buf)
	}
	if cw.err != nil {
		return cw.n, cw.err
	}
	return cw.n, bw.Flush()
}

// ReadTable reads a table written by WriteTo, dequantizing it to float32
// (ViewTable, then every row).
func ReadTable(r io.Reader) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading table: %w", err)
	}
	t, err := ViewTable(data)
	if err != nil {
		return nil, err
	}
	t.Vectors = make([]float32, t.Rows()*t.Dim)
	for i := 0; i < t.Rows(); i++ {
		t.dequantize(i, t.Vectors[i*t.Dim:(i+1)*t.Dim])
	}
	t.quant, t.dequant = nil, nil
	return t, t.Validate()
}

// ViewTable reads a table written by WriteTo in place: the vocabulary and
// the prior weights are decoded, the rows stay quantized in data (which
// must not change) and are dequantized when read (Row). For the table
// the binary carries: no 56 MB float32 copy at every start, only of the rows
// a catalog and its queries use.
func ViewTable(data []byte) (*Table, error) {
	le := binary.LittleEndian
	if len(data) < len(tableMagic)+20 || string(data[:len(tableMagic)]) != tableMagic {
		return nil, fmt.Errorf("not a builtin embedder table (want magic %q)", tableMagic)
	}
	off := len(tableMagic)
	var hdr [5]uint32
	for i := range hdr {
		hdr[i] = le.Uint32(data[off:])
		off += 4
	}
	if hdr[0] == 0 || hdr[0] > 4096 || hdr[1] > 1<<24 || hdr[2] > 1<<24 {
		return nil, fmt.Errorf("table header out of range: %v", hdr)
	}
	t := &Table{Dim: int(hdr[0]), Buckets: int(hdr[2]), MinN: int(hdr[3]), MaxN: int(hdr[4])}
	t.Vocab = make([]string, hdr[1])
	for i := range t.Vocab {
		if off >= len(data) {
			return nil, errors.New("reading table vocabulary: unexpected end of table")
		}
		n := int(data[off])
		if off+1+n > len(data) {
			return nil, errors.New("reading table vocabulary: unexpected end of table")
		}
		t.Vocab[i] = string(data[off+1 : off+1+n])
		off += 1 + n
	}
	if off+4*len(t.Vocab) > len(data) {
		return nil, errors.New("reading table prior weights: unexpected end of table")
	}
	t.Prior = make([]float32, len(t.Vocab))
	for i := range t.Prior {
		t.Prior[i] = math.Float32frombits(le.Uint32(data[off:]))
		off += 4
	}
	rows := len(data) - off
	switch want := t.Rows() * (4 + t.Dim); {
	case rows < want:
		return nil, fmt.Errorf("reading table rows: %d bytes, want %d", rows, want)
	case rows > want:
		return nil, errors.New("table file has trailing data")
	}
	t.quant = data[off:len(data):len(data)]
	t.dequant = make([]atomic.Pointer[[]float32], t.Rows())
	return t, t.Validate()
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
