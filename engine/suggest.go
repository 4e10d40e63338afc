package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/text"
	"github.com/toolsrv/toolsrv/thresholds"
)

// SuggestionKind names what a Suggestion changes. The kinds are a closed
// set (SuggestionKinds); a client may act on the kind and show the text.
type SuggestionKind string

// The kinds of change an explanation suggests, in the order it gives them
// for a tool: what is specific to this request first, the thresholds
// (which move every request) after the tool's own text.
const (
	// SuggestLimit: the thresholds offer the tool, the request's limit
	// left it out; Suggestion.Limit is the least limit that offers it.
	SuggestLimit SuggestionKind = "limit"
	// SuggestHistory: the usage history took the tool out (ranked
	// without it, the tool is offered): what it lifted above the tool, or
	// how it lowered the answerability.
	SuggestHistory SuggestionKind = "history"
	// SuggestTier: a cold tool below the cold tier's minimum, offered
	// were it warm (Suggestion.Tier: the tier to give it in its .meta).
	SuggestTier SuggestionKind = "tier"
	// SuggestKeyword: words of the message the tool's name, description,
	// keywords and prompt lack (Suggestion.Words); in its "keywords" they
	// give it lexical evidence for this request.
	SuggestKeyword SuggestionKind = "keyword"
	// SuggestExample: the request itself in the tool's "examples"
	// (Suggestion.Example): the usage history counts it as a request
	// that led to the tool, in its author's voice (which can bring the
	// tool in, not push out another the tool's text or the history
	// supports).
	SuggestExample SuggestionKind = "example"
	// SuggestThreshold: the levels of the thresholds file under which
	// this ranking offers the tool (Suggestion.Thresholds: each field,
	// its value now and the value that does it, exact to three decimals).
	SuggestThreshold SuggestionKind = "threshold"
	// SuggestProfile: the agent's profile does not allow the tool; its
	// "allowTools" would.
	SuggestProfile SuggestionKind = "profile"
	// SuggestDefinition: the tool is not in the catalog (no .meta, an
	// invalid one, or no variant for this host): what its .meta needs.
	SuggestDefinition SuggestionKind = "definition"
)

// SuggestionKinds are every kind, in the order an explanation gives them.
func SuggestionKinds() []SuggestionKind {
	return []SuggestionKind{SuggestLimit, SuggestHistory, SuggestTier, SuggestKeyword, SuggestExample,
		SuggestThreshold, SuggestProfile, SuggestDefinition}
}

// Suggestion is one change that would bring a left-out or missing tool
// into the answer, as ToolExplanation.Suggest gives it.
type Suggestion struct {
	Kind SuggestionKind `json:"kind"`
	// Text says it for a person, in one line.
	Text string `json:"text"`
	// Verified: the engine checked that this change alone offers the tool
	// for this request (the same ranking decided again with the change:
	// a limit, a tier, the thresholds, the ranking without the usage
	// history). A change of the tool's text (a keyword, an example)
	// changes the ranking itself, which is not redone: it is true that it
	// gives the tool the evidence named, not that this is enough.
	Verified bool `json:"verified"`
	// Words (keyword) are the words to add, as the index analyses them
	// (lower case, plural endings folded).
	Words []string `json:"words,omitempty"`
	// Example (example) is the request to add.
	Example string `json:"example,omitempty"`
	// Tier (tier) is the tier to give the tool.
	Tier string `json:"tier,omitempty"`
	// Thresholds (threshold) are the levels to change.
	Thresholds []thresholds.Change `json:"thresholds,omitempty"`
	// Limit (limit) is the least limit that offers the tool.
	Limit int `json:"limit,omitempty"`
}

// The rules of tools an explanation names that the ranking does not hold
// (Request.Expect): not offered whatever the thresholds.
const (
	// UnknownRule: no tool of that name (for a client other than the
	// owner, also a tool it may not see).
	UnknownRule = "unknown"
	// HiddenRule: its .meta holds no variant for this host.
	HiddenRule = "hidden"
	// InvalidRule: its .meta has problems.
	InvalidRule = "invalid"
	// ProfileRule: the agent's profile (or the request) does not allow it.
	ProfileRule = "profile"
	// UnrankedRule: in the catalog, but the ranking failed.
	UnrankedRule = "unranked"
)

