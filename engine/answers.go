package engine

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// answers is the engine's memory of its answers: each by ID, and per
// session which of its answers last offered each tool, so that a call or
// a load is linked to the answer it follows (capture.go says what that
// records). It holds at most answerCap answers, each for answerTTL: enough
// for an agent that asks, thinks and then calls, and bounded memory for a
// server that answers all day. Transports keep no answers of their own:
// they name the session (Caller) and the tool.
type answers struct {
	mu       sync.Mutex
	byID     map[string]*asked
	order    []string // IDs, oldest first
	sessions map[sessionKey]*sessionAnswers
	now      func() time.Time
	// expired is told of every answer that leaves the memory (age, cap,
	// or the engine's close), whether or not a call followed it.
	expired func(*asked)
	// bounds are the sessions' rates of adding evidence (admit), at most
	// sessionKept of them, the least recently used forgotten first.
	bounds map[boundKey]*bound
}

// The bound on the rate at which one session adds evidence to the usage
// history (capture.go): sessionBurst requests or tools new to the session
// at once, one more every sessionRefill (about 20 an hour), the
// (request, tool) pairs it recorded remembered up to sessionSeen (their
// further calls are free: they add evidence to no new entry). A working
// session asks about a few things an hour; twenty calls, each claiming
// another wording of one request, are what a hostile page can make an
// agent do.
//
// New sessions of one principal (its unit, usage.Unit) share a second,
// larger bound, so that opening sessions does not renew the allowance:
// unitBurst at once, one more every unitRefill (about 60 an hour).
const (
	sessionBurst  = 5
	sessionRefill = 3 * time.Minute
	sessionSeen   = 64
	sessionKept   = 4096
	unitBurst     = 20
	unitRefill    = time.Minute
)

// boundKey is one session of one principal (a client that names no
// session: the principal's one-off calls).
type boundKey struct {
	session   sessionKey
	principal string
}

// bound is a session's tokens (at the last time counted) and the pairs it
// recorded.
type bound struct {
	tokens float64
	at     time.Time
	seen   map[string]bool
}

// sessionKey is one session of one agent of one client of one transport:
// calls and loads follow the answers given to the same key. Without a
// session (a one-off ranking; MCP's 2026-07-28 over HTTP), a call follows
// an answer only by citing it, given to the same client.
type sessionKey struct{ transport, session, agent, client string }

func keyOf(c Caller) sessionKey { return sessionKey{c.Transport, c.Session, c.Agent, c.Client} }

// sessionAnswers is what the memory knows of one session.
type sessionAnswers struct {
	// offered maps each tool to the ID of the session's latest answer that
	// offered it; last is the session's latest answer.
	offered map[string]string
	last    string
	// answers is how many of its answers are remembered.
	answers int
}

// asked is one remembered answer.
type asked struct {
	ID      string
	Query   string
	Caller  Caller
	Offered []string
	At      time.Time
	// Called: a call has followed it. Loaded are the tools loaded after
	// it that no call has followed it for yet.
	Called bool
	Loaded []string
}

const (
	answerCap = 4096
	answerTTL = time.Hour
)

func newAnswers(now func() time.Time, expired func(*asked)) *answers {
	if now == nil {
		now = time.Now
	}
	return &answers{byID: map[string]*asked{}, sessions: map[sessionKey]*sessionAnswers{}, now: now, expired: expired,
		bounds: map[boundKey]*bound{}}
}

// admit says whether c's session, speaking as principal, may record an
// event of request (normalized) and tool now, and counts it.
func (m *answers) admit(c Caller, principal, request, tool string) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	b := m.bucket(boundKey{keyOf(c), principal}, sessionBurst, sessionRefill, now)
	pair := tool + "\x00" + request
	if b.seen[pair] {
		return true
	}
	u := m.bucket(boundKey{principal: "unit:" + usage.Unit(principal)}, unitBurst, unitRefill, now)
	if b.tokens < 1 || u.tokens < 1 {
		return false
	}
	b.tokens--
	u.tokens--
	if len(b.seen) < sessionSeen {
		b.seen[pair] = true
	}
	return true
}

// bucket is k's bound (made full when new, the least recently used one
// forgotten past sessionKept), its tokens counted up to now.
func (m *answers) bucket(k boundKey, burst float64, refill time.Duration, now time.Time) *bound {
	b := m.bounds[k]
	if b == nil {
		if len(m.bounds) >= sessionKept {
			var oldest boundKey
			var at time.Time
			for k2, b2 := range m.bounds {
				if at.IsZero() || b2.at.Before(at) {
					oldest, at = k2, b2.at
				}
			}
			delete(m.bounds, oldest)
		}
		b = &bound{tokens: burst, at: now, seen: map[string]bool{}}
		m.bounds[k] = b
	}
	b.tokens = min(burst, b.tokens+float64(now.Sub(b.at))/float64(refill))
	b.at = now
	return b
}

