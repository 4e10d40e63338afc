package mcp

import (
	"log/slog"

	"github.com/toolsrv/toolsrv/internal/token"
)

// TokenEnv is the environment variable that may hold the bearer token of
// "toolsrv mcp --listen".
const TokenEnv = "TOOLSRV_MCP_TOKEN"

// ReadTokenFile returns the bearer token in the file at path: its one
// line (surrounding white space aside), a valid token (CheckToken). The
// file must be a regular file of this user's (me: the effective uid) that
// no one else may read, or it is refused and the error says what to do.
// (internal/token's ReadFile, shared with the 9P server's token.)
func ReadTokenFile(path string, me int) (string, error) { return token.ReadFile(path, me) }

// MakeTokenFile returns the token in the file at path, first making one
// when there is none: a new random token (128 bits, crypto/rand), mode
// 0600, in a directory made private (fileio.PrivateDir: 0700, and refused
// when it is shared or another user's). made says it was made now. Two
// processes making it at once end with the same token: the file appears
// whole, once (written aside, then linked to its name). (internal/token's
// MakeFile.)
func MakeTokenFile(path string, me int, log *slog.Logger) (secret string, made bool, err error) {
	return token.MakeFile(path, me, log)
}
