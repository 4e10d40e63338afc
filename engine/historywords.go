package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolsrv/toolsrv/index"
)

// explainHistory adds to ex, the explanation of an answer to q ranked with
// ix, what the usage history did, in words a user can act on: for the
// whole (Explanation.History) and for each tool it spoke of
// (ToolExplanation.History).
func explainHistory(ctx context.Context, ix *index.Index, ex *Explanation, q Request) {
	if ex == nil || ix == nil {
		return
	}
	ex.History = historySummary(ix.UsageFit())
	reasons := ix.UsageReasons(ctx, index.Query{Text: q.Query, Context: q.Context, Mode: q.Mode, Allow: q.Allow})
	for i := range ex.Tools {
		if why, ok := reasons[ex.Tools[i].Name]; ok {
			ex.Tools[i].History = historyWords(why, ex.Tools[i].Offered)
		}
	}
}

// historySummary says how the history is weighed (fit: the history in
// effect; "" for none).
func historySummary(fit index.UsageFit) string {
	if fit.Entries == 0 {
		return ""
	}
	n := fmt.Sprintf("%d past request%s", fit.Entries, plural(fit.Entries))
	switch {
	case fit.Sample == 0:
		return n + " (the tools' examples, or the owner's calls only): they count on their own; no other principal's votes to weigh"
	case fit.Weight == 0:
		return fmt.Sprintf("%s: their votes are not used yet, having ranked none of %d of them, each taken as new, clearly better; "+
			"your own calls (toolsrv call --for, repeated) and the tools' examples count regardless", n, fit.Sample)
	}
	return fmt.Sprintf("%s: their votes count at weight %g, which ranked %.0f%% of %d of them, each taken as new, among the best (%.0f%% without)",
		n, fit.Weight, 100*fit.Recall, fit.Sample, 100*fit.Base)
}

// historyWords says what the history did to one tool (offered: the answer
// offers it), from what it said of it (why).
func historyWords(why index.UsageReason, offered bool) string {
	var parts []string
	if why.Firmness > 0 {
		verb := "raised because"
		if offered {
			verb = "offered because"
		}
		parts = append(parts, fmt.Sprintf("%s you called it %d times for requests like this", verb, why.OwnerCalls))
	}
	by := ""
	if len(why.By) > 0 {
		by = " (by " + strings.Join(why.By, ", ") + ")"
	}
	switch {
	case why.Share > 0 && why.Weight > 0:
		parts = append(parts, fmt.Sprintf("requests like this led to it%s: raised by %.0f%% of the history's votes", by, 100*why.Share))
	case why.Share > 0:
		parts = append(parts, fmt.Sprintf("requests like this led to it%s, but the history's votes are not used yet; "+
			"to make it count now, call it yourself: toolsrv call NAME ARGS --for \"the request\"", by))
	}
	if why.Author > 0 {
		parts = append(parts, "its author's examples are like this request: they bring it in where there is room, never before the tools the texts and the history support")
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
