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
	"slices"
	"sort"

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
//
// The file's keys are sorted, and searched where they were read: a start
// reads the file and builds nothing (a set of 4,000 keys put in a map took
// 0.45 ms, a seventh of what a call adds to a command that only lists).
type knownSchemas struct {
	path   string
	salt   []byte
	sorted []byte // the file's keys, knownKeySize bytes each, in order
	added  map[[knownKeySize]byte]struct{}
	change bool // added to since loaded or saved
}

const (
	knownKeySize  = 16
	knownMagic    = "toolsrv-known-schemas 2\n"
	maxKnownBytes = 64 << 20 // 4M schemas
)

// loadKnownSchemas reads the set at path ("": none, nothing is kept).
func loadKnownSchemas(path string) (*knownSchemas, error) {
	k := &knownSchemas{path: path, salt: knownSalt(), added: map[[knownKeySize]byte]struct{}{}}
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
	keys, ok := bytes.CutPrefix(data, []byte(head))
	if !ok || len(keys)%knownKeySize != 0 {
		return k, fmt.Errorf("%s: not a known-schemas file of this version; it will be rewritten", path)
	}
	for i := knownKeySize; i < len(keys); i += knownKeySize {
		if bytes.Compare(keys[i-knownKeySize:i], keys[i:i+knownKeySize]) >= 0 {
			return k, fmt.Errorf("%s: keys out of order; it will be rewritten", path)
		}
	}
	k.sorted = keys
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
	return k.hasKey(k.key(raw))
}

// hasKey looks key up in the file's keys (a binary search) and among those
// added since.
func (k *knownSchemas) hasKey(key [knownKeySize]byte) bool {
	n := len(k.sorted) / knownKeySize
	i := sort.Search(n, func(i int) bool { return bytes.Compare(k.sorted[i*knownKeySize:(i+1)*knownKeySize], key[:]) >= 0 })
	if i < n && bytes.Equal(k.sorted[i*knownKeySize:(i+1)*knownKeySize], key[:]) {
		return true
	}
	_, ok := k.added[key]
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
		if key := k.key(j.raw); !k.hasKey(key) {
			k.added[key] = struct{}{}
			k.change = true
		}
	}
}

// snapshot returns the file's contents if the set changed since the last
// snapshot, else nil.
func (k *knownSchemas) snapshot() []byte {
	if k == nil || !k.change || len(k.sorted)+len(k.added)*knownKeySize > maxKnownBytes {
		return nil
	}
	k.change = false
	keys := make([][]byte, 0, len(k.sorted)/knownKeySize+len(k.added))
	for i := 0; i < len(k.sorted); i += knownKeySize {
		keys = append(keys, k.sorted[i:i+knownKeySize])
	}
	for key := range k.added {
		keys = append(keys, bytes.Clone(key[:]))
	}
	slices.SortFunc(keys, bytes.Compare)
	var b bytes.Buffer
	b.WriteString(knownMagic)
	b.Write(k.salt)
	b.WriteByte('\n')
	for _, key := range keys {
		b.Write(key)
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
