package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// Query is one request for tools.
type Query struct {
	// Text is the user's message; Context earlier messages, oldest first.
	Text    string
	Context []string
	// K is how many ranked tools Answer.Ranking holds (0: enough for the
	// thresholds; with All, 10; with Full, the whole catalog).
	K int
	// Full ranks the whole catalog (K is then a cap, 0 for none).
	Full bool
	// Mode is hybrid (the default), lexical or dense.
	Mode index.Mode
	// Profile is the asking agent's (nil: none): only the tools it allows
	// are ranked, and its hot tools are always offered.
	Profile *registry.Profile
	// Allow, when set, further limits the tools ranked.
	Allow func(name string) bool
	// All skips the thresholds: Offered is the top K of the ranking.
	All bool
	// NoLearned ranks with the fixed fusion.
	NoLearned bool
	// Timeout bounds the ranking (Options.RankTimeout).
	Timeout time.Duration
}

// Offer is one tool offered for the prompt.
type Offer struct {
	index.Hit
	// Hot: offered for its tier (a hot tool of the agent's profile), not
	// for its score.
	Hot bool `json:"hot,omitempty"`
}

// Answer is what the engine offers for a Query.
type Answer struct {
	// Offered are the tools for the prompt, best first.
	Offered []Offer `json:"offered"`
	// NoToolFits: nothing in the catalog serves the message (Offered holds
	// at most the agent's hot tools); Reason says why.
	NoToolFits bool   `json:"noToolFits"`
	Reason     string `json:"reason,omitempty"`
	// Selection is the thresholds' decision (zero with Query.All or
	// without thresholds).
	Selection thresholds.Selection `json:"selection"`
	// Ranking is the ranking the decision was made on: Degraded and Reason
	// say whether it fell back to lexical scores.
	Ranking index.Ranking `json:"ranking"`
}

// ErrNoIndex is returned by Rank on an engine made with NoIndex.
var ErrNoIndex = errors.New("this engine has no index (Options.NoIndex)")

// Rank ranks the catalog for q and decides what to offer.
func (e *Engine) Rank(ctx context.Context, q Query) (Answer, error) {
	if e.ix == nil {
		return Answer{}, ErrNoIndex
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = e.opts.RankTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	iq := e.indexQuery(q)
	if q.All || e.pol == nil {
		if iq.K == 0 && !q.Full {
			iq.K = 10
		}
		r, err := e.ix.Rank(ctx, iq)
		if err != nil {
			return Answer{}, err
		}
		a := Answer{Ranking: r}
		for _, h := range r.Hits {
			a.Offered = append(a.Offered, Offer{Hit: h})
		}
		return a, nil
	}
	sel, r, err := e.pol.Offer(ctx, e.ix, e.reg.Catalog(), iq, q.Profile)
	if err != nil {
		return Answer{}, err
	}
	return e.answer(sel, r), nil
}

// Decide applies the thresholds to a ranking already made for q (a full
// ranking, say, that is also reported as it is).
func (e *Engine) Decide(r index.Ranking, q Query) (Answer, error) {
	if e.pol == nil {
		return Answer{}, errors.New("no thresholds in effect (Options.NoThresholds)")
	}
	cat := e.reg.Catalog()
	iq := e.indexQuery(q)
	c := thresholds.Context{Tier: thresholds.TierOf(cat), Hot: thresholds.ProfileHot(cat, q.Profile, iq.Allow),
		Degraded: r.Degraded || q.Mode == index.Lexical, Answerable: r.Answerable}
	return e.answer(e.pol.Select(thresholds.FromRanking(r), c), r), nil
}

func (e *Engine) indexQuery(q Query) index.Query {
	iq := index.Query{Text: q.Text, Context: q.Context, K: q.K, Mode: q.Mode, Allow: q.Allow, NoLastStep: q.NoLearned}
	if q.Profile != nil && q.Profile.AllowTools != nil {
		prof, allow := q.Profile, q.Allow
		iq.Allow = func(n string) bool { return prof.Allows(n) && (allow == nil || allow(n)) }
	}
	if q.Full {
		iq.K = q.K
	} else if iq.K == 0 && !q.All {
		iq.K = 10
	}
	return iq
}

// answer turns a selection into an Answer, with each offered tool's hit.
func (e *Engine) answer(sel thresholds.Selection, r index.Ranking) Answer {
	byName := make(map[string]index.Hit, len(r.Hits))
	for _, h := range r.Hits {
		byName[h.Name] = h
	}
	a := Answer{NoToolFits: sel.NoToolFits, Selection: sel, Ranking: r}
	if sel.NoToolFits {
		a.Reason = sel.Reason
	}
	for _, o := range sel.Tools {
		h, ok := byName[o.Name]
		if !ok { // a hot tool the ranking did not reach
			h = index.Hit{Name: o.Name, Score: o.Score}
		}
		a.Offered = append(a.Offered, Offer{Hit: h, Hot: o.Why == thresholds.ByTier})
	}
	return a
}
