package learn

import (
	"errors"
	"fmt"
)

// Forest is a sum of small regression trees (gradient boosting): the
// answerability model when Model.AnsTrees is set. Node i of a tree splits
// on Feature[i] (x[Feature[i]] < Threshold[i] goes to Left[i], else
// Right[i]); a node with Feature[i] < 0 is a leaf worth Value[i].
type Forest struct {
	Base  float64 `json:"base"`
	Trees []Tree  `json:"trees"`
}

// Tree is one regression tree in flat arrays (node 0 is the root).
type Tree struct {
	Feature   []int     `json:"f"`
	Threshold []float64 `json:"t"`
	Left      []int     `json:"l"`
	Right     []int     `json:"r"`
	Value     []float64 `json:"v"`
}

// Eval returns the forest's value (a logit) at x.
func (f *Forest) Eval(x []float64) float64 {
	s := f.Base
	for i := range f.Trees {
		t := &f.Trees[i]
		n := 0
		for t.Feature[n] >= 0 {
			if x[t.Feature[n]] < t.Threshold[n] {
				n = t.Left[n]
			} else {
				n = t.Right[n]
			}
		}
		s += t.Value[n]
	}
	return s
}

func (f *Forest) check(nf int) error {
	for k, t := range f.Trees {
		n := len(t.Feature)
		if n == 0 || len(t.Threshold) != n || len(t.Left) != n || len(t.Right) != n || len(t.Value) != n {
			return fmt.Errorf("tree %d: arrays of different lengths", k)
		}
		for i := range n {
			if t.Feature[i] >= nf {
				return fmt.Errorf("tree %d node %d: feature %d of %d", k, i, t.Feature[i], nf)
			}
			// children come after their parent, so evaluation ends
			if t.Feature[i] >= 0 && (t.Left[i] <= i || t.Right[i] <= i || t.Left[i] >= n || t.Right[i] >= n) {
				return errors.New("tree " + fmt.Sprint(k) + ": a child does not follow its parent")
			}
		}
	}
	return nil
}
