package engine

import (
	"context"
	"errors"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// ErrNoIndex is returned by Rank on an engine made with NoIndex.
var ErrNoIndex = errors.New("this engine has no index (Options.NoIndex)")

// Rank ranks the catalog for q and decides what to offer. The answer is
// remembered for the calls and loads of q's session (Request.Caller).
func (e *Engine) Rank(ctx context.Context, q Request) (Answer, error) {
	a, err := e.rank(ctx, e.ix, e.reg.Catalog(), q)
	if err != nil {
		return a, err
	}
	e.answers.remember(&a, q)
	return a, nil
}

// rank ranks with ix, the index of cat (the engine's, or a session's:
// see Overlay).
func (e *Engine) rank(ctx context.Context, ix *index.Index, cat *registry.Catalog, q Request) (Answer, error) {
	if ix == nil {
		return Answer{}, ErrNoIndex
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = e.opts.RankTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if q.Limit == 0 && !q.Full {
		q.Limit = e.opts.DefaultLimit
	}
	if len(q.Expect) > 0 {
		if err := checkExpect(q.Expect); err != nil {
			return Answer{}, err
		}
		q.Explain = true
	}
	iq := e.indexQuery(q)
	if q.All || e.pol == nil {
		if iq.K == 0 && !q.Full {
			iq.K = 10
		}
		r, err := ix.Rank(ctx, iq)
		if err != nil {
			return Answer{}, err
		}
		a := Answer{Tools: []Offer{}, Ranking: r, Degraded: r.Degraded, DegradedReason: r.Reason}
		for _, h := range r.Hits {
			a.Tools = append(a.Tools, Offer{Hit: h})
		}
		a.Tools = inCatalog(a.Tools, cat, iq.Allow)
		if q.Explain {
			a.Explain = explain(&a, q, cat, nil, thresholds.Context{}, ix.UsageFit())
			e.suggest(ctx, ix, &a, q, iq, cat, nil, thresholds.Context{}, nil)
		}
		e.noTools(&a, cat)
		return a, nil
	}
	sel, r, err := e.pol.Offer(ctx, ix, cat, iq, q.Profile)
	if err != nil {
		return Answer{}, err
	}
	a := e.answer(sel, r)
	a.Tools = inCatalog(a.Tools, cat, iq.Allow)
	var cut []Offer
	if q.Limit > 0 && len(a.Tools) > q.Limit {
		a.Tools, cut = a.Tools[:q.Limit], a.Tools[q.Limit:]
	}
	if q.Explain {
		allow := iq.Allow
		if allow == nil && q.Profile != nil {
			allow = q.Profile.Allows
		}
		c := thresholds.Context{Tier: thresholds.TierOf(cat), Hot: thresholds.ProfileHot(cat, q.Profile, allow),
			Degraded: r.Degraded || q.Mode == index.Lexical, Answerable: r.Answerable, Unmatched: thresholds.UnmatchedIn(r)}
		a.Explain = explain(&a, q, cat, e.pol, c, ix.UsageFit())
		a.Explain.limited(cut, q.Limit)
		iq.Allow = allow
		e.suggest(ctx, ix, &a, q, iq, cat, e.pol, c, cut)
	}
	e.noTools(&a, cat)
	return a, nil
}

// noTools makes an answer ranked on a catalog without a tool say why, and
// what to do (Options.NoTools).
func (e *Engine) noTools(a *Answer, cat *registry.Catalog) {
	if e.opts.NoTools == nil || len(cat.Tools) > 0 {
		return
	}
	if why := e.opts.NoTools(cat); why != "" {
		a.NoToolFits, a.Reason = true, why
	}
}

// inCatalog keeps the offers of tools cat holds and allow (when set)
// allows: a ranking made just before the catalog changed may still name a
// tool that is gone.
func inCatalog(offers []Offer, cat *registry.Catalog, allow func(string) bool) []Offer {
	out := offers[:0]
	for _, o := range offers {
		if _, ok := cat.Get(o.Name); ok && (allow == nil || allow(o.Name)) {
			out = append(out, o)
		}
	}
	return out
}

// Decide applies the thresholds to a ranking already made for q (a full
// ranking, say, that is also reported as it is).
func (e *Engine) Decide(r index.Ranking, q Request) (Answer, error) {
	if e.pol == nil {
		return Answer{}, errors.New("no thresholds in effect (Options.NoThresholds)")
	}
	cat := e.reg.Catalog()
	iq := e.indexQuery(q)
	c := thresholds.Context{Tier: thresholds.TierOf(cat), Hot: thresholds.ProfileHot(cat, q.Profile, iq.Allow),
		Degraded: r.Degraded || q.Mode == index.Lexical, Answerable: r.Answerable, Unmatched: thresholds.UnmatchedIn(r)}
	a := e.answer(e.pol.Select(thresholds.FromRanking(r), c), r)
	if q.Explain {
		a.Explain = explain(&a, q, cat, e.pol, c, e.UsageFit())
		s := suggestion{q: q, cat: cat, pol: e.pol, hits: thresholds.FromRanking(r), c: c, fit: e.UsageFit()}
		a.Explain.suggest(s, nil, 0)
	}
	return a, nil
}

func (e *Engine) indexQuery(q Request) index.Query {
	iq := index.Query{Text: q.Query, Context: q.Context, K: q.Limit, Mode: q.Mode, Allow: q.Allow, NoLastStep: q.NoLearned}
	if q.Profile != nil && q.Profile.AllowTools != nil {
		prof, allow := q.Profile, q.Allow
		iq.Allow = func(n string) bool { return prof.Allows(n) && (allow == nil || allow(n)) }
	}
	if q.Full {
		iq.K = q.Limit
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
	// Tools is never nil: "tools": [] on the wire, not null.
	a := Answer{Tools: []Offer{}, NoToolFits: sel.NoToolFits, Selection: sel, Ranking: r, Degraded: r.Degraded, DegradedReason: r.Reason}
	if sel.NoToolFits {
		a.Reason = sel.Reason
		if a.Reason == "" {
			a.Reason = "no tool fits this request"
		}
	}
	for _, o := range sel.Tools {
		h, ok := byName[o.Name]
		if !ok { // a hot tool the ranking did not reach
			h = index.Hit{Name: o.Name, Score: o.Score}
		}
		a.Tools = append(a.Tools, Offer{Hit: h, Hot: o.Why == thresholds.ByTier})
	}
	return a
}
