package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// The index's files (the vector cache, cache.go, and the lexical cache,
// lexcache.go) have one framing: a magic line naming the format and its
// version, a JSON header line, then a binary body whose length and
// SHA-256 the header gives, so that a truncated or corrupted file is
// found out before it is decoded.

// bodyCheck is the part of a header that describes the body.
type bodyCheck struct {
	BodyLen    int    `json:"bodyLen"`
	BodySHA256 string `json:"bodySha256"`
}

func (c *bodyCheck) check() *bodyCheck { return c }

// framedHeader is a header struct that embeds bodyCheck.
type framedHeader interface{ check() *bodyCheck }

// writeFramed writes magic, h (its body check filled in) and body to path
// atomically (fileio.WriteAtomic), so a crash leaves the previous file or
// the new one, never half of one.
func writeFramed(path, magic string, h framedHeader, body []byte) error {
	sum := sha256.Sum256(body)
	c := h.check()
	c.BodyLen, c.BodySHA256 = len(body), hex.EncodeToString(sum[:])
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(path, 0o644, func(w io.Writer) error {
		io.WriteString(w, magic)
		w.Write(hj)
		io.WriteString(w, "\n")
		_, err := w.Write(body)
		return err
	})
}

// errNoFile means there is no such file yet (not an error to report).
var errNoFile = errors.New("no such file yet")

// readFramed reads a file writeFramed wrote into h and returns its body,
// checked against the header. Only a regular file is read (a named pipe
// put in its place fails at once instead of blocking), and at most limit
// bytes of it.
func readFramed(path, magic string, h framedHeader, limit int64) ([]byte, error) {
	data, err := fileio.ReadRegular(path, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoFile
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
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != c.BodySHA256 {
		return nil, errors.New("body checksum mismatch (corrupted file)")
	}
	return body, nil
}
