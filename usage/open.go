package usage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/toolsrv/toolsrv/internal/statedir"
)

// Driver opens a store of one kind: dsn is what Open was given. It
// returns the store and what the user should be told (a damaged store set
// aside, a file made private).
type Driver func(ctx context.Context, dsn string, opts Options) (Store, []string, error)

// The drivers, by URL scheme; "" is a file path (the embedded store).
var drivers = struct {
	sync.RWMutex
	m map[string]Driver
}{m: map[string]Driver{}}

// Register makes Open use d for the DSNs of scheme ("postgres" for
// postgres://...; "" for file paths). Like database/sql's, it is meant for
// init functions and panics when a scheme is registered twice.
func Register(scheme string, d Driver) {
	drivers.Lock()
	defer drivers.Unlock()
	scheme = strings.ToLower(scheme)
	if d == nil {
		panic("usage: Register of a nil driver for " + scheme)
	}
	if _, dup := drivers.m[scheme]; dup {
		panic("usage: Register called twice for scheme " + scheme)
	}
	drivers.m[scheme] = d
}

func init() { Register("", openFile) }

// schemeRE is a URL scheme followed by "://".
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Open opens the store dsn names: a file path opens the embedded store
// (made at the first Record, in a private directory), a URL the store its
// scheme registered (see Register). It returns warnings for the user: a
// damaged store set aside, a file whose mode was made private. Options
// are filled with their defaults.
func Open(ctx context.Context, dsn string, opts Options) (Store, []string, error) {
	if dsn == "" {
		return nil, nil, errors.New("no usage store given (a file path, or a database URL)")
	}
	scheme := ""
	if m := schemeRE.FindStringSubmatch(dsn); m != nil {
		scheme = strings.ToLower(m[1])
	}
	drivers.RLock()
	d, ok := drivers.m[scheme]
	drivers.RUnlock()
	if !ok {
		switch scheme {
		case "postgres", "postgresql":
			return nil, nil, errors.New("PostgreSQL usage stores are not built yet; give a file path for the embedded store")
		}
		return nil, nil, fmt.Errorf("no usage store for %s:// URLs (known: %s)", scheme, knownSchemes())
	}
	return d(ctx, dsn, opts.withDefaults())
}

func knownSchemes() string {
	drivers.RLock()
	defer drivers.RUnlock()
	var out []string
	for s := range drivers.m {
		if s == "" {
			out = append(out, "a file path")
		} else {
			out = append(out, s+"://")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// DefaultPath is where the embedded store lives unless told otherwise:
// $XDG_STATE_HOME/toolsrv/usage.db, else
// $HOME/.local/state/toolsrv/usage.db. getenv is os.Getenv or a stand-in.
func DefaultPath(getenv func(string) string) string {
	return filepath.Join(statedir.Dir(getenv), "usage.db")
}
