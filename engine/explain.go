package engine

import (
	"fmt"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// explainTools is how many of the ranking's tools an explanation covers
// (besides every offered one).
const explainTools = 10

// Explanation says why an Answer is what it is (Request.Explain): each
// ranked tool's signals, the words that matched it, the rule that offered
// it or left it out, and for a tool left out the changes that would bring
// it in (ToolExplanation.Suggest; suggest.go), for the tools the request
// expects (Request.Expect) too, wherever they rank.
type Explanation struct {
	// Learned: the scores are the learned last step's (each tool's
	// probability of being the one: answerability × its share of the
	// candidates); otherwise the fixed fusion of Dense and Lexical.
	Learned bool `json:"learned"`
	// Answerable is the ranking's answerability (nil without the learned
	// last step).
	Answerable *float64 `json:"answerable,omitempty"`
	// Levels are the cut-offs applied (zero when none were: Request.All).
	Levels thresholds.Levels `json:"levels"`
	// Reason is the decision in one line.
	Reason string `json:"reason,omitempty"`
	// Tools are the ranking's best tools, best first.
	Tools []ToolExplanation `json:"tools"`
	// Usage says how the usage history (with the tools' examples) is
	// weighed: the weight leave-one-out over the installation's own past
	// requests chose, and what it saw (nil: no history in effect).
	Usage *index.UsageFit `json:"usage,omitempty"`
}

// ToolExplanation is one ranked tool's part of an Explanation.
type ToolExplanation struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
	// Dense and Lexical are the calibrated similarity scores; Usage what
	// the usage history (and the tools' examples) added; Named that the
	// message names the tool.
	Dense   float64 `json:"dense"`
	Lexical float64 `json:"lexical"`
	Usage   float64 `json:"usage,omitempty"`
	Named   bool    `json:"named,omitempty"`
	// Offered, and the rule that decided (thresholds.Rule; "hot" for a
	// hot tool of the agent's profile, "" when no thresholds applied) with
	// its numbers.
	Offered bool   `json:"offered"`
	Rule    string `json:"rule,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Matched are the message's words found in each field of the tool.
	Matched []index.FieldMatch `json:"matched,omitempty"`
	// Rank is the tool's place in the ranking (1: the best; 0 for a hot
	// tool the ranking did not reach, or a tool not ranked at all).
	Rank int `json:"rank,omitempty"`
	// Expected: the request named the tool in Request.Expect. Missing
	// says, for an expected tool below the ranking's best, where it ranks
	// and why not higher.
	Expected bool   `json:"expected,omitempty"`
	Missing  string `json:"missing,omitempty"`
	// Suggest are the changes that would bring a tool left out into the
	// answer (none for an offered tool), in the order of
	// SuggestionKinds.
	Suggest []Suggestion `json:"suggest,omitempty"`
}

// explain builds a's explanation for q, whose ranking a holds; pol is nil
// when no thresholds applied; fit is how the ranking's index weighs the
// usage history.
func explain(a *Answer, q Request, cat *registry.Catalog, pol *thresholds.Policy, c thresholds.Context, fit index.UsageFit) *Explanation {
	r := a.Ranking
	ex := &Explanation{Learned: r.Answerable != nil, Answerable: r.Answerable, Tools: []ToolExplanation{}}
	if fit.Entries > 0 {
		ex.Usage = &fit
	}
	offered := map[string]bool{}
	for _, o := range a.Tools {
		offered[o.Name] = true
	}
	verdicts := map[string]thresholds.Verdict{}
	if pol != nil {
		ex.Levels, ex.Reason = a.Selection.Levels, a.Selection.Reason
		for _, v := range pol.Explain(thresholds.FromRanking(r), c, 0) {
			verdicts[v.Name] = v
		}
	}
	text := q.Query
	add := func(h index.Hit, rank int, hot bool) {
		te := ToolExplanation{Name: h.Name, Score: h.Score, Dense: h.Dense, Lexical: h.Lexical, Usage: h.Usage,
			Named: h.Named, Offered: offered[h.Name], Rank: rank}
		if v, ok := verdicts[h.Name]; ok {
			te.Rule, te.Detail = string(v.Rule), v.Detail
		}
		if hot {
			te.Rule, te.Detail = string(thresholds.ByTier), "a hot tool of the agent's profile: always offered"
		}
		if t, ok := cat.Get(h.Name); ok {
			te.Matched = index.Matches(t, text)
		}
		ex.Tools = append(ex.Tools, te)
	}
	seen := map[string]bool{}
	for i, h := range r.Hits {
		if i >= explainTools && !offered[h.Name] {
			continue
		}
		seen[h.Name] = true
		add(h, i+1, false)
	}
	for _, o := range a.Tools {
		if o.Hot && !seen[o.Name] {
			add(o.Hit, 0, true)
		} else if o.Hot {
			for i := range ex.Tools {
				if ex.Tools[i].Name == o.Name {
					ex.Tools[i].Rule, ex.Tools[i].Detail = string(thresholds.ByTier), "a hot tool of the agent's profile: always offered"
				}
			}
		}
	}
	return ex
}

// LimitRule is the rule of a tool the thresholds offer but the request's
// limit (Request.Limit) left out.
const LimitRule = "limit"

// limited says, of each tool in cut (the offers past the request's
// limit), that the limit left it out, and adds the cut to the decision.
func (ex *Explanation) limited(cut []Offer, limit int) {
	if ex == nil || len(cut) == 0 {
		return
	}
	byName := map[string]bool{}
	for _, o := range cut {
		byName[o.Name] = true
	}
	tools := "tools"
	if limit == 1 {
		tools = "tool"
	}
	for i, te := range ex.Tools {
		if byName[te.Name] {
			ex.Tools[i].Offered, ex.Tools[i].Rule = false, LimitRule
			ex.Tools[i].Detail = fmt.Sprintf("the thresholds offer it; the limit of %d %s left it out", limit, tools)
		}
	}
	ex.Reason += fmt.Sprintf("; the limit of %d %s left %d out", limit, tools, len(cut))
}
