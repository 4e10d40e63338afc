package usage

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Store keeps usage events as entries. Every method may be called from
// several goroutines at once, and several processes may use one store.
type Store interface {
	// Record stores events, all or none. It sets the ID of each event
	// in evs that has none (so a caller that passes a slice sees them).
	// An event whose ID the store has seen is skipped. The caps of
	// Options are enforced before it returns.
	Record(ctx context.Context, evs ...Event) error
	// Snapshot returns every kept entry, in no particular order, and the
	// version they are at.
	Snapshot(ctx context.Context) (entries []Entry, version int64, err error)
	// Changes returns what changed after version after: the entries
	// added or changed (Version > after) and the keys removed (evicted,
	// expired; some perhaps added after after, never seen by the reader),
	// and the version they bring the reader to. Apply removed first,
	// then changed. It returns ErrResnapshot when it cannot tell
	// (after is older than what the store remembers of removals, a
	// Forget came in between, or the store was made anew): call
	// Snapshot instead.
	Changes(ctx context.Context, after int64) (changed []Entry, removed []Key, version int64, err error)
	// Version is the store's change counter: cheap, for polling.
	Version(ctx context.Context) (int64, error)
	// Forget removes the entries f matches and returns how many; what
	// it removes is gone from disk when it returns.
	Forget(ctx context.Context, f Filter) (n int, err error)
	// Stats describes the store.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store.
	Close() error
}

// ErrResnapshot is Changes' answer when it cannot tell what changed: call
// Snapshot.
var ErrResnapshot = errors.New("usage store: changes unknown, take a new snapshot")

// Filter says which entries Forget removes: All, or those of Tool (when
// set) and of Agent (when set) and of Principal (when set) and last used
// before Before (when set). A filter with nothing set matches nothing and
// is an error.
type Filter struct {
	Tool      string
	Agent     string
	Principal string
	Before    time.Time
	All       bool
}

// Stats describes a store.
type Stats struct {
	// Where is the store: a path, or a URL without its password.
	Where string `json:"where"`
	// Entries kept, the calls they count and of them failed, the tools,
	// agents and principals they name.
	Entries    int   `json:"entries"`
	Events     int64 `json:"events"`
	Failed     int64 `json:"failed"`
	Tools      int   `json:"tools"`
	Agents     int   `json:"agents"`
	Principals int   `json:"principals"`
	// Sources counts the events recorded by source since the store was
	// made or last emptied (Forget All), evicted or not.
	Sources map[string]int64 `json:"sources"`
	// Oldest and Newest are the earliest First and the latest Last of
	// the entries (zero when there are none).
	Oldest time.Time `json:"oldest"`
	Newest time.Time `json:"newest"`
	// Size is the bytes the store takes on disk (0 for a shared store).
	Size int64 `json:"size"`
	// Version is the change counter.
	Version int64 `json:"version"`
	// Pending are events recorded here that a shared store has not yet
	// taken (spooled locally while it was unreachable), since
	// PendingSince. Always 0 for the embedded store.
	Pending      int64     `json:"pending"`
	PendingSince time.Time `json:"pendingSince"`
	// Options are the caps in force.
	Options Options `json:"options"`
}

