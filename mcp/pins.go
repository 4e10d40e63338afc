package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// PinsFile is the name of the pins file in toolsrv's state directory
// ($XDG_STATE_HOME/toolsrv, else ~/.local/state/toolsrv).
const PinsFile = "mcp-pins.json"

// Bounds on the pins file: it keeps each server's definitions as text to
// show what changed, and a hostile server could otherwise fill it.
const (
	// MaxPinsSize is the largest pins file read.
	MaxPinsSize = 256 << 20
	// maxKeptDefinition is the largest definition whose text is kept (a
	// larger one keeps its hash only).
	maxKeptDefinition = 64 << 10
	// maxKeptPerServer bounds the text kept of one server's definitions.
	maxKeptPerServer = 16 << 20
	// pinsVersion is the file format's version.
	pinsVersion = 1
)

// Pins are the definitions of imported tools their owner has approved,
// kept in toolsrv's private state (PinsFile, 0600 in a 0700 directory of
// this user's): an MCP server can change what its tools say at any time
// (a "rug pull": a harmless description replaced by instructions to the
// model), and a pin is how toolsrv notices.
//
// The first time toolsrv lists a server (by the config file and the
// server's name in it), each of its tools is recorded as approved: the
// owner approved the server by naming it in their config. From then on a
// tool whose definition (Definition: name, title, description, input
// schema, annotations) differs from its pin, and a tool the server added
// (unless its entry says "trustNewTools"), is held: kept out of the
// catalog until its owner approves it (Approve: "toolsrv approve"), which
// pins the definition seen. Processes that share the file (serve, mcp,
// call, validate) take a lock for each change and replace the file
// whole, so none loses another's approval.
type Pins struct {
	path string
	me   int
	log  *slog.Logger
	now  func() time.Time
}

// OpenPins is the pins file at path; nothing is read or written until
// it is used. log hears about a file or directory made private.
func OpenPins(path string, log *slog.Logger) *Pins {
	if log == nil {
		log = slog.Default()
	}
	return &Pins{path: path, me: os.Geteuid(), log: log, now: time.Now}
}

// Path is where the pins are kept.
func (p *Pins) Path() string { return p.path }

// Definition is what a pin covers of an imported tool: what the model is
// shown of it (name, title, description, input schema) and what changes
// how a call runs (its annotations: a read-only hint makes it read-only).
type Definition struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// definitionOf is t's Definition; schema is its input schema as
// providedTool marshalled it (the SDK's decoding of it, whose keys
// json.Marshal sorts: the same schema always marshals alike).
func definitionOf(t *sdk.Tool, schema json.RawMessage) Definition {
	d := Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
	if t.Annotations != nil {
		if b, err := json.Marshal(t.Annotations); err == nil && string(b) != "{}" {
			d.Annotations = b
		}
	}
	return d
}

