package embedding

import (
	"context"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/train/laststep"
)

// requestPairs reads the request → tool data of train/data (tldr, cheat
// sheets, CLINC150, HWU64, Home Assistant intents; licences in each
// folder's SOURCE.md): request → tool name (as words) + description +
// keywords, for the requests that hold a class term (a number, an
// operator, a date, …: laststep.TableRequest), at most perTool of each
// tool (intent data sets have hundreds of requests for one intent, and
// copies of one document in a batch of in-batch negatives contradict each
// other). They teach the table what the classes mean ("560 divided by 3"
// asks a calculator, "set a timer for 10 minutes" a timer); requests of
// every kind made no difference on unseen corpora (embed/MODEL.md, sixth
// round). A fixed fifth of them is left out to check the table, and the
// last step is neither fitted nor tuned on the rest.
func requestPairs(ctx context.Context, dir string, perTool int) ([]Pair, error) {
	srcs, err := laststep.LoadSources(dir)
	if err != nil {
		return nil, err
	}
	var out []Pair
	for _, s := range srcs {
		doc := map[string]string{}
		for _, t := range s.Tools {
			d := strings.Join(strings.FieldsFunc(t.Name, func(r rune) bool { return r == '_' || r == '-' || r == '.' }), " ") + ": " + t.Description
			if len(t.Keywords) > 0 {
				d += " " + strings.Join(t.Keywords, ", ")
			}
			doc[t.ID] = d
		}
		byTool := map[string][]string{}
		for _, q := range s.Queries {
			if len(q.Tools) != 1 || !laststep.TableRequest(q.Text) {
				continue
			}
			byTool[q.Tools[0]] = append(byTool[q.Tools[0]], q.Text)
		}
		ids := make([]string, 0, len(byTool))
		for id := range byTool {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			qs := byTool[id]
			sort.Slice(qs, func(i, j int) bool { return laststep.Share("table", qs[i]) < laststep.Share("table", qs[j]) })
			for _, q := range qs[:min(len(qs), perTool)] {
				out = append(out, Pair{Query: q, Doc: doc[id], Source: "requests/" + s.Name})
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
