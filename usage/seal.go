package usage

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// An installation's key: 32 random bytes in a private file
// (InstanceKeyFile, mode 0600, in a directory made private), made at its
// first use. It lets this installation tell what it wrote itself from what
// anyone could have written: the lines of its own exports (Seal: an import
// keeps their principals, and takes any other file's lines as the file's),
// and its entries in a store it shares with other instances (the
// PostgreSQL store keeps a seal of each of its entries' keys and of the
// counts it wrote, takes an entry that claims to be this instance's
// without a valid seal as another's, and believes of its own only the
// counts it sealed). The key never leaves the file; InstanceID is its public
// name.

// InstanceKeyFile is the key's file name, in the state directory
// (the directory of DefaultPath, or a shared store's Options.LocalDir).
const InstanceKeyFile = "instance.key"

const instanceKeySize = 32

// InstanceKey reads the key in dir, making it (and dir, private) if
// there is none. A key file of another user, of another size, or readable
// by others is refused with what to do.
func InstanceKey(dir string) ([]byte, error) {
	if err := fileio.PrivateDir(dir, os.Geteuid(), nil); err != nil {
		return nil, fmt.Errorf("the installation's key: %w", err)
	}
	path := filepath.Join(dir, InstanceKeyFile)
	for range 2 {
		b, fi, err := fileio.ReadRegularInfo(path, 1024)
		if err == nil {
			if uid, ok := fileio.Owner(fi); ok && uid != os.Geteuid() {
				return nil, fmt.Errorf("the installation's key %s belongs to uid %d, not to this user: remove it", path, uid)
			}
			if fi.Mode().Perm()&0o077 != 0 {
				return nil, fmt.Errorf("the installation's key %s is readable by others (mode %04o): remove it, a new one is made", path, fi.Mode().Perm())
			}
			if len(b) != instanceKeySize {
				return nil, fmt.Errorf("the installation's key %s is %d bytes, not %d: remove it, a new one is made (the seals of your earlier exports then no longer verify)", path, len(b), instanceKeySize)
			}
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the installation's key: %w", err)
		}
		key := make([]byte, instanceKeySize)
		rand.Read(key)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // another process made it first: read theirs
		}
		if err != nil {
			return nil, fmt.Errorf("the installation's key: %w", err)
		}
		_, err = f.Write(key)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("the installation's key: %w", err)
		}
		return key, nil
	}
	return nil, fmt.Errorf("the installation's key %s: made and removed meanwhile; try again", path)
}

// InstanceID is the public name of the installation whose key is key: 16
// hex digits.
func InstanceID(key []byte) string {
	h := sha256.Sum256(append([]byte("toolsrv instance\x00"), key...))
	return hex.EncodeToString(h[:8])
}

// Keyed is a store that knows the key of the installation reading it
// (InstanceKey: the file store's in its own directory, a shared store's
// in its LocalDir), and gives secrets derived from it: what must stay
// unpredictable to whoever records into the store, such as which of a
// principal's entries the ranking judges it by. No tool and no client
// can read the key, and a secret is the same for one installation
// (what a saved view and a rebuild of it agree on).
type Keyed interface {
	// Secret is the installation's secret for purpose (32 bytes); nil
	// when the key cannot be read now.
	Secret(purpose string) []byte
}

// DeriveSecret is the secret of the installation with key for purpose.
func DeriveSecret(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("toolsrv secret\x00" + purpose))
	return m.Sum(nil)
}

// Secret is the installation's secret for purpose (Keyed), from the key in
// the store's directory, made if there is none; nil while there is no
// store (no history to keep anything from: nothing is made). The key is
// read once (every apply of the history asks); a key that cannot be read
// is warned of once, and tried again at the next call.
func (s *fileStore) Secret(purpose string) []byte {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key == nil {
		if _, err := os.Lstat(s.path); err != nil {
			return nil
		}
		key, err := InstanceKey(filepath.Dir(s.path))
		if err != nil {
			if !s.warned {
				s.opts.Logger.Warn("the installation's key cannot be read", "err", err)
				s.warned = true
			}
			return nil
		}
		s.key = key
	}
	return DeriveSecret(s.key, purpose)
}

// Seal is the seal of fields under key: 32 hex digits of an HMAC-SHA256
// of the fields, each preceded by its length.
func Seal(key []byte, fields ...string) string {
	m := hmac.New(sha256.New, key)
	for _, f := range fields {
		var n [binary.MaxVarintLen64]byte
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Sealed reports whether seal is the seal of fields under key.
func Sealed(key []byte, seal string, fields ...string) bool {
	return len(key) > 0 && hmac.Equal([]byte(seal), []byte(Seal(key, fields...)))
}
