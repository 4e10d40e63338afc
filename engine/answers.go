package engine

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"
)

// answers remembers the engine's recent answers by ID, so that a call
// citing one (CallRequest.Answer) is linked to what was asked and
// offered. It holds at most answerCap answers, each for answerTTL:
// enough for an agent that asks, thinks and then calls, and bounded
// memory for a server that answers all day.
type answers struct {
	mu    sync.Mutex
	byID  map[string]*asked
	order []string // IDs, oldest first
	now   func() time.Time
	// expired is told of every answer that leaves the memory (age, cap,
	// or the engine's close), whether or not a call cited it.
	expired func(*asked)
}

// asked is one remembered answer.
type asked struct {
	ID      string
	Query   string
	Session string
	Agent   string
	Offered []string
	At      time.Time
	// source is the front end that asked (usage.Event.Source).
	source string
	// Called: a call has cited it. Loaded are the tools loaded after it
	// (9P's tool_load) that no call has cited it for yet.
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
	return &answers{byID: map[string]*asked{}, now: now, expired: expired}
}

// newAnswerID is a random ID, 16 hex digits.
func newAnswerID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// remember gives a an ID and keeps what was asked and offered.
func (m *answers) remember(a *Answer, q Request) {
	if m == nil {
		return
	}
	a.ID = newAnswerID()
	rec := &asked{ID: a.ID, Query: q.Query, Session: q.Session, Agent: q.Agent, Offered: a.Names(), At: m.now(), source: q.Source}
	if rec.Agent == "" && q.Profile != nil {
		rec.Agent = q.Profile.Name
	}
	var gone []*asked
	m.mu.Lock()
	gone = m.expireLocked()
	m.byID[rec.ID] = rec
	m.order = append(m.order, rec.ID)
	for len(m.order) > answerCap {
		gone = append(gone, m.dropLocked())
	}
	m.mu.Unlock()
	m.tell(gone)
}

// cite returns the answer id names, marking it called for tool (nil:
// unknown or expired).
func (m *answers) cite(id, tool string) *asked {
	if m == nil || id == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.byID[id]
	if a == nil || m.now().Sub(a.At) > answerTTL {
		return nil
	}
	a.Called = true
	a.Loaded = slices.DeleteFunc(a.Loaded, func(n string) bool { return n == tool })
	c := *a
	return &c
}

// load notes that tool was loaded after answer id (false: unknown or
// expired).
func (m *answers) load(id, tool string) bool {
	if m == nil || id == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.byID[id]
	if a == nil || m.now().Sub(a.At) > answerTTL {
		return false
	}
	if !slices.Contains(a.Loaded, tool) {
		a.Loaded = append(a.Loaded, tool)
	}
	return true
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

func (m *answers) dropLocked() *asked {
	id := m.order[0]
	m.order = m.order[1:]
	a := m.byID[id]
	delete(m.byID, id)
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