// maxKeywordWords bounds the words a keyword suggestion names.
const maxKeywordWords = 6

// The registry's bounds on a tool's examples (registry/fieldparse.go): an
// example suggestion the .meta could not hold is not made.
const (
	maxExamples = 64
	maxExample  = 500
)

// suggestion is what the suggestions for one ranking are made from.
type suggestion struct {
	q   Request
	cat *registry.Catalog
	pol *thresholds.Policy // nil: no thresholds applied
	// hits and c are the ranking's candidates and the context the
	// thresholds decided with.
	hits []thresholds.Candidate
	c    thresholds.Context
	fit  index.UsageFit
}

// forTool is the suggestions for a tool the answer leaves out, except
// the limit's and the history's (which need the answer and another
// ranking): the tier, keywords, an example, the thresholds.
func (s suggestion) forTool(te ToolExplanation) []Suggestion {
	var out []Suggestion
	t, ok := s.cat.Get(te.Name)
	if !ok {
		return nil
	}
	if s.pol != nil && te.Rule == string(thresholds.RuleColdMin) {
		c := s.c
		tier := c.Tier
		c.Tier = func(n string) registry.Tier {
			if n == te.Name {
				return registry.Warm
			}
			if tier == nil {
				return registry.Warm
			}
			return tier(n)
		}
		if slices.Contains(s.pol.Select(s.hits, c).Names(), te.Name) {
			lv := s.pol.For(s.c.Degraded)
			out = append(out, Suggestion{Kind: SuggestTier, Tier: string(registry.Warm), Verified: true,
				Text: fmt.Sprintf(`this tool is cold: %.3f < coldMin %.3f; "tier": "warm" in its .meta offers it`, te.Score, lv.ColdMin)})
		}
	}
	if words := keywordWords(t, s.q.Query, te.Matched); len(words) > 0 {
		out = append(out, Suggestion{Kind: SuggestKeyword, Words: words,
			Text: fmt.Sprintf(`its text lacks %s: add to "keywords" in its .meta those that say what it does`, quoteAll(words))})
	}
	if len(s.q.Query) <= maxExample && len(t.Examples) < maxExamples {
		out = append(out, Suggestion{Kind: SuggestExample, Example: s.q.Query,
			Text: `add this request to "examples" in its .meta, as a request it serves (examples bring a tool in; they never push out another)`})
	}
	if s.pol != nil {
		if _, ch, ok := s.pol.Admit(s.hits, s.c, te.Name); ok && len(ch) > 0 && fewEnough(ch) {
			parts := make([]string, len(ch))
			for i, x := range ch {
				parts[i] = fmt.Sprintf("%s %s → %s", x.Field, level(x.From), level(x.To))
				if x.To == 0 && offAtZero(x.Field[strings.LastIndexByte(x.Field, '.')+1:]) {
					parts[i] += " (off)"
				}
			}
			out = append(out, Suggestion{Kind: SuggestThreshold, Thresholds: ch, Verified: true,
				Text: "in the thresholds file, " + strings.Join(parts, ", ") + " (for every request)"})
		}
	}
	return out
}

// offAtZero says whether 0 turns the level off.
func offAtZero(level string) bool {
	switch level {
	case "relative", "minAnswerable", "mass", "evidence":
		return true
	}
	return false
}

// fewEnough says whether a thresholds change offers at most explainTools
// tools: past that, the ranking is the problem, not the cut.
func fewEnough(ch []thresholds.Change) bool {
	for _, x := range ch {
		if strings.HasSuffix(x.Field, ".maxTools") && x.To > explainTools {
			return false
		}
	}
	return true
}

