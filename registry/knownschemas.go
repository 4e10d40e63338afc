package registry

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// knownSchemas is the set of argument schemas that compiled before, kept in
// a file between runs (Options.SchemaCache). Compiling every schema of a
// large catalog is most of a cold start (the JSON Schema library checks each
// against the metaschema: 0.5 s of CPU for 10,000 tools); a schema in the
// set is taken as valid at load and compiled when a call first needs it.
//
// A schema is known by a digest of its bytes together with everything that
// decides whether it compiles (the library's version and toolsrv's bounds),
// so a new library or new limits make every schema unknown again. The file
// only ever speeds up a load: a missing, corrupt or foreign file is the
// empty set, and a known schema that fails its lazy compile makes the call
// fail (Tool.Schema), not pass unchecked.
type knownSchemas struct {
	path   string
	salt   []byte
	set    map[[knownKeySize]byte]struct{}
	change bool // added to since loaded or saved
}

const (
	knownKeySize  = 16
	knownMagic    = "toolsrv-known-schemas 1\n"
	maxKnownBytes = 64 << 20 // 4M schemas
)

// loadKnownSchemas reads the set at path ("": none, nothing is kept).
func loadKnownSchemas(path string) (*knownSchemas, error) {
	k := &knownSchemas{path: path, salt: knownSalt(), set: map[[knownKeySize]byte]struct{}{}}
	if path == "" {
		return k, nil
	}
	data, err := fileio.ReadRegular(path, maxKnownBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return k, err
	}
	head := knownMagic + string(k.salt) + "\n"
	if !bytes.HasPrefix(data, []byte(head)) || (len(data)-len(head))%knownKeySize != 0 {
		return k, fmt.Errorf("%s: not a known-schemas file of this version; it will be rewritten", path)
	}
	for rest := data[len(head):]; len(rest) > 0; rest = rest[knownKeySize:] {
		k.set[[knownKeySize]byte(rest[:knownKeySize])] = struct{}{}
	}
	return k, nil
}

// knownSalt is what, beside a schema's bytes, decides whether it compiles.
func knownSalt() []byte {
	lib := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/santhosh-tekuri/jsonschema/v6" {
				lib = d.Version
				if d.Replace != nil {
					lib += "=>" + d.Replace.Path + "@" + d.Replace.Version
				}
			}
		}
	}
	return fmt.Appendf(nil, "jsonschema %s; size %d; depth %d; cost %d; no external refs; formats asserted",
		lib, MaxSchemaSize, MaxSchemaDepth, MaxSchemaCost)
}

func (k *knownSchemas) key(raw json.RawMessage) [knownKeySize]byte {
	h := sha256.New()
	h.Write(k.salt)
	h.Write([]byte{0})
	h.Write(raw)
	return [knownKeySize]byte(h.Sum(nil))
}

func (k *knownSchemas) has(raw json.RawMessage) bool {
	if k == nil || k.path == "" {
		return false
	}
	_, ok := k.set[k.key(raw)]
	return ok
}

// add records schemas that compiled.
func (k *knownSchemas) add(jobs []*compileJob) {
	if k == nil || k.path == "" {
		return
	}
	for _, j := range jobs {
		if j.schema == nil || j.known {
			continue
		}
		key := k.key(j.raw)
		if _, ok := k.set[key]; !ok {
			k.set[key] = struct{}{}
			k.change = true
		}
	}
}

// snapshot returns the file's contents if the set changed since the last
// snapshot, else nil.
func (k *knownSchemas) snapshot() []byte {
	if k == nil || !k.change || len(k.set)*knownKeySize > maxKnownBytes {
		return nil
	}
	k.change = false
	var b bytes.Buffer
	b.WriteString(knownMagic)
	b.Write(k.salt)
	b.WriteByte('\n')
	for key := range k.set {
		b.Write(key[:])
	}
	return b.Bytes()
}

// writeKnownSchemas writes a snapshot to path (0600 in a 0700 directory).
func writeKnownSchemas(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fileio.WriteAtomic(path, 0o600, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if _, err := bw.Write(data); err != nil {
			return err
		}
		return bw.Flush()
	})
}
