package tune

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/thresholds"
)

// Split assigns queries to the held-out part and to the abstention set by a
// fixed hash of their ID, so every run (and every embedder) sees the same
// parts. Shares are in [0,1].
type Split struct {
	HeldOut float64 // share of each corpus's queries kept out of the sweep
	Abstain float64 // share of queries whose relevant tools are removed
}

// IsHeldOut reports whether the query id belongs to the held-out part.
func (s Split) IsHeldOut(id string) bool { return eval.Share("heldout", id) < s.HeldOut }

// IsAbstain reports whether the query id is an abstention query: its
// relevant tools are removed from the catalog and the right answer is "no
// tool fits".
func (s Split) IsAbstain(id string) bool { return eval.Share("abstain", id) < s.Abstain }

// Query is one labelled query with its ranking, ready to sweep.
type Query struct {
	Corpus   string
	ID       string
	Relevant []string
	// Abstain: the relevant tools were removed from the catalog (filtered
	// out of the ranking) and the right answer is "no tool fits".
	Abstain bool
	HeldOut bool
	// Hits is the top of the ranking, best first (at least the largest
	// MaxTools swept; TopHits is enough).
	Hits []thresholds.Candidate
	// Unmatched[i] says hits[i] matched no word of the message
	// (thresholds.UnmatchedIn); nil: none did.
	Unmatched []bool
	// Answerable is the ranking's learned answerability (nil: none).
	Answerable *float64
}

// TopHits is how many ranked tools a Query keeps: more than any
// MaxTools the sweep tries.
const TopHits = 12

// Grid is the set of levels the sweep tries.
type Grid struct {
	Min      []float64
	Relative []float64
	MaxTools []int
	// ColdMargin is added to Min for ColdMin: the corpora have no cold
	// tools, so the cold minimum cannot be tuned on them.
	ColdMargin float64
	// MinAnswerable, Mass and Evidence (learned scores) are swept too
	// when set.
	MinAnswerable, Mass, Evidence []float64
}

// LearnedGrid is the grid for rankings with a learned answerability
// (version 2 levels): 50 answerability cut-offs × 8 masses × 7 maximum
// counts × 8 minimum scores (a tool is offered while its probability of
// being the one, answerability × share, is at least Min: one tool when one
// clearly wins, more when the ranking is flat) × 7 relative cuts (a tool
// scoring below Relative × the best is noise beside it: the mass rule
// alone keeps adding such tools while the best leaves mass uncovered).
// (Tools that matched no word of the message are never offered after
// another: the noise rule of thresholds.Policy.Select.) × 6 evidence
// levels (the embedding score a tool that matched no word of the message
// needs to be offered at all).
func LearnedGrid() Grid {
	g := Grid{Min: []float64{0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08}, Relative: []float64{0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4}, MaxTools: []int{1, 2, 3, 4, 5, 6, 8},
		Mass: []float64{0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1}, Evidence: []float64{0, 0.1, 0.15, 0.2, 0.25, 0.3}}
	for i := 0; i < 50; i++ {
		g.MinAnswerable = append(g.MinAnswerable, float64(i)/50)
	}
	return g
}

// DefaultGrid is 100 minimums × 10 relative cuts × 6 maximum counts.
func DefaultGrid() Grid {
	g := Grid{Relative: []float64{0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}, MaxTools: []int{1, 2, 3, 4, 5, 8}, ColdMargin: 0.1}
	for i := 0; i < 100; i++ {
		g.Min = append(g.Min, float64(i)/100)
	}
	return g
}

// Objective is what the sweep maximises, stated so a reader can check it.
type Objective struct {
	// MaxOffered caps the macro-average number of tools offered per
	// answerable query.
	MaxOffered float64
	// Tolerance (accuracy objective): the setting chosen is the one that
	// offers the fewest tools among those within Tolerance of the best
	// accuracy whose hit rate is no lower than the best one's (differences
	// that small are noise on a few thousand queries, and fewer tools are
	// cheaper; but saying "no tool fits" to more answerable queries also
	// offers fewer tools, and a tool set that shrinks by missing is no
	// saving).
	Tolerance float64
	// MinAbstain is the macro-average share of abstention queries that must
	// be answered "no tool fits".
	MinAbstain float64
	// Accuracy (version 2): maximise the macro share of queries decided
	// right (a hit, or "no tool fits" on an abstention query) with at most
	// MaxOffered tools offered on average in every corpus, instead of the
	// macro recall.
	Accuracy bool
}

