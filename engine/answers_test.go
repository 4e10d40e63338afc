package engine

import (
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/index"
)

// The memory of answers is bounded (answerCap answers, each for
// answerTTL), a session's part of it goes with its last answer, and every
// answer that leaves is told once, with whether its session used a tool
// after it.
func TestAnswersMemory(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	var gone []*asked
	m := newAnswers(func() time.Time { return now }, func(a *asked) { gone = append(gone, a) })
	s1 := Caller{Transport: "9p", Session: "s1", Agent: "a"}
	answer := func(c Caller, tools ...string) string {
		a := Answer{}
		for _, n := range tools {
			a.Tools = append(a.Tools, Offer{Hit: index.Hit{Name: n}})
		}
		m.remember(&a, Request{Query: "q", Caller: c})
		return a.ID
	}
	first := answer(s1, "x")
	second := answer(s1, "y")
	if a := m.follow(s1, "", "x", false); a == nil || a.ID != first {
		t.Fatalf("a call of x follows %v, want the answer that offered it", a)
	}
	if a := m.follow(s1, "", "z", false); a == nil || a.ID != second {
		t.Fatalf("a call of z, which no answer offered, follows %v, want the latest answer", a)
	}
	if a := m.follow(Caller{Transport: "mcp", Session: "s1", Agent: "a"}, first, "x", false); a != nil {
		t.Fatalf("another transport's session followed %s", a.ID)
	}

	// Past the TTL nothing is followed, and both answers are told, once.
	now = now.Add(answerTTL + time.Second)
	if a := m.follow(s1, "", "x", false); a != nil {
		t.Fatalf("an expired answer was followed: %s", a.ID)
	}
	answer(Caller{}) // (expiry runs when an answer is remembered)
	if len(gone) != 2 || gone[0].ID != first || gone[1].ID != second || !gone[0].Called || !gone[1].Called || !gone[0].wentOn {
		t.Fatalf("told %+v, want the two answers, called, their session having gone on", gone)
	}
	if len(m.sessions) != 0 {
		t.Errorf("sessions left after their answers went: %v", m.sessions)
	}

	// Past the cap the oldest go, and the sessions' links with them.
	gone = nil
	for i := 0; i < answerCap+10; i++ {
		answer(Caller{Transport: "9p", Session: "s" + string(rune('a'+i%3))}, "t")
	}
	if len(m.byID) != answerCap || len(m.order) != answerCap || len(gone) != 11 {
		t.Errorf("%d answers kept (%d in order), %d told; want %d kept, 11 told", len(m.byID), len(m.order), len(gone), answerCap)
	}
	for k, s := range m.sessions {
		if id := s.offered["t"]; m.byID[id] == nil || m.byID[s.last] == nil {
			t.Errorf("session %v links to a forgotten answer", k)
		}
	}
	m.close()
	if len(m.byID) != 0 || len(m.sessions) != 0 || len(gone) != answerCap+11 {
		t.Errorf("after close: %d answers, %d sessions, %d told", len(m.byID), len(m.sessions), len(gone))
	}
}
