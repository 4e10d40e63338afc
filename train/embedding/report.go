package embedding

import (
	"fmt"
	"io"
	"sort"

	"github.com/toolsrv/toolsrv/eval"
)

// WriteReport prints, per split, a markdown table of R@1/R@5/R@10/NDCG@10/MRR
// per corpus and mode, with the macro average.
func WriteReport(w io.Writer, results []*Result, modes []string) {
	for split, title := range []string{"all queries", "tuning part (2/3, settings chosen here)", "untouched part (1/3, hash of query id)"} {
		fmt.Fprintf(w, "\n### %s: R@1/R@5/R@10/NDCG@10/MRR\n\n| mode |", title)
		for _, r := range results {
			fmt.Fprintf(w, " %s |", r.Corpus)
		}
		fmt.Fprintf(w, " macro |\n|---|")
		for range results {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w, "---|")
		for _, m := range modes {
			fmt.Fprintf(w, "| %s |", m)
			for _, r := range results {
				x := r.Modes[m][split]
				fmt.Fprintf(w, " %.3f/%.3f/%.3f/%.3f/%.3f |", x.R1, x.R5, x.R10, x.NDCG10, x.MRR)
			}
			macro := Macro(results, m, split)
			fmt.Fprintf(w, " %.3f/%.3f/%.3f/%.3f/%.3f |\n", macro.R1, macro.R5, macro.R10, macro.NDCG10, macro.MRR)
		}
	}
}

// Macro returns the macro-average of one mode and split (every corpus
// weighs the same; a corpus without the mode counts as zero).
func Macro(results []*Result, mode string, split int) eval.Metrics {
	ms := make([]eval.Metrics, len(results))
	for i, r := range results {
		ms[i] = r.Modes[mode][split]
	}
	return eval.Macro(ms)
}

// ModeNames lists the modes in results, bm25 and dense first.
func ModeNames(results []*Result) []string {
	set := map[string]bool{}
	for _, r := range results {
		for m := range r.Modes {
			set[m] = true
		}
	}
	out := []string{"bm25", "dense"}
	var rest []string
	for m := range set {
		if m != "bm25" && m != "dense" {
			rest = append(rest, m)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
