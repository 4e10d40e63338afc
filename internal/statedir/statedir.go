package statedir

import (
	"os"
	"path/filepath"
)

// Dir is toolsrv's state directory: $XDG_STATE_HOME/toolsrv when that is
// an absolute path, else $HOME/.local/state/toolsrv (getenv reads the
// environment).
func Dir(getenv func(string) string) string {
	if s := getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "toolsrv")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "state", "toolsrv")
}
