package mcp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// TokenEnv is the environment variable that may hold the bearer token of
// "toolsrv mcp --listen".
const TokenEnv = "TOOLSRV_MCP_TOKEN"

// maxTokenFile bounds what a token file may hold.
const maxTokenFile = 4 << 10

// ReadTokenFile returns the bearer token in the file at path: its one
// line (surrounding white space aside), a valid token (CheckToken). The
// file must be a regular file of this user's (me: the effective uid) that
// no one else may read, or it is refused and the error says what to do.
func ReadTokenFile(path string, me int) (string, error) {
	data, fi, err := fileio.ReadRegularInfo(path, maxTokenFile)
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
	if err := CheckToken(token); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return token, nil
}

// MakeTokenFile returns the token in the file at path, first making one
// when there is none: a new random token (128 bits, crypto/rand), mode
// 0600, in a directory made private (fileio.PrivateDir: 0700, and refused
// when it is shared or another user's). made says it was made now. Two
// processes making it at once end with the same token: the file appears
// whole, once (written aside, then linked to its name).
func MakeTokenFile(path string, me int, log *slog.Logger) (token string, made bool, err error) {
	dir := filepath.Dir(path)
	if err := fileio.PrivateDir(dir, me, log); err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t, err := ReadTokenFile(path, me)
		return t, false, err
	}
	tmp, err := os.CreateTemp(dir, ".mcp-token-*")
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
		t, err := ReadTokenFile(path, me)
		return t, false, err
	}
	return "", false, fmt.Errorf("making the token file %s: %w", path, err)
}