// settle returns a copy of the answer a client says it answered without
// a tool (cited, given to c's session, still remembered; or the session's
// latest), marked as followed; nil when there is none.
func (m *answers) settle(c Caller, cited string) *asked {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(c)
	id := cited
	if id == "" {
		if s := m.sessions[k]; s != nil {
			id = s.last
		}
	}
	a := m.byID[id]
	if id == "" || a == nil || keyOf(a.Caller) != k || m.now().Sub(a.At) > answerTTL {
		return nil
	}
	a.Called = true
	c2 := *a
	return &c2
}

// newAnswerID is a random ID, 16 hex digits.
func newAnswerID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// remember gives a an ID and keeps what was asked and offered, and for q's
// session, that a offered its tools.
func (m *answers) remember(a *Answer, q Request) {
	if m == nil {
		return
	}
	a.ID = newAnswerID()
	rec := &asked{ID: a.ID, Query: q.Query, Caller: q.Caller, Offered: a.Names(), At: m.now()}
	if rec.Caller.Agent == "" && q.Profile != nil {
		rec.Caller.Agent = q.Profile.Name
	}
	var gone []*asked
	m.mu.Lock()
	gone = m.expireLocked()
	m.byID[rec.ID] = rec
	m.order = append(m.order, rec.ID)
	if rec.Caller.Session != "" {
		k := keyOf(rec.Caller)
		s := m.sessions[k]
		if s == nil {
			s = &sessionAnswers{offered: map[string]string{}}
			m.sessions[k] = s
		}
		s.answers++
		s.last = rec.ID
		for _, t := range rec.Offered {
			s.offered[t] = rec.ID
		}
	}
	for len(m.order) > answerCap {
		gone = append(gone, m.dropLocked())
	}
	m.mu.Unlock()
	m.tell(gone)
}

// follow notes a call (load false) or a load of tool by c and returns a
// copy of the answer it follows (nil: none): the answer cited, if it was
// given to c's session and is still remembered; else, in a session, the
// session's latest answer that offered tool, else its latest answer (the
// request the agent is working on, which found the tool some other way).
// A call marks the answer called; a load notes the tool as loaded after
// it.
func (m *answers) follow(c Caller, cited, tool string, load bool) *asked {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(c)
	s := m.sessions[k]
	id := cited
	if id == "" && s != nil && tool != "" {
		if id = s.offered[tool]; id == "" {
			id = s.last
		}
	}
	a := m.byID[id]
	if id == "" || a == nil || keyOf(a.Caller) != k || m.now().Sub(a.At) > answerTTL {
		return nil
	}
	if load {
		if !slices.Contains(a.Loaded, tool) {
			a.Loaded = append(a.Loaded, tool)
		}
	} else {
		a.Called = true
		a.Loaded = slices.DeleteFunc(a.Loaded, func(n string) bool { return n == tool })
	}
	c2 := *a
	return &c2
}

// close lets every remembered answer go (the engine closes).
func (m *answers) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	var gone []*asked
	for len(m.order) > 0 {
		gone = append(gone, m.dropLocked())
	}
	m.mu.Unlock()
	m.tell(gone)
}

func (m *answers) expireLocked() []*asked {
	var gone []*asked
	now := m.now()
	for len(m.order) > 0 {
		a := m.byID[m.order[0]]
		if a != nil && now.Sub(a.At) <= answerTTL {
			break
		}
		gone = append(gone, m.dropLocked())
	}
	return gone
}

// dropLocked forgets the oldest answer and returns it, its tools no longer
// linked to it in its session.
func (m *answers) dropLocked() *asked {
	id := m.order[0]
	m.order = m.order[1:]
	a := m.byID[id]
	delete(m.byID, id)
	if a == nil || a.Caller.Session == "" {
		return a
	}
	k := keyOf(a.Caller)
	if s := m.sessions[k]; s != nil {
		for _, t := range a.Offered {
			if s.offered[t] == id {
				delete(s.offered, t)
			}
		}
		if s.answers--; s.answers <= 0 {
			delete(m.sessions, k)
		}
	}
	return a
}

func (m *answers) tell(gone []*asked) {
	if m.expired == nil {
		return
	}
	for _, a := range gone {
		if a != nil {
			m.expired(a)
		}
	}
}