func (o Objective) String() string {
	if o.Accuracy {
		return fmt.Sprintf("maximise the macro accuracy of the decision (share of queries whose offered set holds a relevant tool, or answered \"no tool fits\" when no tool serves them), subject to at most %.2f tools offered per answerable query on average in every corpus and macro abstention recall ≥ %.2f; of the settings within %.3f of the best accuracy and hitting no less often than it, the one offering fewest tools",
			o.MaxOffered, o.MinAbstain, o.Tolerance)
	}
	return fmt.Sprintf("maximise macro recall of offered tools over answerable queries, subject to macro tools offered ≤ %.2f and macro abstention recall ≥ %.2f (abstention queries: relevant tools removed, right answer is \"no tool fits\"); ties: fewer tools offered, then higher abstention precision. If no setting meets both, maximise recall + abstention recall under the tools-offered cap",
		o.MaxOffered, o.MinAbstain)
}

// fastSelect returns which of hits l offers, as a bit per hit (bit i:
// hits[i]; hits beyond 64 are never offered), and how many: the fast path
// of thresholds.Policy.Select for warm tools and no hot tools (the corpora
// have none); unmatched[i] is Context.Unmatched of hits[i] (nil: none).
// TestFastSelectMatchesPolicy holds them equal.
func fastSelect(hits []thresholds.Candidate, unmatched []bool, l thresholds.Levels, ans *float64) (mask uint64, n int) {
	if len(hits) == 0 || ans != nil && *ans < l.MinAnswerable {
		return 0, 0
	}
	mass := math.Inf(1)
	if ans != nil && l.Mass > 0 {
		mass = l.Mass * *ans
	}
	cut := l.Relative * hits[0].Score
	covered := 0.0
	for i, h := range hits {
		if i >= 64 || n >= l.MaxTools || h.Score < l.Min || h.Score < cut || covered >= mass {
			break
		}
		if unmatched != nil && unmatched[i] && (n > 0 || h.Dense < l.Evidence) {
			continue // the noise and evidence rules: no tool without evidence
		}
		covered += h.Score
		mask |= 1 << i
		n++
	}
	return mask, n
}

// acc accumulates Figures for one corpus.
type acc struct {
	queries, abstain       int
	recall, precision      float64
	precN                  int
	offered                float64
	abstainRight, saidNone int
	hits                   int
}

func (a *acc) add(q *Query, l thresholds.Levels) {
	mask, n := fastSelect(q.Hits, q.Unmatched, l, q.Answerable)
	if q.Abstain {
		a.abstain++
		if n == 0 {
			a.abstainRight++
			a.saidNone++
		}
		return
	}
	a.queries++
	if n == 0 {
		a.saidNone++
		return
	}
	hit := 0
	for i, h := range q.Hits {
		if mask&(1<<i) == 0 {
			continue
		}
		for _, r := range q.Relevant {
			if h.Name == r {
				hit++
				break
			}
		}
	}
	if len(q.Relevant) > 0 {
		a.recall += float64(hit) / float64(len(q.Relevant))
	}
	a.precision += float64(hit) / float64(n)
	a.precN++
	a.offered += float64(n)
	if hit > 0 {
		a.hits++
	}
}

func (a *acc) figures() thresholds.Figures {
	f := thresholds.Figures{Queries: a.queries, Abstain: a.abstain, AbstainPrecision: 1}
	if a.queries > 0 {
		f.Recall = a.recall / float64(a.queries)
		f.Offered = a.offered / float64(a.queries)
	}
	if a.precN > 0 {
		f.Precision = a.precision / float64(a.precN)
	}
	if a.abstain > 0 {
		f.AbstainRecall = float64(a.abstainRight) / float64(a.abstain)
	}
	if a.saidNone > 0 {
		f.AbstainPrecision = float64(a.abstainRight) / float64(a.saidNone)
	}
	if a.queries > 0 {
		f.Hit = float64(a.hits) / float64(a.queries)
	}
	if n := a.queries + a.abstain; n > 0 {
		f.Accuracy = float64(a.hits+a.abstainRight) / float64(n)
	}
	return f
}

// Evaluate measures l on the queries, per corpus.
func Evaluate(qs []Query, l thresholds.Levels) map[string]thresholds.Figures {
	accs := map[string]*acc{}
	for i := range qs {
		a := accs[qs[i].Corpus]
		if a == nil {
			a = &acc{}
			accs[qs[i].Corpus] = a
		}
		a.add(&qs[i], l)
	}
	out := make(map[string]thresholds.Figures, len(accs))
	for c, a := range accs {
		out[c] = a.figures()
	}
	return out
}