// level writes a level as the thresholds file holds it.
func level(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// keywordWords are the words of query that t's weighted fields (those of
// matched whose weight is above 0) lack and that, added to its keywords,
// the index would find there: each checked with the index's own analysis,
// so that none is a stop word or a word its analysis drops. Words without
// a letter, or of one letter, are not suggested.
func keywordWords(t *registry.Tool, query string, matched []index.FieldMatch) []string {
	has := map[string]bool{}
	for _, m := range matched {
		if m.Weight > 0 {
			for _, w := range m.Words {
				has[w] = true
			}
		}
	}
	var words []string
	for _, w := range text.Index().Terms(query) {
		if !has[w] && !slices.Contains(words, w) && suggestable(w) {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil
	}
	with := *t
	with.Keywords = append(slices.Clip(t.Keywords), words...)
	found := map[string]bool{}
	for _, m := range index.Matches(&with, query) {
		if m.Field == "keywords" && m.Weight > 0 {
			for _, w := range m.Words {
				found[w] = true
			}
		}
	}
	words = slices.DeleteFunc(words, func(w string) bool { return !found[w] })
	if len(words) > maxKeywordWords {
		words = words[:maxKeywordWords]
	}
	return words
}

// suggestable says whether w is worth a keyword: two runes or more, one
// of them a letter, and a word of the message rather than what the
// analysis made of its numbers, symbols or stop words (text.Optional: a
// class term such as "<num>", a phrase of stop words such as "are in
// this", a number word, a hex string), which say nothing of what a tool
// does.
func suggestable(w string) bool {
	return utf8.RuneCountInString(w) >= 2 && strings.IndexFunc(w, unicode.IsLetter) >= 0 && !text.Optional(w)
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	return strings.Join(q, ", ")
}

// suggest ends each tool the explanation of a leaves out with the changes
// that would bring it in, and explains the tools q expects that it does
// not cover (see Request.Expect). ix ranked a with iq; pol (nil: none
// applied) decided with c; cut are the offers the request's limit left
// out.
func (e *Engine) suggest(ctx context.Context, ix *index.Index, a *Answer, q Request, iq index.Query, cat *registry.Catalog, pol *thresholds.Policy, c thresholds.Context, cut []Offer) {
	ex := a.Explain
	if ex == nil {
		return
	}
	s := suggestion{q: q, cat: cat, pol: pol, hits: thresholds.FromRanking(a.Ranking), c: c, fit: ix.UsageFit()}
	ex.suggest(s, cut, q.Limit)
	if pol != nil && s.fit.Entries > 0 {
		// (Whatever the weight chosen for the votes: the owner's
		// repeated calls and the tools' examples count regardless.)
		e.suggestHistory(ctx, ix, a, iq, pol, c, q.Limit)
	}
	e.expected(ctx, ix, a, q, iq, cat, pol, c)
}

// suggest adds the suggestions that need no other ranking: the limit's,
// the tier, keywords, an example, the thresholds.
func (ex *Explanation) suggest(s suggestion, cut []Offer, limit int) {
	for i := range ex.Tools {
		te := &ex.Tools[i]
		if te.Offered {
			continue
		}
		if te.Rule == LimitRule {
			for j, o := range cut {
				if o.Name == te.Name {
					n := limit + j + 1
					te.Suggest = append(te.Suggest, Suggestion{Kind: SuggestLimit, Limit: n, Verified: true,
						Text: fmt.Sprintf(`ask for %d tools or more (rank --limit %d; "limit" in find_tools and 9P's rank requests)`, n, n)})
				}
			}
			continue
		}
		te.Suggest = append(te.Suggest, s.forTool(*te)...)
	}
}

// suggestHistory ranks q again without the usage history and says, of
// each tool the answer leaves out that this ranking offers, what the
// history did.
func (e *Engine) suggestHistory(ctx context.Context, ix *index.Index, a *Answer, iq index.Query, pol *thresholds.Policy, c thresholds.Context, limit int) {
	ex := a.Explain
	out := false
	for _, te := range ex.Tools {
		out = out || !te.Offered && te.Rule != LimitRule && te.Rule != ""
	}
	if !out {
		return
	}
	iq.NoUsage = true
	if iq.K > 0 {
		iq.K = max(iq.K, pol.For(false).MaxTools, pol.For(true).MaxTools)
	}
	plain, err := ix.Rank(ctx, iq)
	if err != nil || plain.Degraded != a.Ranking.Degraded {
		return // (not the same scores: no comparison)
	}
	pc := c
	pc.Answerable, pc.Unmatched = plain.Answerable, thresholds.UnmatchedIn(plain)
	offered := pol.Select(thresholds.FromRanking(plain), pc).Names()
	if limit > 0 && len(offered) > limit {
		offered = offered[:limit]
	}
	for i := range ex.Tools {
		te := &ex.Tools[i]
		if te.Offered || te.Rule == LimitRule || !slices.Contains(offered, te.Name) {
			continue
		}
		// What the history lifted above the tool.
		var lifted []string
		for _, h := range a.Ranking.Hits {
			if h.Name == te.Name {
				break
			}
			if h.Usage > 0 && len(lifted) < 3 {
				lifted = append(lifted, fmt.Sprintf("%s +%.3f", h.Name, h.Usage))
			}
		}
		var did []string
		if len(lifted) > 0 {
			did = append(did, "it lifted "+strings.Join(lifted, ", ")+" above it")
		}
		if a.Ranking.Answerable != nil && plain.Answerable != nil && *a.Ranking.Answerable < *plain.Answerable {
			did = append(did, fmt.Sprintf("it lowered the answerability from %.3f to %.3f (requests like this ended without a tool)", *plain.Answerable, *a.Ranking.Answerable))
		}
		text := "ranked without the usage history (and the tools' examples), it is offered"
		if len(did) > 0 {
			text += ": " + strings.Join(did, "; ")
		}
		te.Suggest = append(te.Suggest, Suggestion{Kind: SuggestHistory, Verified: true, Text: text})
		sortSuggestions(te.Suggest)
	}
}

// sortSuggestions puts sg in the order of SuggestionKinds.
func sortSuggestions(sg []Suggestion) {
	kinds := SuggestionKinds()
	slices.SortStableFunc(sg, func(a, b Suggestion) int {
		return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind)
	})
}

// expected marks the tools q expects that the explanation covers, and
// explains the others: where each ranks and why, or why it is not
// ranked at all.
func (e *Engine) expected(ctx context.Context, ix *index.Index, a *Answer, q Request, iq index.Query, cat *registry.Catalog, pol *thresholds.Policy, c thresholds.Context) {
	ex := a.Explain
	var full *index.Ranking
	for _, name := range q.Expect {
		if i := slices.IndexFunc(ex.Tools, func(te ToolExplanation) bool { return te.Name == name }); i >= 0 {
			ex.Tools[i].Expected = true
			continue
		}
		te := ToolExplanation{Name: name, Expected: true}
		if rule, detail, sg := notRanked(q, iq, cat, name); rule != "" {
			te.Rule, te.Detail, te.Suggest = rule, detail, sg
			ex.Tools = append(ex.Tools, te)
			continue
		}
		if full == nil {
			fq := iq
			fq.K = 0
			r, err := ix.Rank(ctx, fq)
			if err != nil {
				te.Rule, te.Detail = UnrankedRule, "the ranking failed: "+err.Error()
				ex.Tools = append(ex.Tools, te)
				continue
			}
			full = &r
		}
		limit := q.Limit
		if pol == nil {
			limit = len(a.Tools)
		}
		ex.Tools = append(ex.Tools, missing(q, cat, pol, c, *full, name, limit, ix.UsageFit()))
	}
}

// notRanked says why name, which q expects, is not ranked at all (its rule,
// the detail and what to do), or "" when it is ranked. Only the owner (the
// CLI, the Go API) is told which: another client learns that there is no
// such tool among those it may be offered, not that one is hidden from it.
func notRanked(q Request, iq index.Query, cat *registry.Catalog, name string) (string, string, []Suggestion) {
	_, err := cat.Lookup(name)
	allowed := iq.Allow == nil || iq.Allow(name)
	if err == nil && allowed {
		return "", "", nil
	}
	if t := q.Caller.Transport; t != "" && t != "cli" {
		return UnknownRule, fmt.Sprintf("no tool %s among the tools this client may be offered", name), nil
	}
	if err == nil {
		if p := q.Profile; p != nil && !p.Allows(name) {
			where := "its profile"
			if p.File != "" {
				where = p.File
			}
			return ProfileRule, fmt.Sprintf("agent %s's profile does not allow it (allowTools)", p.Name),
				[]Suggestion{{Kind: SuggestProfile, Text: fmt.Sprintf(`add %q to "allowTools" in %s`, name, where)}}
		}
		return ProfileRule, "the request does not allow it", nil
	}
	for _, h := range cat.Hidden {
		if h.Name == name {
			return HiddenRule, "hidden on this host: " + h.Reason,
				[]Suggestion{{Kind: SuggestDefinition, Text: fmt.Sprintf("no variant of %s holds on this host: give it one that does (a variant without \"match\" always holds)", h.File)}}
		}
	}
	for _, p := range cat.Problems {
		if p.Name == name {
			return InvalidRule, "invalid: " + p.Error(),
				[]Suggestion{{Kind: SuggestDefinition, Text: fmt.Sprintf("fix %s (toolsrv validate lists its problems)", p.File)}}
		}
	}
	return UnknownRule, err.Error(),
		[]Suggestion{{Kind: SuggestDefinition, Text: fmt.Sprintf("check the name (toolsrv ls lists the tools), or write %s.meta in a tools directory", name)}}
}

// missing explains name, a tool q expects that the answer's ranking does
// not reach: its place in full (the whole catalog ranked for q), its
// signals and matched words, the rule that leaves it out and what would
// bring it in. limit is the answer's: the request's, or (with no
// thresholds applied) how many of the ranking's top it holds; fit is how
// the ranking weighs the usage history.
func missing(q Request, cat *registry.Catalog, pol *thresholds.Policy, c thresholds.Context, full index.Ranking, name string, limit int, fit index.UsageFit) ToolExplanation {
	te := ToolExplanation{Name: name, Expected: true}
	at := slices.IndexFunc(full.Hits, func(h index.Hit) bool { return h.Name == name })
	if at < 0 {
		te.Rule, te.Detail = UnrankedRule, "the ranking of the whole catalog does not hold it"
		return te
	}
	h := full.Hits[at]
	te.Score, te.Dense, te.Lexical, te.Usage, te.Named, te.Rank = h.Score, h.Dense, h.Lexical, h.Usage, h.Named, at+1
	if t, ok := cat.Get(name); ok {
		te.Matched = index.Matches(t, q.Query)
	}
	hits := thresholds.FromRanking(full)[:at+1]
	fc := c
	fc.Answerable, fc.Unmatched = full.Answerable, thresholds.UnmatchedIn(full)
	if pol != nil {
		vs := pol.Explain(hits, fc, 0)
		if i := slices.IndexFunc(vs, func(v thresholds.Verdict) bool { return v.Name == name }); i >= 0 {
			te.Rule, te.Detail = string(vs[i].Rule), vs[i].Detail
		}
	}
	te.Missing = fmt.Sprintf("it ranks %s of %d", ordinal(at+1), len(full.Hits))
	weighted := false
	for _, m := range te.Matched {
		weighted = weighted || m.Weight > 0
	}
	if !weighted && !h.Named && h.Usage == 0 {
		te.Missing += fmt.Sprintf(": no word of the message is in its name, description, keywords or prompt, and its dense score is %.3f (the best tool's %.3f)", h.Dense, full.Hits[0].Dense)
	}
	if te.Rule == "" || te.Rule == string(thresholds.RuleOffered) {
		// Past the top asked for (no thresholds applied), or offered by
		// the thresholds past the request's limit: a limit of its place
		// holds it.
		te.Rule = LimitRule
		te.Detail = fmt.Sprintf("the limit of %d left it out", limit)
		if pol != nil {
			te.Detail = "the thresholds offer it; " + te.Detail
		}
		te.Suggest = []Suggestion{{Kind: SuggestLimit, Limit: at + 1, Verified: true,
			Text: fmt.Sprintf(`ask for %d tools or more (rank --limit %d; "limit" in find_tools and 9P's rank requests)`, at+1, at+1)}}
		return te
	}
	s := suggestion{q: q, cat: cat, pol: pol, hits: hits, c: fc, fit: fit}
	te.Suggest = s.forTool(te)
	return te
}

// ordinal writes n as "1st", "2nd", "3rd", "4th", …
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
