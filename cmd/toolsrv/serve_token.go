package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolsrv/toolsrv/internal/token"
)

// NinePTokenEnv is the environment variable that may hold the token of
// "toolsrv serve --listen tcp:" (and that "toolsrv 9p" sends over TCP).
// It is not TOOLSRV_MCP_TOKEN: the 9P token is given to clients that show
// it to the machine's other users (diod's "-a TOKEN" is in its command
// line, which ps shows; a v9fs mount's "aname=TOKEN" is in /proc/mounts),
// and one of them must not open the MCP server too.
const NinePTokenEnv = "TOOLSRV_9P_TOKEN"

// ninePTokenName is the default 9P token file's name, in toolsrv's
// private state directory.
const ninePTokenName = "9p-token"

// listenToken is a secret clients of a listener must send, and where it
// came from.
type listenToken struct {
	secret string
	where  string // said at start: the file or the variable, never the token
}

// tokenSource says where a command's token comes from: the file of its
// --token-file, else the variable envVar, else the file name in
// toolsrv's private state directory (beside the usage history), made
// there at the first start.
type tokenSource struct {
	file, envVar, name string
}

// stateFile is the path of name in toolsrv's private state directory.
func stateFile(env *cliEnv, name string) string { return filepath.Join(stateDir(env), name) }

// givenToken is the token of file (a --token-file), else of the variable
// envVar; given is false when neither holds one.
func givenToken(env *cliEnv, file, envVar string) (t listenToken, given bool, err error) {
	if file != "" {
		secret, err := token.ReadFile(file, os.Geteuid())
		return listenToken{secret: secret, where: "TOKEN is the contents of " + file}, true, err
	}
	if secret := env.getenv(envVar); secret != "" {
		if err := token.Check(secret); err != nil {
			return listenToken{}, true, fmt.Errorf("$%s: %w", envVar, err)
		}
		return listenToken{secret: secret, where: "TOKEN is $" + envVar}, true, nil
	}
	return listenToken{}, false, nil
}

// serverToken is the token a server's clients must send (see
// tokenSource); with neither a file nor the variable, the default file is
// made if it is missing.
func serverToken(env *cliEnv, src tokenSource) (listenToken, error) {
	if t, given, err := givenToken(env, src.file, src.envVar); given || err != nil {
		return t, err
	}
	path := stateFile(env, src.name)
	t, made, err := token.MakeFile(path, os.Geteuid(), logger(env))
	if err != nil {
		return listenToken{}, fmt.Errorf("%w (or give a token with --token-file or $%s)", err, src.envVar)
	}
	where := "TOKEN is the contents of " + path
	if made {
		where += " (made now; kept for the next start)"
	}
	return listenToken{secret: t, where: where}, nil
}

// clientToken is the token "toolsrv 9p" sends to a tcp: address: the one
// in --token-file, else $TOOLSRV_9P_TOKEN, else the server's default file
// when this user has one (a server of this user's, with neither, made
// it). "" when there is none: the server then refuses the attach, and the
// command says where a token comes from.
func clientToken(env *cliEnv, file string) (string, error) {
	if t, given, err := givenToken(env, file, NinePTokenEnv); given || err != nil {
		return t.secret, err
	}
	path := stateFile(env, ninePTokenName)
	t, err := token.ReadFile(path, os.Geteuid())
	if err != nil {
		if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return t, nil
}
