package laststep

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/learn"
)

func TestDecisionOffer(t *testing.T) {
	shares := []float64{0.1, 0.6, 0.25, 0.05}
	order := []int{1, 2, 0, 3}
	for _, c := range []struct {
		name string
		d    Decision
		p    float64
		want int
	}{
		{"below minAnswerable", Decision{MinAnswerable: 0.5, Mass: 1, MaxTools: 3}, 0.4, 0},
		{"max tools", Decision{Mass: 1, MaxTools: 3}, 1, 3},
		{"mass reached after two", Decision{Mass: 0.85, MaxTools: 4}, 1, 2},
		{"mass reached after one", Decision{Mass: 0.5, MaxTools: 4}, 1, 1},
		{"relative to the best", Decision{Mass: 1, Relative: 0.3, MaxTools: 4}, 1, 2},
		{"score p·share at least min", Decision{Mass: 1, Min: 0.2, MaxTools: 4}, 0.9, 2},
		{"nothing to offer", Decision{Mass: 1, MaxTools: 3}, 1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := order
			want := c.want
			if want < 0 {
				o, want = nil, 0
			}
			if got := c.d.Offer(c.p, shares, o); got != want {
				t.Errorf("%v: offers %d, want %d", c.d, got, want)
			}
		})
	}
}

func TestBaseRuleOffer(t *testing.T) {
	s := &Sample{Cand: make([][learn.NumCand]float64, 4)}
	for i, sc := range []float64{0.8, 0.5, 0.3, 0.1} {
		s.Cand[i][learn.CandScore] = sc
	}
	for _, c := range []struct {
		rule BaseRule
		want int
	}{
		{BaseRule{Min: 0.27, MaxTools: 8}, 3},
		{BaseRule{Min: 0.27, MaxTools: 2}, 2},
		{BaseRule{Min: 0.27, Relative: 0.5, MaxTools: 8}, 2},
		{BaseRule{Min: 0.9, MaxTools: 8}, 0},
	} {
		if got := c.rule.Offer(s); got != c.want {
			t.Errorf("%+v offers %d, want %d", c.rule, got, c.want)
		}
	}
}

func TestRecallAt(t *testing.T) {
	rel := []bool{false, true, false, true}
	for _, c := range []struct {
		order   []int
		nrel, k int
		want    float64
	}{
		{[]int{1, 3, 0, 2}, 2, 1, 0.5},
		{[]int{1, 3, 0, 2}, 2, 3, 1},
		{[]int{0, 2, 1, 3}, 2, 1, 0},
		{[]int{0, 2, 1, 3}, 3, 5, 2.0 / 3}, // a relevant tool outside the pool
		{[]int{0}, 2, 5, 0},
		{[]int{1}, 0, 5, 0},
	} {
		if got := recallAt(rel, c.order, c.nrel, c.k); got != c.want {
			t.Errorf("recallAt(%v, %d, %d) = %v, want %v", c.order, c.nrel, c.k, got, c.want)
		}
	}
}

// scored makes a scored sample: shares in pool order (names a, b, c, ...),
// the relevant pool entries, answerability p.
func scored(p float64, shares []float64, rel ...int) Scored {
	s := &Sample{Answerable: len(rel) > 0, NRel: len(rel), Rel: make([]bool, len(shares)), Cand: make([][learn.NumCand]float64, len(shares))}
	for j := range shares {
		s.Names = append(s.Names, string(rune('a'+j)))
		s.Cand[j][learn.CandScore] = 1 - 0.1*float64(j)
	}
	for _, r := range rel {
		s.Rel[r] = true
	}
	order := make([]int, len(shares))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case shares[a] > shares[b]:
			return -1
		case shares[a] < shares[b]:
			return 1
		}
		return 0
	})
	return Scored{Sample: s, P: p, Shares: shares, Order: order}
}