// Hash is the SHA-256 of the definition's JSON, in hex.
func (d Definition) Hash() string {
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Held is an imported tool kept out of the catalog until its owner
// approves it.
type Held struct {
	// Server is the server's name in the config; Tool the tool's name
	// there.
	Server, Tool string
	// New: the server added the tool since toolsrv first listed it (else
	// its definition changed).
	New bool
	// Was is the approved definition (nil for a new tool, or when its
	// text was not kept); Now the one seen, whose hash is Hash.
	Was  *Definition
	Now  Definition
	Hash string
	// Unreadable: held because the pins file cannot be read (Was and
	// the diff are then unknown).
	Unreadable bool
}

// Reason is why the tool is held, as the model may be told it: never the
// changed text.
func (h *Held) Reason() string {
	if h.Unreadable {
		return "held: toolsrv cannot read its record of the definitions its owner approved, and holds every imported tool until they fix it"
	}
	if h.New {
		return "held: its MCP server added it after its owner approved the server, and the owner has not approved it yet"
	}
	return "held: its definition changed since its owner approved it, and the owner has not approved the change yet"
}

// pinsFile is the file's contents.
type pinsFile struct {
	Version int `json:"version"`
	// Configs holds, by config file (absolute) and server name, what is
	// pinned.
	Configs map[string]map[string]*serverPins `json:"configs"`
}

// serverPins is one server's pins.
type serverPins struct {
	FirstSeen time.Time       `json:"firstSeen"`
	Tools     map[string]*pin `json:"tools"`
	// Held are definitions seen and not approved (Approve pins them).
	Held map[string]*pin `json:"held,omitempty"`
}

// pin is one definition, by its hash; its text when kept (see
// maxKeptDefinition).
type pin struct {
	SHA256     string      `json:"sha256"`
	At         time.Time   `json:"at"` // approved (Tools), first seen (Held)
	Definition *Definition `json:"definition,omitempty"`
}

// errNoPinsStore is a pins file that does not exist and cannot be made
// (a read-only home directory): imported tools are then not pinned.
var errNoPinsStore = errors.New("no pins file can be kept")

// check compares the definitions a server offers with its pins (server
// of config file): the first listing of a server that offers any tool
// pins them all; after
// that, a definition that differs from its pin, or a new one unless
// trustNew, is held (and recorded as held, for Approve). The answer maps
// the held tools' names to why.
func (p *Pins) check(ctx context.Context, file, server string, defs []Definition, trustNew bool) (map[string]*Held, error) {
	defs = firstOfEachName(defs)
	held := map[string]*Held{}
	err := p.update(ctx, func(f *pinsFile) (bool, error) {
		now := p.now().UTC()
		byServer := f.Configs[file]
		rec := byServer[server]
		if rec == nil && len(defs) == 0 {
			// A server that lists nothing yet (one that wants a login
			// first) is first seen when it lists its tools.
			return false, nil
		}
		if rec == nil {
			if byServer == nil {
				byServer = map[string]*serverPins{}
				f.Configs[file] = byServer
			}
			rec = &serverPins{FirstSeen: now, Tools: map[string]*pin{}}
			byServer[server] = rec
			budget := maxKeptPerServer
			for i := range defs {
				rec.Tools[defs[i].Name] = newPin(&defs[i], now, &budget)
			}
			return true, nil
		}
		if rec.Tools == nil {
			rec.Tools = map[string]*pin{}
		}
		budget := maxKeptPerServer - rec.kept()
		changed := false
		for i := range defs {
			d := &defs[i]
			h := d.Hash()
			ap := rec.Tools[d.Name]
			switch {
			case ap != nil && ap.SHA256 == h:
				if rec.Held[d.Name] != nil { // back as it was approved
					delete(rec.Held, d.Name)
					changed = true
				}
			case ap == nil && trustNew:
				rec.Tools[d.Name] = newPin(d, now, &budget)
				delete(rec.Held, d.Name)
				changed = true
			default:
				if hp := rec.Held[d.Name]; hp == nil || hp.SHA256 != h {
					if rec.Held == nil {
						rec.Held = map[string]*pin{}
					}
					if hp != nil {
						budget += hp.size()
					}
					rec.Held[d.Name] = newPin(d, now, &budget)
					changed = true
				}
				hd := &Held{Server: server, Tool: d.Name, New: ap == nil, Now: *d, Hash: h}
				if ap != nil {
					hd.Was = ap.Definition
				}
				held[d.Name] = hd
			}
		}
		return changed, nil
	})
	return held, err
}

// firstOfEachName is defs without the later definitions of a name already
// defined: the registry keeps the first tool of a name a server offers
// twice, so that one is the definition pinned and compared (pinning the
// last one held the tool kept at every later start).
func firstOfEachName(defs []Definition) []Definition {
	seen := make(map[string]bool, len(defs))
	out := defs[:0:0]
	for _, d := range defs {
		if seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		out = append(out, d)
	}
	return out
}

// Approve pins the held definition of tool of server (of config file):
// the one toolsrv last saw, whose hash must begin with hash when hash is
// not empty (so that what is approved is what was reviewed). It returns
// the hash of the definition pinned.
func (p *Pins) Approve(ctx context.Context, file, server, tool, hash string) (string, error) {
	var out string
	err := p.update(ctx, func(f *pinsFile) (bool, error) {
		rec := f.Configs[file][server]
		if rec == nil {
			return false, fmt.Errorf("toolsrv has no record of mcp server %s of %s: it pins a server's tools when it first lists them (toolsrv validate --mcp-config %s)", server, file, file)
		}
		hp := rec.Held[tool]
		if hp == nil {
			var names []string
			for n := range rec.Held {
				names = append(names, server+":"+n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				return false, fmt.Errorf("%s:%s is not held: no tool of mcp server %s is", server, tool, server)
			}
			return false, fmt.Errorf("%s:%s is not held; the held tools of mcp server %s are %s", server, tool, server, strings.Join(names, ", "))
		}
		if hash != "" && !strings.HasPrefix(hp.SHA256, strings.ToLower(hash)) {
			return false, fmt.Errorf("the held definition of %s:%s is now %s, not %s: it changed again since it was shown; run toolsrv validate to see it", server, tool, hp.SHA256[:16], hash)
		}
		hp.At = p.now().UTC()
		rec.Tools[tool] = hp
		delete(rec.Held, tool)
		out = hp.SHA256
		return true, nil
	})
	return out, err
}

// newPin is the pin of d, its text kept while budget allows.
func newPin(d *Definition, at time.Time, budget *int) *pin {
	pn := &pin{SHA256: d.Hash(), At: at}
	if n := definitionSize(d); n <= maxKeptDefinition && n <= *budget {
		c := *d
		pn.Definition = &c
		*budget -= n
	}
	return pn
}

func definitionSize(d *Definition) int {
	return len(d.Name) + len(d.Title) + len(d.Description) + len(d.InputSchema) + len(d.Annotations)
}

func (pn *pin) size() int {
	if pn == nil || pn.Definition == nil {
		return 0
	}
	return definitionSize(pn.Definition)
}

// kept is the text kept of the server's definitions.
func (s *serverPins) kept() int {
	n := 0
	for _, pn := range s.Tools {
		n += pn.size()
	}
	for _, pn := range s.Held {
		n += pn.size()
	}
	return n
}

// update reads the file under its lock, lets change change it, and
// writes it whole (atomically) when change says it changed.
func (p *Pins) update(ctx context.Context, change func(*pinsFile) (bool, error)) error {
	dir := filepath.Dir(p.path)
	_, err := os.Lstat(p.path)
	existed := err == nil
	if err := fileio.PrivateDir(dir, p.me, p.log); err != nil {
		if !existed && !errors.Is(err, fileio.ErrNotPrivate) {
			return fmt.Errorf("%w: %v", errNoPinsStore, err)
		}
		return fmt.Errorf("pins file %s: %w", p.path, err)
	}
	unlock, err := p.lock(ctx)
	if err != nil {
		if !existed {
			return fmt.Errorf("%w: %v", errNoPinsStore, err)
		}
		return err
	}
	defer unlock()
	f, err := p.read()
	if err != nil {
		return err
	}
	changed, err := change(f)
	if err != nil || !changed {
		return err
	}
	err = fileio.WriteAtomic(p.path, 0o600, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(f)
	})
	if err != nil && !existed {
		return fmt.Errorf("%w: %v", errNoPinsStore, err)
	}
	return err
}

// lock takes the file's lock (a file beside it, flock), waiting for
// another process's until ctx ends.
func (p *Pins) lock(ctx context.Context) (func(), error) {
	lf, err := os.OpenFile(p.path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the pins file: %w", err)
	}
	for {
		err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { lf.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			lf.Close()
			return nil, fmt.Errorf("locking the pins file %s: %w", p.path, err)
		}
		select {
		case <-ctx.Done():
			lf.Close()
			return nil, fmt.Errorf("locking the pins file %s: another toolsrv holds it: %w", p.path, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// read reads the file (an empty one when there is none): a regular file
// of this user's, made 0600 if group or others could read it.
func (p *Pins) read() (*pinsFile, error) {
	empty := &pinsFile{Version: pinsVersion, Configs: map[string]map[string]*serverPins{}}
	fh, err := os.OpenFile(p.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pins file %s: %w (it must be a regular file of yours)", p.path, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("pins file %s: %w", p.path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("pins file %s is not a regular file", p.path)
	}
	if uid, ok := fileio.Owner(fi); !ok || uid != p.me {
		return nil, fmt.Errorf("pins file %s belongs to uid %d, not to this user (uid %d)", p.path, uid, p.me)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := fh.Chmod(0o600); err != nil {
			return nil, fmt.Errorf("making the pins file %s private: %w", p.path, err)
		}
		p.log.Warn(fmt.Sprintf("made pins file %s private: mode 0600, was %04o", p.path, perm))
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxPinsSize+1))
	if err != nil {
		return nil, fmt.Errorf("pins file %s: %w", p.path, err)
	}
	if len(data) > MaxPinsSize {
		return nil, fmt.Errorf("pins file %s is larger than %d MiB", p.path, MaxPinsSize>>20)
	}
	var f pinsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("pins file %s is damaged: %v", p.path, err)
	}
	if f.Version != pinsVersion {
		return nil, fmt.Errorf("pins file %s is of version %d; this toolsrv reads version %d", p.path, f.Version, pinsVersion)
	}
	if f.Configs == nil {
		f.Configs = map[string]map[string]*serverPins{}
	}
	return &f, nil
}
