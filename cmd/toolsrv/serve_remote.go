package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/remote"
)

// pairList is a repeatable NAME=VALUE flag.
type pairList []string

func (p *pairList) String() string { return strings.Join(*p, ", ") }
func (p *pairList) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok || name == "" || val == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	*p = append(*p, v)
	return nil
}

// remoteFlags are serve's federation flags.
type remoteFlags struct {
	remotes, tools pairList
	config         *string
	cmd            *string
	// read are the remotes file and the tool directories sent, once
	// providers has run: toolsrv's own (see own).
	read []string
	poll *time.Duration
}

func addRemoteFlags(fs *flag.FlagSet) *remoteFlags {
	f := &remoteFlags{}
	fs.Var(&f.remotes, "remote", "federate the toolsrv at ADDR as NAME=ssh:[USER@]HOST[:PORT]: its tools join this catalog as NAME:TOOL and run there (repeatable)")
	fs.Var(&f.tools, "remote-tools", "NAME=DIR: send the .meta files of DIR to remote NAME, which resolves them on its host (repeatable)")
	f.config = fs.String("remote-config", "", "a JSON file of remotes (default $XDG_CONFIG_HOME/toolsrv/remotes.json, else ~/.config/toolsrv/remotes.json, if it exists)")
	f.cmd = fs.String("remote-cmd", "", "the command that runs toolsrv on remote hosts (default $TOOLSRV_REMOTE_CMD, else toolsrv)")
	f.poll = fs.Duration("remote-poll", time.Second, "how often each remote's revision is read")
	return f
}

// remoteConfig is one remote of the config file (and of the flags).
type remoteConfig struct {
	Name      string `json:"name"`
	Addr      string `json:"addr"`
	Tools     string `json:"tools,omitempty"`
	Session   string `json:"session,omitempty"`
	Agent     string `json:"agent,omitempty"`
	WorkDir   string `json:"workdir,omitempty"`
	RemoteCmd string `json:"remoteCmd,omitempty"`
}

// remotesFile is the config file: {"remotes": [{...}, ...]}.
type remotesFile struct {
	Remotes []remoteConfig `json:"remotes"`
}

// providers makes the remotes' providers: the config file's, then the
// flags' (a flag names a remote of the file to change it, or a new one).
func (f *remoteFlags) providers(env *cliEnv, log *slog.Logger) ([]engine.Provider, error) {
	var cfg remotesFile
	path, explicit := *f.config, *f.config != ""
	if !explicit {
		dir := env.getenv("XDG_CONFIG_HOME")
		if dir == "" {
			home := env.getenv("HOME")
			if home == "" {
				home, _ = os.UserHomeDir()
			}
			dir = filepath.Join(home, ".config")
		}
		path = filepath.Join(dir, "toolsrv", "remotes.json")
	}
	f.read = append(f.read, path)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("remotes file %s: %w; it holds {\"remotes\": [{\"name\": \"srv\", \"addr\": \"ssh:srv\", \"tools\": \"DIR\"}]}", path, err)
		}
	case explicit || !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("remotes file: %w", err)
	}
	byName := map[string]*remoteConfig{}
	var order []string
	add := func(r remoteConfig, from string) error {
		if r.Name == "" || r.Addr == "" {
			return fmt.Errorf("%s: a remote needs a name and an addr", from)
		}
		if _, dup := byName[r.Name]; dup {
			return fmt.Errorf("%s: remote %s is given twice", from, r.Name)
		}
		rc := r
		byName[r.Name] = &rc
		order = append(order, r.Name)
		return nil
	}
	for _, r := range cfg.Remotes {
		if err := add(r, path); err != nil {
			return nil, err
		}
	}
	for _, kv := range f.remotes {
		name, addr, _ := strings.Cut(kv, "=")
		if r, ok := byName[name]; ok {
			r.Addr = addr
			continue
		}
		if err := add(remoteConfig{Name: name, Addr: addr}, "--remote"); err != nil {
			return nil, err
		}
	}
	for _, kv := range f.tools {
		name, dir, _ := strings.Cut(kv, "=")
		r, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("--remote-tools %s: no remote %s (give --remote %s=ssh:HOST)", kv, name, name)
		}
		r.Tools = dir
	}
	sort.Strings(order)
	var out []engine.Provider
	for _, name := range order {
		r := byName[name]
		if r.Tools != "" {
			f.read = append(f.read, r.Tools)
			fi, err := os.Stat(r.Tools)
			if err != nil || !fi.IsDir() {
				return nil, fmt.Errorf("remote %s: the tools to send, %s, are not a directory", name, r.Tools)
			}
		}
		cmd := r.RemoteCmd
		if cmd == "" {
			cmd = *f.cmd
		}
		p, err := remote.New(remote.Options{Name: r.Name, Addr: r.Addr, Tools: r.Tools, Session: r.Session, Agent: r.Agent,
			WorkDir: r.WorkDir, Poll: *f.poll, Logger: log,
			Dial: remote.DialOptions{Getenv: env.getenv, RemoteCmd: cmd}})
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// own are the paths providers read (see read): a tool that could write the
// remotes file could make toolsrv run a command of its choosing over ssh
// (a remote's remoteCmd, on this host too through a loopback remote), and
// one that could write a directory of tools sent could add tools there.
func (f *remoteFlags) own() []string { return f.read }
