package thresholds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/toolsrv/toolsrv/registry"
)

// Levels are one set of cut-offs on calibrated scores in [0,1].
type Levels struct {
	// Min is the score a ranked tool needs to be offered.
	Min float64 `json:"min"`
	// ColdMin is the score a tool of tier "cold" needs (at least Min): cold
	// tools are dropped from the context after one unused turn, so offering
	// one on a weak match wastes a load.
	ColdMin float64 `json:"coldMin"`
	// Relative keeps only tools scoring at least Relative × the best score of
	// the ranking; 0 disables the cut.
	Relative float64 `json:"relative"`
	// MaxTools is the most ranked tools offered (hot tools come on top).
	MaxTools int `json:"maxTools"`
	// MinAnswerable (version 2): the answer is "no tool fits" when the
	// ranking's answerability (the learned last step's probability that
	// some tool serves the message, index.Ranking.Answerable) is below it.
	// 0 disables; rankings without an answerability ignore it.
	MinAnswerable float64 `json:"minAnswerable,omitempty"`
	// Mass (version 2): the best tools are offered until their scores add
	// up to Mass × the answerability (with learned scores, a tool's score is
	// answerability × its share of the candidates: Mass is the share of the
	// probability the offered set covers). A clear winner is offered alone,
	// a flat ranking gets more tools (up to MaxTools). 0 disables.
	Mass float64 `json:"mass,omitempty"`
	// Evidence (version 2): a tool whose only evidence is the embedding
	// (it matched no word of the message: Context.Unmatched) is offered
	// only if its embedding score (Candidate.Dense) is at least Evidence,
	// even as the best tool: a message that shares nothing with any tool
	// and resembles none gets "no tool fits", however its answerability
	// came out. 0 disables.
	Evidence float64 `json:"evidence,omitempty"`
}

// levelsJSON is Levels without its methods, for decoding.
type levelsJSON Levels

// UnmarshalJSON reads l, refusing an unknown field (a typo in a
// hand-edited file) but for "noise", a level of earlier releases that no
// rule uses any more (a tool whose only evidence is the embedding is
// never offered after another, whatever its score: the noise rule of
// Select): it is read and ignored, so that their files still load.
func (l *Levels) UnmarshalJSON(data []byte) error {
	var v struct {
		levelsJSON
		Noise *float64 `json:"noise"` // obsolete
	}
	if err := decodeStrict(data, &v); err != nil {
		return err
	}
	*l = Levels(v.levelsJSON)
	return nil
}

// UnmarshalJSON reads p as Levels.UnmarshalJSON reads its levels (the
// embedded Levels' method would otherwise decode p whole).
func (p *Policy) UnmarshalJSON(data []byte) error {
	var v struct {
		levelsJSON
		Noise    *float64 `json:"noise"` // obsolete
		Degraded *Levels  `json:"degraded"`
	}
	if err := decodeStrict(data, &v); err != nil {
		return err
	}
	p.Levels, p.Degraded = Levels(v.levelsJSON), v.Degraded
	return nil
}

// decodeStrict decodes data into v, refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Validate says what is wrong with l, if anything.
func (l Levels) Validate() error {
	var errs []error
	in01 := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("%s = %v: must be within [0,1]", name, v))
		}
	}
	in01("min", l.Min)
	in01("coldMin", l.ColdMin)
	in01("relative", l.Relative)
	in01("minAnswerable", l.MinAnswerable)
	in01("mass", l.Mass)
	in01("evidence", l.Evidence)
	if l.ColdMin < l.Min {
		errs = append(errs, fmt.Errorf("coldMin = %v is below min = %v: cold tools need the stricter score", l.ColdMin, l.Min))
	}
	if l.MaxTools < 1 {
		errs = append(errs, fmt.Errorf("maxTools = %d: must be at least 1", l.MaxTools))
	}
	return errors.Join(errs...)
}

// Policy is the inclusion policy: the cut-offs for normal rankings and,
// optionally, for degraded (lexical-only) ones.
type Policy struct {
	Levels
	// Degraded replaces Levels when the ranking is degraded; nil: Levels.
	Degraded *Levels `json:"degraded,omitempty"`
}

// Validate checks both sets of levels.
func (p Policy) Validate() error {
	if err := p.Levels.Validate(); err != nil {
		return err
	}
	if p.Degraded != nil {
		if err := p.Degraded.Validate(); err != nil {
			return fmt.Errorf("degraded: %w", err)
		}
	}
	return nil
}

// For returns the levels that apply to a ranking.
func (p Policy) For(degraded bool) Levels {
	if degraded && p.Degraded != nil {
		return *p.Degraded
	}
	return p.Levels
}

// Candidate is one ranked tool: its name and calibrated score, and its
// calibrated embedding score (index.Hit.Dense; 0 in a lexical-only
// ranking), which the evidence rule reads.
type Candidate struct {
	Name  string
	Score float64
	Dense float64
}

