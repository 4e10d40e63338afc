package fileio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
)

// toolsrv's cache files (the index's vector and lexical caches, the
// registry's catalog snapshot) have one framing: a magic line naming the format and its
// version, a JSON header line, then a binary body whose length and
// CRC-32C the header gives, so that a truncated or corrupted file is
// found out before it is decoded.
//
// The checksum guards against accidents (a torn write, a bad disk), not
// against someone who can write the cache directory: they could write any
// checksum too. CRC-32C is made for that (the storage engines' and
// filesystems' block checksum) and is computed in hardware: checking a
// 10k-tool cache took 11 ms of CPU with SHA-256, which is start-up time.

// BodyCheck is the part of a header that describes the body.
type BodyCheck struct {
	BodyLen    int    `json:"bodyLen"`
	BodyCRC32C uint32 `json:"bodyCrc32c"`
}

// bodySum is the body's CRC-32C (in hardware where the CPU has the
// instruction; MakeTable hands out one shared table).
func bodySum(body []byte) uint32 {
	return crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
}

func (c *BodyCheck) check() *BodyCheck { return c }

// FramedHeader is a header struct that embeds BodyCheck.
type FramedHeader interface{ check() *BodyCheck }

// WriteFramed writes magic, h (its body check filled in) and the body
// that write produces to path (mode perm) atomically (WriteAtomic), so a crash leaves
// the previous file or the new one, never half of one. The body is
// streamed, never held whole (the caches run to 100 MB and more at
// 100,000 tools, and a buffer that large made the collector run again and
// again near the start-up heap limit): room for the header line is left
// after the magic (the width of h with the widest body check, padded with
// spaces, which a JSON reader skips), the body goes through its checksum,
// and the header is written into the room at the end. h's other fields
// must be final when it is called.
func WriteFramed(path string, perm os.FileMode, magic string, h FramedHeader, write func(io.Writer) error) error {
	c := h.check()
	c.BodyLen, c.BodyCRC32C = math.MaxInt64, math.MaxUint32
	widest, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return writeAtomic(path, perm, func(w *bufio.Writer, f *os.File) error {
		io.WriteString(w, magic)
		room := append(bytes.Repeat([]byte{' '}, len(widest)), '\n')
		w.Write(room)
		body := &checksummed{w: w, crc: crc32.MakeTable(crc32.Castagnoli)}
		if err := write(body); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		c.BodyLen, c.BodyCRC32C = body.n, body.sum
		hj, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if len(hj) > len(widest) {
			return fmt.Errorf("header of %d bytes in room for %d", len(hj), len(widest))
		}
		copy(room, hj)
		_, err = f.WriteAt(room, int64(len(magic)))
		return err
	})
}

// checksummed passes writes on to w, counting them and summing them.
type checksummed struct {
	w   io.Writer
	crc *crc32.Table
	n   int
	sum uint32
}

func (c *checksummed) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	c.sum = crc32.Update(c.sum, c.crc, p[:n])
	return n, err
}

// ErrNoFile means there is no such file yet (not an error to report).
var ErrNoFile = errors.New("no such file yet")

// ReadFramed reads a file WriteFramed wrote into h and returns its body,
// checked against the header. Only a regular file is read (a named pipe
// put in its place fails at once instead of blocking), and at most limit
// bytes of it.
func ReadFramed(path, magic string, h FramedHeader, limit int64) ([]byte, error) {
	data, err := ReadRegular(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoFile
	}
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(data, []byte(magic))
	if !ok {
		return nil, errors.New("not a file of this format and version")
	}
	line, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, errors.New("truncated header")
	}
	if err := json.Unmarshal(line, h); err != nil {
		return nil, fmt.Errorf("bad header: %w", err)
	}
	c := h.check()
	if len(body) != c.BodyLen {
		return nil, fmt.Errorf("body is %d bytes, header says %d (half-written file)", len(body), c.BodyLen)
	}
	if bodySum(body) != c.BodyCRC32C {
		return nil, errors.New("body checksum mismatch (corrupted file)")
	}
	return body, nil
}