// MacroFigures averages figures over corpora, each corpus weighing the same
// (eval.Mean); counts are summed. The corpora are taken in name order: map
// order would change the last digits from run to run, and with them which
// of two equal points wins.
func MacroFigures(per map[string]thresholds.Figures) thresholds.Figures {
	var m thresholds.Figures
	if len(per) == 0 {
		return m
	}
	fs := make([]thresholds.Figures, 0, len(per))
	for _, c := range slices.Sorted(maps.Keys(per)) {
		f := per[c]
		m.Queries += f.Queries
		m.Abstain += f.Abstain
		fs = append(fs, f)
	}
	m.Recall = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.Recall })
	m.Precision = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.Precision })
	m.Offered = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.Offered })
	m.AbstainRecall = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.AbstainRecall })
	m.AbstainPrecision = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.AbstainPrecision })
	m.Hit = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.Hit })
	m.Accuracy = eval.Mean(fs, func(f *thresholds.Figures) float64 { return f.Accuracy })
	return m
}

// Point is one swept setting and its macro figures on the tuning part.
type Point struct {
	Levels thresholds.Levels
	Macro  thresholds.Figures
	// MaxOffered is the largest per-corpus mean number of tools offered.
	MaxOffered float64
}

// Result is the outcome of a sweep.
type Result struct {
	Objective Objective
	Chosen    Point
	// Feasible is false when no setting met both constraints (the fallback
	// objective was used).
	Feasible bool
	Points   []Point
	// HeldOut are the chosen levels' figures on the held-out part, per corpus.
	HeldOut map[string]thresholds.Figures
	// Tuning are the chosen levels' figures on the tuning part, per corpus.
	Tuning map[string]thresholds.Figures
}

// Sweep tries every setting of the grid on the tuning part of qs, picks one
// by the objective, and measures it on the held-out part. progress (may be
// nil) is called after each setting.
func Sweep(qs []Query, g Grid, obj Objective, progress func(done, total int)) Result {
	var tune, held []Query
	for _, q := range qs {
		if q.HeldOut {
			held = append(held, q)
		} else {
			tune = append(tune, q)
		}
	}
	mas, masses, evidences := g.MinAnswerable, g.Mass, g.Evidence
	if len(mas) == 0 {
		mas = []float64{0}
	}
	if len(masses) == 0 {
		masses = []float64{0}
	}
	if len(evidences) == 0 {
		evidences = []float64{0}
	}
	total := len(g.Min) * len(g.Relative) * len(g.MaxTools) * len(mas) * len(masses) * len(evidences)
	res := Result{Objective: obj, Points: make([]Point, 0, total)}
	done := 0
	for _, mt := range g.MaxTools {
		for _, rel := range g.Relative {
			for _, mn := range g.Min {
				for _, ma := range mas {
					for _, ms := range masses {
						for _, ev := range evidences {
							l := thresholds.Levels{Min: mn, ColdMin: math.Min(1, math.Round((mn+g.ColdMargin)*1e6)/1e6), Relative: rel, MaxTools: mt, MinAnswerable: ma, Mass: ms, Evidence: ev}
							per := Evaluate(tune, l)
							p := Point{Levels: l, Macro: MacroFigures(per)}
							for _, f := range per {
								p.MaxOffered = max(p.MaxOffered, f.Offered)
							}
							res.Points = append(res.Points, p)
							done++
							if progress != nil {
								progress(done, total)
							}
						}
					}
				}
			}
		}
	}
	better := func(a, b Point, feasible bool) bool { // a better than b?
		sa, sb := a.Macro.Recall, b.Macro.Recall
		if obj.Accuracy {
			sa, sb = a.Macro.Accuracy, b.Macro.Accuracy
		}
		if !feasible {
			sa += a.Macro.AbstainRecall
			sb += b.Macro.AbstainRecall
		}
		if sa != sb {
			return sa > sb
		}
		if a.Macro.Offered != b.Macro.Offered {
			return a.Macro.Offered < b.Macro.Offered
		}
		return a.Macro.AbstainPrecision > b.Macro.AbstainPrecision
	}
	pick := func(feasible bool) (Point, bool) {
		var best Point
		found := false
		for _, p := range res.Points {
			if p.Macro.Offered > obj.MaxOffered || obj.Accuracy && p.MaxOffered > obj.MaxOffered {
				continue
			}
			if feasible && p.Macro.AbstainRecall < obj.MinAbstain {
				continue
			}
			if !found || better(p, best, feasible) {
				best, found = p, true
			}
		}
		return best, found
	}
	if p, ok := pick(true); ok {
		res.Chosen, res.Feasible = p, true
		if obj.Accuracy && obj.Tolerance > 0 {
			// Within Tolerance of the best accuracy, hitting no less
			// often, the fewest tools.
			for _, q := range res.Points {
				if q.Macro.Offered > obj.MaxOffered || q.MaxOffered > obj.MaxOffered || q.Macro.AbstainRecall < obj.MinAbstain {
					continue
				}
				if q.Macro.Accuracy >= p.Macro.Accuracy-obj.Tolerance && q.Macro.Hit >= p.Macro.Hit && q.Macro.Offered < res.Chosen.Macro.Offered {
					res.Chosen = q
				}
			}
		}
	} else if p, ok := pick(false); ok {
		res.Chosen = p
	} else {
		// Even the strictest setting offers too many: take the one that
		// offers fewest.
		res.Chosen = res.Points[0]
		for _, p := range res.Points {
			if p.Macro.Offered < res.Chosen.Macro.Offered {
				res.Chosen = p
			}
		}
	}
	res.Tuning = Evaluate(tune, res.Chosen.Levels)
	res.HeldOut = Evaluate(held, res.Chosen.Levels)
	return res
}