// Context is what Select needs besides the ranking.
type Context struct {
	// Tier gives a tool's tier; nil (or "") means warm. TierOf(catalog)
	// builds one from a registry catalog.
	Tier func(name string) registry.Tier
	// Hot are the tools always offered, whatever their score: the hot tools
	// of the agent's profile (ProfileHot). They come after the ranked
	// tools and do not count against MaxTools.
	Hot []string
	// Degraded selects the Degraded levels (set it from index.Ranking.Degraded).
	Degraded bool
	// Answerable is the ranking's answerability (index.Ranking.Answerable;
	// nil: the ranking has none, MinAnswerable and Mass do not apply).
	Answerable *float64
	// Unmatched says whether a ranked tool's only evidence is the
	// embedding (UnmatchedIn builds it from a ranking); nil: none is, and
	// the noise rule does not apply.
	Unmatched func(name string) bool
}

// Why says why a tool is offered.
type Why string

const (
	// ByScore: the tool cleared the thresholds.
	ByScore Why = "score"
	// ByTier: the tool is hot in the agent's profile and always offered.
	ByTier Why = "hot"
)

// Offer is one tool put in front of the model.
type Offer struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"` // 0 for a hot tool absent from the ranking
	Why   Why     `json:"why"`
}

// Selection is the policy's answer for one ranking.
type Selection struct {
	// Tools are the offered tools: ranked ones best first, then hot ones.
	Tools []Offer `json:"tools"`
	// NoToolFits is true when no ranked tool cleared the thresholds: the
	// honest answer is "no tool fits this message" (hot tools may still be
	// offered, as they always are).
	NoToolFits bool `json:"noToolFits"`
	// Best is the best ranked score seen (0 for an empty ranking).
	Best float64 `json:"best"`
	// Answerable repeats Context.Answerable.
	Answerable *float64 `json:"answerable,omitempty"`
	// Levels are the cut-offs that were applied.
	Levels Levels `json:"levels"`
	// Degraded repeats Context.Degraded.
	Degraded bool `json:"degraded,omitempty"`
	// Reason is a one-line explanation, e.g. "no tool fits: best score 0.21 < min 0.35".
	Reason string `json:"reason"`
}

// Names returns the offered tools' names in order.
func (s Selection) Names() []string {
	out := make([]string, len(s.Tools))
	for i, o := range s.Tools {
		out[i] = o.Name
	}
	return out
}

// Ranked returns how many offered tools cleared the thresholds.
func (s Selection) Ranked() int {
	n := 0
	for _, o := range s.Tools {
		if o.Why == ByScore {
			n++
		}
	}
	return n
}

// Select applies the policy to a ranking. hits need not be sorted; they
// should be the whole allowed ranking or at least its top MaxTools×2 (the
// index's Rank with K ≥ MaxTools). Tools the agent may not be offered must
// already be filtered out (index.Query.Allow).
func (p Policy) Select(hits []Candidate, c Context) Selection {
	lv := p.For(c.Degraded)
	sorted := hits
	if !bestFirst(hits) {
		sorted = make([]Candidate, 0, len(hits))
		for _, h := range hits {
			if !math.IsNaN(h.Score) {
				sorted = append(sorted, h)
			}
		}
		sort.SliceStable(sorted, func(i, j int) bool { return before(sorted[i], sorted[j]) })
	}
	sel := Selection{Levels: lv, Degraded: c.Degraded, Answerable: c.Answerable, Tools: make([]Offer, 0, min(lv.MaxTools, len(sorted))+len(c.Hot))}
	if len(sorted) > 0 {
		sel.Best = sorted[0].Score
	}
	cut := lv.Relative * sel.Best
	offered := func(name string) bool {
		for _, o := range sel.Tools {
			if o.Name == name {
				return true
			}
		}
		return false
	}
	var first Rule // the rule that decided the best tool
	walk(sorted, lv, c, cut, offered, false, func(h Candidate, r Rule, _ string) {
		if first == "" {
			first = r
		}
		if r == RuleOffered {
			sel.Tools = append(sel.Tools, Offer{Name: h.Name, Score: h.Score, Why: ByScore})
		}
	})
	ranked := len(sel.Tools)
	sel.NoToolFits = ranked == 0
	for _, name := range c.Hot {
		if offered(name) {
			continue
		}
		score := 0.0
		for _, h := range sorted {
			if h.Name == name {
				score = h.Score
				break
			}
		}
		sel.Tools = append(sel.Tools, Offer{Name: name, Score: score, Why: ByTier})
	}
	sel.Reason = reason(sel, lv, ranked, len(sorted))
	if ranked == 0 && first == RuleEvidence {
		sel.Reason = fmt.Sprintf("no tool fits: no tool matched a word of the message, and the best one's embedding score %.3f < evidence %.3f", sorted[0].Dense, lv.Evidence)
		if hot := len(sel.Tools); hot > 0 {
			sel.Reason += fmt.Sprintf("; %d hot tool(s) offered", hot)
		}
	}
	return sel
}

