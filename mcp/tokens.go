package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// DefaultTokenDir is where the OAuth tokens of remote servers are kept
// (one file per server, NAME.json, mode 0600): toolsrv's private state,
// $XDG_STATE_HOME/toolsrv/mcp-tokens, else
// ~/.local/state/toolsrv/mcp-tokens. getenv reads the environment.
func DefaultTokenDir(getenv func(string) string) string {
	if s := getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "toolsrv", "mcp-tokens")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "state", "toolsrv", "mcp-tokens")
}

// maxLoginFile bounds a saved login's file.
const maxLoginFile = 1 << 20

// savedLogin is what a login leaves for the server's later connections:
// its tokens, and what refreshing them takes. Resource is the server's URL
// the tokens were issued for: they are never sent anywhere else, not even
// to the same server's entry once its "url" changed.
type savedLogin struct {
	Server       string           `json:"server"`
	Resource     string           `json:"resource"`
	ClientID     string           `json:"clientId"`
	ClientSecret string           `json:"clientSecret,omitempty"`
	TokenURL     string           `json:"tokenUrl"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	// Asked are the scopes the server asked for since (a 403
	// insufficient_scope): the next login asks for them too.
	Asked []string      `json:"asked,omitempty"`
	Token *oauth2.Token `json:"token"`
	Saved time.Time     `json:"saved"`
}

// tokenStore is the directory of saved logins. Its directory is private
// (fileio.PrivateDir: this user's, 0700), each file 0600 and written
// atomically; a file another user owns is refused.
type tokenStore struct {
	dir string
	me  int
	log *slog.Logger
}

func (s tokenStore) path(server string) string { return filepath.Join(s.dir, server+".json") }

// load is the server's saved login, nil when there is none.
func (s tokenStore) load(server string) (*savedLogin, error) {
	p := s.path(server)
	if _, err := os.Lstat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := fileio.PrivateDir(s.dir, s.me, s.log); err != nil {
		return nil, fmt.Errorf("the saved logins' directory: %w", err)
	}
	data, fi, err := fileio.ReadRegularInfo(p, maxLoginFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the saved login of mcp server %s: %w", server, err)
	}
	if uid, ok := fileio.Owner(fi); !ok || uid != s.me {
		return nil, fmt.Errorf("the saved login %s belongs to uid %d, not to this user: it is not used (remove it, then toolsrv mcp login %s)", p, uid, server)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(p, 0o600); err != nil {
			return nil, fmt.Errorf("making %s private (0600): %w", p, err)
		}
		s.log.Warn(fmt.Sprintf("made %s private: mode 0600, was %04o (others may have read its tokens: consider toolsrv mcp logout %s, then login again)", p, fi.Mode().Perm(), server))
	}
	var l savedLogin
	if err := json.Unmarshal(data, &l); err != nil || l.Token == nil || l.Token.AccessToken == "" {
		return nil, fmt.Errorf("the saved login %s cannot be read (%v): run toolsrv mcp login %s again", p, err, server)
	}
	return &l, nil
}

// save writes the server's login, replacing the one before.
func (s tokenStore) save(l *savedLogin) error {
	if err := fileio.PrivateDir(s.dir, s.me, s.log); err != nil {
		return fmt.Errorf("the saved logins' directory: %w", err)
	}
	l.Saved = time.Now().UTC().Truncate(time.Second)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(s.path(l.Server), 0o600, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// forget removes the server's saved login; false when there was none.
func (s tokenStore) forget(server string) (bool, error) {
	err := os.Remove(s.path(server))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// savingSource is a token source that saves each new token (a refresh)
// with the login it belongs to, so that the next process starts from it.
// A failed save is logged (without the token) and the token used anyway.
type savingSource struct {
	src   oauth2.TokenSource
	store tokenStore
	log   *slog.Logger

	mu    sync.Mutex
	login savedLogin
}

// asked records scopes the server asked for (a step-up), for the next
// login.
func (s *savingSource) asked(scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	more := addScopes(s.login.Asked, scopes)
	if len(more) == len(s.login.Asked) {
		return
	}
	s.login.Asked = more
	if err := s.store.save(&s.login); err != nil {
		s.log.Warn("the scopes the server asks for could not be saved for the next login", "err", err)
	}
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.login.Token == nil || t.AccessToken != s.login.Token.AccessToken {
		s.login.Token = t
		if err := s.store.save(&s.login); err != nil {
			s.log.Warn("the new access token could not be saved; the next start logs in with the old one", "err", err)
		} else {
			s.log.Info("saved a new access token", "expiry", t.Expiry)
		}
	}
	return t, nil
}