func TestMeasure(t *testing.T) {
	ss := []Scored{
		scored(0.9, []float64{0.2, 0.7, 0.1}, 1),    // learned order puts the relevant tool first: a hit
		scored(0.9, []float64{0.7, 0.2, 0.1}, 2),    // relevant tool third: offered 1, missed
		scored(0.2, []float64{0.5, 0.3, 0.2}, 0),    // answerable but "no tool fits": missed
		scored(0.1, []float64{0.4, 0.3, 0.3}),       // unanswerable, "no tool fits": right
		scored(0.95, []float64{0.34, 0.33, 0.33}),   // unanswerable, offered: wrong
		scored(0.9, []float64{0.3, 0.3, 0.4}, 0, 1), // two relevant, one offered
	}
	d := Decision{MinAnswerable: 0.5, Mass: 0.6, MaxTools: 3}
	f := Measure("g", ss, d, nil)
	want := Figures{Group: "g", Queries: 6, Answerable: 4, Abstain: 2,
		R1: (1 + 0 + 1 + 0) / 4.0, HR1: (0 + 0 + 1 + 0.5) / 4.0,
		Hit: 2.0 / 4, AbstainRec: 0.5, AbstainPr: 0.5, Accuracy: 3.0 / 6, MaxOfferedQuery: 2}
	// offered: 1, 1, 0, –, 2, 2 → over the answerable ones (1+1+0+2)/4
	want.Offered = 1
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("R@1", f.R1, want.R1)
	check("hybrid R@1", f.HR1, want.HR1)
	check("hit", f.Hit, want.Hit)
	check("offered", f.Offered, want.Offered)
	check("abstain recall", f.AbstainRec, want.AbstainRec)
	check("abstain precision", f.AbstainPr, want.AbstainPr)
	check("accuracy", f.Accuracy, want.Accuracy)
	if f.Queries != 6 || f.Answerable != 4 || f.Abstain != 2 || f.MaxOfferedQuery != want.MaxOfferedQuery {
		t.Errorf("counts %+v", f)
	}
	// the baseline rule offers by hybrid score (pool order)
	b := Measure("g", ss, Decision{}, &BaseRule{Min: 0.85, MaxTools: 8})
	check("baseline hit", b.Hit, 3.0/4) // a and b offered whatever the answerability: hits on samples 1, 3 and 6
	check("baseline offered", b.Offered, 2)
	check("baseline abstain recall", b.AbstainRec, 0)
	if !math.IsNaN(b.AbstainPr) {
		t.Errorf("never said \"no tool fits\": precision %v, want NaN", b.AbstainPr)
	}
	// a named relevant tool counts as found first
	named := scored(0.1, []float64{0.5, 0.5}, 1)
	named.Named, named.NamedRel = true, true
	n := Measure("g", []Scored{named}, d, nil)
	if n.R1 != 1 || n.HR1 != 1 || n.Hit != 1 || n.Offered != 1 {
		t.Errorf("named: %+v", n)
	}
}

func TestMacro(t *testing.T) {
	nan := math.NaN()
	fs := []Figures{
		{Queries: 10, Answerable: 8, Abstain: 2, R1: 0.5, Hit: 0.5, Offered: 2, AbstainRec: 1, AbstainPr: 0.5, Accuracy: 0.6, MaxOfferedQuery: 3},
		{Queries: 4, Answerable: 4, R1: 1, Hit: 1, Offered: 1, AbstainPr: nan, Accuracy: 1, MaxOfferedQuery: 5},
	}
	m := Macro("macro", fs)
	if m.Group != "macro" || m.Queries != 14 || m.Answerable != 12 || m.Abstain != 2 || m.MaxOfferedQuery != 5 {
		t.Errorf("counts %+v", m)
	}
	if m.R1 != 0.75 || m.Hit != 0.75 || m.Offered != 1.5 || m.AbstainRec != 0.5 || m.Accuracy != 0.8 {
		t.Errorf("means %+v", m)
	}
	if m.AbstainPr != 0.5 {
		t.Errorf("abstain precision %v: want the mean over the groups that define it, 0.5", m.AbstainPr)
	}
	if z := Macro("none", nil); z.R1 != 0 || z.AbstainPr != 0 {
		t.Errorf("no groups: %+v", z)
	}
}

func TestScoreAll(t *testing.T) {
	m := &learn.Model{Cand: neutral(), Ans: neutral()}
	m.Ans.Features = learn.AnsNames[:]
	m.Ans.Mean, m.Ans.Scale, m.Ans.W = make([]float64, learn.NumAns), slices.Repeat([]float64{1}, learn.NumAns), make([]float64, learn.NumAns)
	m.Cand.W[learn.CandCovName] = 1
	s := Sample{Catalog: "c", Names: []string{"z", "y", "x"}, Rel: []bool{false, true, false}, Cand: make([][learn.NumCand]float64, 3)}
	s.Cand[1][learn.CandCovName] = 2 // y first; x and z tie: by name
	named := Sample{Catalog: "c", Named: true, Names: []string{"a"}, Rel: []bool{true}, Cand: make([][learn.NumCand]float64, 1)}
	out := ScoreAll(m, []Sample{s, named})
	if got := out[0].Order; !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("order %v, want y, x, z", got)
	}
	if p := out[0].P; p != 0.5 {
		t.Errorf("answerability %v, want σ(0)", p)
	}
	if math.Abs(out[0].Shares[0]+out[0].Shares[1]+out[0].Shares[2]-1) > 1e-12 {
		t.Errorf("shares %v do not add up to 1", out[0].Shares)
	}
	if out[1].P != 1 {
		t.Errorf("a named tool: answerability %v, want 1", out[1].P)
	}
}

func TestTable(t *testing.T) {
	tab := Table([]Figures{{Group: "train val tldr", Queries: 3, Hit: 0.5, AbstainPr: math.NaN()}})
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "train val tldr") || !strings.Contains(lines[0], "hit") {
		t.Errorf("table:\n%s", tab)
	}
}