// Rule says why a ranked tool was offered or left out.
type Rule string

// The rules of Select, in the order it applies them.
const (
	// RuleOffered: the tool cleared every cut-off.
	RuleOffered Rule = "offered"
	// RuleAnswerable: the ranking's answerability is below minAnswerable
	// (the answer is "no tool fits").
	RuleAnswerable Rule = "minAnswerable"
	// RuleMaxTools: maxTools tools were offered before it.
	RuleMaxTools Rule = "maxTools"
	// RuleMin: its score is below min.
	RuleMin Rule = "min"
	// RuleRelative: its score is below relative × the best score.
	RuleRelative Rule = "relative"
	// RuleMass: the tools before it cover mass × the answerability.
	RuleMass Rule = "mass"
	// RuleNoise: a tool that matched no word of the message (its only
	// evidence is the embedding) after another tool was offered: a set is
	// never padded with tools that share no evidence with the message.
	RuleNoise Rule = "noise"
	// RuleEvidence: a tool that matched no word of the message whose
	// embedding score is below evidence (the best tool too).
	RuleEvidence Rule = "evidence"
	// RuleColdMin: a cold tool whose score is below coldMin (never the
	// best tool of the ranking). It ends the set: no tool scoring below it
	// is offered in its place.
	RuleColdMin Rule = "coldMin"
	// RuleBelowCold: a tool scoring below one that coldMin left out.
	RuleBelowCold Rule = "belowColdMin"
	// RuleRepeated: the tool was already offered (a repeated name).
	RuleRepeated Rule = "repeated"
)

// Verdict is what Select decided for one ranked tool, and why.
type Verdict struct {
	Name   string  `json:"name"`
	Score  float64 `json:"score"`
	Rule   Rule    `json:"rule"`
	Detail string  `json:"detail"`
}

// Explain says, for each of the first n tools of the ranking (all of
// them when n ≤ 0), whether Select offers it and the rule that decided;
// hot tools are not included (they are offered whatever their score).
func (p Policy) Explain(hits []Candidate, c Context, n int) []Verdict {
	lv := p.For(c.Degraded)
	sorted := make([]Candidate, 0, len(hits))
	for _, h := range hits {
		if !math.IsNaN(h.Score) {
			sorted = append(sorted, h)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return before(sorted[i], sorted[j]) })
	if n > 0 && len(sorted) > n {
		sorted = sorted[:n]
	}
	cut := 0.0
	if len(sorted) > 0 {
		cut = lv.Relative * sorted[0].Score
	}
	var out []Verdict
	var names []string
	offered := func(name string) bool { return slices.Contains(names, name) }
	walk(sorted, lv, c, cut, offered, true, func(h Candidate, r Rule, detail string) {
		if r == RuleOffered {
			names = append(names, h.Name)
		}
		out = append(out, Verdict{Name: h.Name, Score: h.Score, Rule: r, Detail: detail})
	})
	return out
}

