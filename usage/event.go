package usage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event is one answered request: which tool the agent called for it, or
// none.
type Event struct {
	// Request is the user's request as the agent received it.
	Request string `json:"request"`
	// Tool is the tool called; "" means the request was answered and no
	// tool was called: evidence that no tool fits it.
	Tool string `json:"tool"`
	// OK reports whether the call succeeded.
	OK bool `json:"ok"`
	// Agent names the agent (an MCP client, a 9P session's profile); ""
	// when unknown.
	Agent string `json:"agent"`
	// Principal is who recorded it (principal.go): the owner at the
	// terminal, an MCP client, a 9P session's agent, an imported file,
	// another instance of a shared store. The path the event came by sets
	// it, never the request's text; "" is an unknown one.
	Principal string `json:"principal,omitempty"`
	// Time is when it happened; zero means now. A time in the future is
	// taken as now.
	Time time.Time `json:"time"`
	// Offered are the tools the agent was offered for the request.
	Offered []string `json:"offered,omitempty"`
	// Source is the path it came by: SourceMCP, Source9P, SourceCLI,
	// SourceAPI or SourceImport ("" is taken as SourceAPI).
	Source string `json:"source"`
	// ID is the event's idempotency key: recording an ID the store has
	// seen (within IDWindow) is a no-op. Record sets a random 128-bit hex
	// ID when it is empty.
	ID string `json:"id"`
	// Count is how many identical calls the event stands for; 0 means
	// 1. Imports of merged entries use it.
	Count int `json:"count,omitempty"`
}

// The sources an event can come by.
const (
	SourceMCP    = "mcp"
	Source9P     = "9p"
	SourceCLI    = "cli"
	SourceAPI    = "api"
	SourceImport = "import"
)

// Bounds on what one event may hold; longer fields are cut (a request at
// a rune boundary), so that no caller can make the store hold more than
// Options.Total × these bytes.
const (
	MaxRequest = 2000 // bytes of request text
	MaxName    = 200  // bytes of a tool, agent or source name
	MaxOffered = 64   // offered tools kept per event
	MaxID      = 64   // bytes of an ID
)

// Key identifies an Entry: identical requests for the same tool by the
// same agent and principal are one entry.
type Key struct {
	Request   string `json:"request"` // Normalize(the request text)
	Tool      string `json:"tool"`
	Agent     string `json:"agent"`
	Principal string `json:"principal"`
}

// Entry is what the store keeps of the events of one Key.
type Entry struct {
	Key Key `json:"key"`
	// Text is the request's latest original text: a wording of
	// Key.Request (what the ranking votes with; a store that others can
	// write, PostgreSQL's, gives the key's own when a row's text is not).
	Text string `json:"text"`
	// Count is the calls counted (at most Options.MaxCount), Failed how
	// many of them failed.
	Count  int64 `json:"count"`
	Failed int64 `json:"failed"`
	// First and Last are the times of the first and the latest event.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Offered are the tools offered with the latest event.
	Offered []string `json:"offered,omitempty"`
	// Version is the store's change counter at the entry's last change.
	Version int64 `json:"version"`
}

// Normalize is a request as entries are keyed by: lowercased, every run of
// white space one space, trimmed.
func Normalize(request string) string {
	var b strings.Builder
	b.Grow(len(request))
	space := false
	for _, r := range request {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// NewID is a random 128-bit ID in hex, as Record gives an event without
// one.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// prepared is an event made ready to store: checked, cut to the bounds,
// its time and source filled in.
type prepared struct {
	Event
	key   Key
	count int64
}

// prepare checks ev and fills it in: an ID when it has none, the time
// (now when zero or in the future), the source. It returns an error for an
// event that cannot be stored: an empty request, a negative count, an
// over-long ID, an unknown source.
func prepare(ev Event, now time.Time) (prepared, error) {
	ev.Request = cut(strings.ToValidUTF8(ev.Request, "\uFFFD"), MaxRequest)
	norm := Normalize(ev.Request)
	if norm == "" {
		return prepared{}, errors.New("an event needs a request (it is empty)")
	}
	if ev.Count < 0 {
		return prepared{}, fmt.Errorf("event count %d is negative", ev.Count)
	}
	if len(ev.ID) > MaxID {
		return prepared{}, fmt.Errorf("event ID %.20q... is longer than %d bytes", ev.ID, MaxID)
	}
	switch ev.Source {
	case "":
		ev.Source = SourceAPI
	case SourceMCP, Source9P, SourceCLI, SourceAPI, SourceImport:
	default:
		return prepared{}, fmt.Errorf("unknown event source %q (want %s, %s, %s, %s or %s)",
			cut(ev.Source, MaxName), SourceMCP, Source9P, SourceCLI, SourceAPI, SourceImport)
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Time.IsZero() || ev.Time.After(now) {
		ev.Time = now
	}
	ev.Tool = cut(strings.ToValidUTF8(ev.Tool, "\uFFFD"), MaxName)
	ev.Agent = cut(strings.ToValidUTF8(ev.Agent, "\uFFFD"), MaxName)
	ev.Principal = cut(strings.ToValidUTF8(ev.Principal, "\uFFFD"), MaxName)
	if len(ev.Offered) > MaxOffered {
		ev.Offered = ev.Offered[:MaxOffered]
	}
	offered := make([]string, 0, len(ev.Offered))
	for _, o := range ev.Offered {
		if o = cut(strings.ToValidUTF8(o, "\uFFFD"), MaxName); o != "" {
			offered = append(offered, o)
		}
	}
	ev.Offered = offered
	n := int64(ev.Count)
	if n == 0 {
		n = 1
	}
	return prepared{Event: ev, key: Key{Request: norm, Tool: ev.Tool, Agent: ev.Agent, Principal: ev.Principal}, count: n}, nil
}

// cut shortens s to at most n bytes at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
