package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// MinLength is the shortest token taken: a short one can be guessed by a
// client that may try as often as it likes.
const MinLength = 16

// maxFile bounds what a token file may hold.
const maxFile = 4 << 10

// Check says what is wrong with secret as a token, or nil: at least
// MinLength characters, each a visible ASCII character that an HTTP
// header, a 9P attach name and a Linux mount option carry as they are
// (RFC 6750's token68: letters, digits and - . _ ~ + / =).
func Check(secret string) error {
	if len(secret) < MinLength {
		return fmt.Errorf("a token must be at least %d characters long (this one has %d); make a long random one (toolsrv makes one when given none)", MinLength, len(secret))
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~+/=", c) >= 0:
		default:
			return fmt.Errorf("a token may hold letters, digits and - . _ ~ + / = only (character %d is %q)", i+1, rune(c))
		}
	}
	return nil
}

// Sum is what a server keeps of a token: its SHA-256, so that comparing a
// guess with it takes the same time whatever the guess (the guess is
// hashed first, and the hashes compared in constant time): neither the
// time taken nor an early exit tells how much of a guess was right.
type Sum [sha256.Size]byte

// SumOf is the Sum of secret.
func SumOf(secret string) Sum { return sha256.Sum256([]byte(secret)) }

// Matches reports whether guess is the token s is the Sum of.
func (s Sum) Matches(guess []byte) bool {
	g := sha256.Sum256(guess)
	return subtle.ConstantTimeCompare(g[:], s[:]) == 1
}

// ReadFile returns the token in the file at path: its one line
// (surrounding white space aside), a valid token (Check). The file must
// be a regular file of this user's (me: the effective uid) that no one
// else may read, or it is refused and the error says what to do.
func ReadFile(path string, me int) (string, error) {
	data, fi, err := fileio.ReadRegularInfo(path, maxFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("token file %s does not exist; write a long random token into it (chmod 600), or leave out --token-file and toolsrv makes one", path)
		}
		return "", fmt.Errorf("token file: %w", err)
	}
	if uid, ok := fileio.Owner(fi); !ok || uid != me {
		return "", fmt.Errorf("token file %s belongs to uid %d, not to this user (uid %d); use a file of your own", path, uid, me)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s is mode %04o: other users may read the token; chmod 600 %s, and replace the token if someone may have read it", path, perm, path)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("token file %s is empty; write a token into it, or remove it and toolsrv makes a new one at the next start (when it is its own)", path)
	}
	if err := Check(token); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return token, nil
}

// MakeFile returns the token in the file at path, first making one when
// there is none: a new random token (128 bits, crypto/rand), mode 0600,
// in a directory made private (fileio.PrivateDir: 0700, and refused when
// it is shared or another user's). made says it was made now. Two
// processes making it at once end with the same token: the file appears
// whole, once (written aside, then linked to its name).
func MakeFile(path string, me int, log *slog.Logger) (token string, made bool, err error) {
	dir := filepath.Dir(path)
	if err := fileio.PrivateDir(dir, me, log); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t, err := ReadFile(path, me)
		return t, false, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", false, fmt.Errorf("making the token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	token = rand.Text()
	_, err = tmp.WriteString(token + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	switch {
	case err == nil:
		return token, true, nil
	case errors.Is(err, fs.ErrExist): // another toolsrv made it first: theirs
		t, err := ReadFile(path, me)
		return t, false, err
	}
	return "", false, fmt.Errorf("making the token file %s: %w", path, err)
}