// walk applies the levels to sorted (best first) and tells visit the
// rule for each tool: those Select offers, in order, and (with all) every
// other with the first rule that leaves it out. Without all it stops at
// the first tool after which none can be offered. offered says whether a
// name was offered already.
//
// Three rules look at one tool rather than at its score: a tool that
// matched no word of the message is never offered after another one
// (noise), nor at all when its embedding score is below evidence, and a
// cold tool needs coldMin, unless it is the best of the ranking. None
// leaves a tool out for a worse tool of its kind: noise and evidence make
// way only for tools with evidence the left-out one lacks (a word of the
// message, or a closer embedding), and coldMin ends the set.
func walk(sorted []Candidate, lv Levels, c Context, cut float64, offered func(string) bool, all bool, visit func(Candidate, Rule, string)) {
	// Learned scores (version 2): the answerability and the probability
	// mass the offered set covers.
	unanswerable := c.Answerable != nil && *c.Answerable < lv.MinAnswerable
	mass := math.Inf(1)
	if c.Answerable != nil && lv.Mass > 0 {
		mass = lv.Mass * *c.Answerable
	}
	covered, n := 0.0, 0
	coldCut := "" // the cold tool coldMin left out: the set ends there
	for i, h := range sorted {
		var rule Rule
		var detail string
		switch {
		case unanswerable:
			rule, detail = RuleAnswerable, fmt.Sprintf("the ranking's answerability %.3f < minAnswerable %.3f: no tool fits", *c.Answerable, lv.MinAnswerable)
		case n >= lv.MaxTools:
			rule, detail = RuleMaxTools, fmt.Sprintf("%d tool(s) offered before it (maxTools %d)", n, lv.MaxTools)
		case h.Score < lv.Min:
			rule, detail = RuleMin, fmt.Sprintf("score %.3f < min %.3f", h.Score, lv.Min)
		case h.Score < cut:
			rule, detail = RuleRelative, fmt.Sprintf("score %.3f < %.0f%% of the best score %.3f (relative)", h.Score, 100*lv.Relative, cut/lv.Relative)
		case covered >= mass:
			rule, detail = RuleMass, fmt.Sprintf("the tools before it cover %.3f ≥ %.0f%% of the answerability %.3f (mass)", covered, 100*lv.Mass, *c.Answerable)
		case coldCut != "":
			rule, detail = RuleBelowCold, fmt.Sprintf("it scores below %s, which coldMin left out: no tool is offered in place of a better one", coldCut)
		}
		if rule != "" {
			// Sorted by score: nothing later can clear Min, the relative
			// cut, the mass, the count or the cold tool's cut.
			if !all {
				return
			}
			visit(h, rule, detail)
			continue
		}
		switch {
		case n > 0 && c.Unmatched != nil && c.Unmatched(h.Name):
			visit(h, RuleNoise, "it matched no word of the message (name, description, keywords, examples, usage history): a set is not padded with tools that share no evidence with it")
		case h.Dense < lv.Evidence && c.Unmatched != nil && c.Unmatched(h.Name):
			visit(h, RuleEvidence, fmt.Sprintf("it matched no word of the message, and its embedding score %.3f < evidence %.3f: nothing says it serves the message", h.Dense, lv.Evidence))
		case i > 0 && tierOf(c.Tier, h.Name) == registry.Cold && h.Score < lv.ColdMin:
			visit(h, RuleColdMin, fmt.Sprintf("a cold tool: score %.3f < coldMin %.3f, and not the best tool", h.Score, lv.ColdMin))
			coldCut = h.Name
		case offered(h.Name):
			visit(h, RuleRepeated, "offered already")
		default:
			visit(h, RuleOffered, "")
			covered += h.Score
			n++
		}
	}
}

// before orders candidates best first, ties by name.
func before(a, b Candidate) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

// bestFirst reports whether hits are already in Select's order without
// NaNs (an index ranking is), so Select need not copy and sort them.
func bestFirst(hits []Candidate) bool {
	for i, h := range hits {
		if math.IsNaN(h.Score) || i > 0 && before(h, hits[i-1]) {
			return false
		}
	}
	return true
}

func reason(sel Selection, lv Levels, ranked, n int) string {
	hot := len(sel.Tools) - ranked
	switch {
	case n == 0 && hot == 0:
		return "no tool fits: nothing was ranked"
	case n == 0:
		return fmt.Sprintf("no tool fits: nothing was ranked; %d hot tool(s) offered", hot)
	case ranked == 0 && sel.Answerable != nil && *sel.Answerable < lv.MinAnswerable:
		s := fmt.Sprintf("no tool fits: answerability %.3f < %.3f", *sel.Answerable, lv.MinAnswerable)
		if hot > 0 {
			s += fmt.Sprintf("; %d hot tool(s) offered", hot)
		}
		return s
	case ranked == 0:
		s := fmt.Sprintf("no tool fits: best score %.3f < min %.3f", sel.Best, lv.Min)
		if hot > 0 {
			s += fmt.Sprintf("; %d hot tool(s) offered", hot)
		}
		return s
	case sel.Answerable != nil:
		s := fmt.Sprintf("%d tool(s): answerability %.3f ≥ %.3f; offered until %.0f%% of it is covered (max %d)", ranked, *sel.Answerable, lv.MinAnswerable, 100*lv.Mass, lv.MaxTools)
		if hot > 0 {
			s += fmt.Sprintf("; %d hot tool(s) offered", hot)
		}
		return s
	default:
		s := fmt.Sprintf("%d tool(s) cleared min %.3f and %.0f%% of best %.3f (max %d)", ranked, lv.Min, 100*lv.Relative, sel.Best, lv.MaxTools)
		if hot > 0 {
			s += fmt.Sprintf("; %d hot tool(s) offered", hot)
		}
		return s
	}
}

func tierOf(f func(string) registry.Tier, name string) registry.Tier {
	if f == nil {
		return registry.Warm
	}
	if t := f(name); t != "" {
		return t
	}
	return registry.Warm
}

// TierOf returns a Context.Tier over a catalog (unknown tools are warm).
func TierOf(cat *registry.Catalog) func(string) registry.Tier {
	return func(name string) registry.Tier {
		if cat == nil {
			return registry.Warm
		}
		if t, ok := cat.Get(name); ok {
			return t.Tier
		}
		return registry.Warm
	}
}