// Curve returns the points that vary one level with the others fixed at
// the chosen ones, sorted by that level: vary is "min", "relative",
// "answerable" (MinAnswerable) or "mass".
func (r Result) Curve(vary string) []Point {
	var out []Point
	c := r.Chosen.Levels
	for _, p := range r.Points {
		l := p.Levels
		same := l.MaxTools == c.MaxTools
		switch vary {
		case "min":
			same = same && l.Relative == c.Relative && l.MinAnswerable == c.MinAnswerable && l.Mass == c.Mass
		case "relative":
			same = same && l.Min == c.Min && l.MinAnswerable == c.MinAnswerable && l.Mass == c.Mass
		case "answerable":
			same = same && l.Min == c.Min && l.Relative == c.Relative && l.Mass == c.Mass
		case "mass":
			same = same && l.Min == c.Min && l.Relative == c.Relative && l.MinAnswerable == c.MinAnswerable
		}
		if same {
			out = append(out, p)
		}
	}
	key := func(p Point) float64 {
		switch vary {
		case "relative":
			return p.Levels.Relative
		case "answerable":
			return p.Levels.MinAnswerable
		case "mass":
			return p.Levels.Mass
		}
		return p.Levels.Min
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}

// Table formats per-corpus figures as an aligned text table.
func Table(per map[string]thresholds.Figures) string {
	names := make([]string, 0, len(per))
	for c := range per {
		names = append(names, c)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %7s %7s %7s %7s %9s %8s %9s %9s %8s\n", "corpus", "queries", "abstain", "hit", "recall", "precision", "offered", "abst.rec", "abst.prec", "accuracy")
	row := func(name string, f thresholds.Figures) {
		fmt.Fprintf(&b, "%-16s %7d %7d %7.3f %7.3f %9.3f %8.2f %9.3f %9.3f %8.3f\n", name, f.Queries, f.Abstain, f.Hit, f.Recall, f.Precision, f.Offered, f.AbstainRecall, f.AbstainPrecision, f.Accuracy)
	}
	for _, c := range names {
		row(c, per[c])
	}
	row("macro", MacroFigures(per))
	return b.String()
}

// ColdShare is the share of tools ColdMin treats as cold (by a fixed
// hash of the name): the corpora mark none.
const ColdShare = 0.2

// IsCold says whether ColdMin treats tool name of corpus as cold.
func IsCold(corpus, name string) bool { return eval.Share("cold", corpus+"/"+name) < ColdShare }

// ColdMin chooses the score a cold tool needs: a fixed fifth of each
// corpus's tools are treated as cold, and ColdMin is the lowest score (at
// least l.Min, in steps of 0.01) at which the cold tools l offers on the
// tuning part (answerable queries) are relevant at least half the time:
// a cold tool is dropped after one unused turn, so offering one is only
// worth it when it is more likely used than not. 1 when no score gets
// there. It also returns how many cold offers it saw.
func ColdMin(qs []Query, l thresholds.Levels) (float64, int) {
	type offer struct {
		score float64
		rel   bool
	}
	var offers []offer
	for i := range qs {
		q := &qs[i]
		if q.HeldOut || q.Abstain {
			continue
		}
		mask, _ := fastSelect(q.Hits, q.Unmatched, l, q.Answerable)
		rel := map[string]bool{}
		for _, r := range q.Relevant {
			rel[r] = true
		}
		for i, h := range q.Hits {
			if mask&(1<<i) != 0 && IsCold(q.Corpus, h.Name) {
				offers = append(offers, offer{h.Score, rel[h.Name]})
			}
		}
	}
	for c := math.Round(l.Min*100) / 100; c <= 1; c = math.Round((c+0.01)*100) / 100 {
		n, good := 0, 0
		for _, o := range offers {
			if o.score >= c {
				n++
				if o.rel {
					good++
				}
			}
		}
		if n == 0 {
			break
		}
		if 2*good >= n {
			return math.Max(c, l.Min), len(offers)
		}
	}
	return 1, len(offers)
}
