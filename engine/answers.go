package engine

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"
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
	// uses counts the calls and loads in the session so far; answers how
	// many of its answers are remembered.
	uses    uint64
	answers int
}

// asked is one remembered answer.
type asked struct {
	ID      string
	Query   string
	Caller  Caller
	Offered []string
	At      time.Time
	// uses is the session's uses when the answer was given; wentOn is
	// set when it leaves the memory: the session used a tool after it.
	uses   uint64
	wentOn bool
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
	return &answers{byID: map[string]*asked{}, sessions: map[sessionKey]*sessionAnswers{}, now: now, expired: expired}
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
		s.last, rec.uses = rec.ID, s.uses
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
// request the agent is working on, which found the tool some other way;
// tool "" only counts the use). A call marks the answer called; a load
// notes the tool as loaded after it.
func (m *answers) follow(c Caller, cited, tool string, load bool) *asked {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := keyOf(c)
	s := m.sessions[k]
	if c.Session != "" && s != nil {
		s.uses++
	}
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

// dropLocked forgets the oldest answer and returns it, its session's part
// settled: whether the session used a tool after it, and its tools no
// longer linked to it.
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
		a.wentOn = s.uses > a.uses
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