// Options bounds a store. A zero field takes its default; a negative one
// lifts that bound.
type Options struct {
	// PerTool is the entries kept per tool (the oldest Last is evicted
	// first). Default 256: ranking learns a tool's phrasings, and a few
	// hundred distinct ones say all it needs, while one much-used tool
	// must not push out the rest.
	PerTool int `json:"perTool"`
	// Total is the entries kept in all. Default 50,000: about 200
	// tools at PerTool, some 25 MB on disk, and a snapshot of them
	// loads in under 100 ms.
	Total int `json:"total"`
	// PerAgentTool is the entries one agent can hold for one tool.
	// Default 64, so that one agent (a loop, a hostile client) making up
	// requests cannot fill a tool's PerTool alone.
	PerAgentTool int `json:"perAgentTool"`
	// MaxCount is the calls one entry counts, that is, what one agent
	// can give one (request, tool). Default 64: a request repeated more
	// often says nothing new, and a looping agent must not outweigh the
	// others. Once Count saturates, Failed follows the recent failure
	// rate: each further call replaces an average one of those counted.
	MaxCount int `json:"maxCount"`
	// Retention is how long an entry is kept after its last use.
	// Default 180 days: long enough to span a project's quiet months,
	// short enough that what a user asked half a year ago fades.
	Retention time.Duration `json:"retention"`
	// IDWindow is how long the IDs of recorded events are remembered to
	// skip a repeat (at most IDCap of them). Default 7 days, 100,000:
	// retries come within minutes, a shared store's spool within days.
	IDWindow time.Duration `json:"idWindow"`
	IDCap    int           `json:"idCap"`
	// Check makes Open read the whole store (every page, every record's
	// format: SQLite's quick_check) and set it aside when damaged. It
	// costs about 1.7 ms of CPU per 1,000 entries, too much for every
	// process that records a call, so it is off by default: damage is
	// then found where a call reads it, and set aside just the same
	// (told to Logger), the call going on with a new store. Open always
	// checks the file's header and layout.
	Check bool `json:"-"`
	// Namespace is a shared store's (a team's, a project's): an
	// instance reads and writes its namespace only. "" is the database
	// URL's user. The embedded store has none.
	Namespace string `json:"namespace,omitempty"`
	// LocalDir is where a shared store keeps its local copy of the
	// entries and the events it could not send yet ("": the directory
	// of DefaultPath). The embedded store ignores it.
	LocalDir string `json:"-"`
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time `json:"-"`
	// tombstones is how many removed keys the store remembers for
	// Changes (0: maxTombstones); tests make it small.
	tombstones int
	// Logger gets what happens after Open that Open would have warned
	// about (a store found damaged later and set aside); nil discards.
	Logger *slog.Logger `json:"-"`
}

// The defaults of Options.
const (
	DefaultPerTool      = 256
	DefaultTotal        = 50_000
	DefaultPerAgentTool = 64
	DefaultMaxCount     = 64
	DefaultRetention    = 180 * 24 * time.Hour
	DefaultIDWindow     = 7 * 24 * time.Hour
	DefaultIDCap        = 100_000
)

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.PerTool, DefaultPerTool)
	def(&o.Total, DefaultTotal)
	def(&o.PerAgentTool, DefaultPerAgentTool)
	def(&o.MaxCount, DefaultMaxCount)
	def(&o.IDCap, DefaultIDCap)
	def(&o.tombstones, maxTombstones)
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.IDWindow == 0 {
		o.IDWindow = DefaultIDWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Cutoff is the oldest Last an entry may have at now to be kept (zero when
// nothing expires).
func (o Options) cutoff(now time.Time) time.Time {
	if o.Retention < 0 {
		return time.Time{}
	}
	return now.Add(-o.Retention)
}

// Notifier is what a store shared by several processes may also be: Notify
// gives a channel that receives (a value dropped when one is waiting)
// when the store may have changed, so that a reader polling Version can
// look at once rather than at its next poll.
type Notifier interface {
	Notify() <-chan struct{}
}

// Prepared is an event as a store records it: checked, cut to the bounds,
// its ID, time and source filled in, with its entry's key and the calls it
// counts. For the stores of other packages (drivers); see Prepare.
type Prepared struct {
	Event
	Key   Key
	Count int64
}

// Prepare checks ev and fills it in as Record does (an ID when it has
// none; the time, now when zero or in the future; the source), for a
// driver's Record. It fails for an event that cannot be stored.
func Prepare(ev Event, now time.Time) (Prepared, error) {
	p, err := prepare(ev, now)
	return Prepared{Event: p.Event, Key: p.key, Count: p.count}, err
}

// FailScale is the fixed point of an entry's failures as a store keeps
// them (Merge's failed): 1/FailScale of a call.
const FailScale = failScale

// Merge adds the calls of p to e (an entry of p's key; a zero Entry for a
// new one) as the embedded store does: at most maxCount calls counted,
// the latest event's text and offered tools, failed the failures in
// 1/FailScale (e.Failed is it rounded). For a driver's Record.
func Merge(e *Entry, failed *int64, p Prepared, maxCount int) {
	merge(e, failed, prepared{Event: p.Event, key: p.Key, count: p.Count}, maxCount)
}

// Cutoff is the oldest Last an entry may have at now to be kept (zero when
// nothing expires).
func (o Options) Cutoff(now time.Time) time.Time { return o.cutoff(now) }

// Check says what is wrong with a Forget filter, or nil.
func (f Filter) Check() error { return f.check() }
