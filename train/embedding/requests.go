package embedding

import (
	"context"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/train/laststep"
)

// MaxRequestsPerTool caps the request pairs of one tool: intent data sets
// have hundreds of requests for one intent, and copies of one document in a
// batch of in-batch negatives contradict each other.
const MaxRequestsPerTool = 10

// requestPairs reads the request → tool data of train/data (tldr, cheat
// sheets, CLINC150, HWU64, Home Assistant intents; licences in each
// folder's SOURCE.md): request → tool name (as words) + description +
// keywords. Requests of the tools train/laststep holds out are left out, so
// the held-out figures of the learned last step stay held out.
func requestPairs(ctx context.Context, dir string) ([]Pair, error) {
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
			if len(q.Tools) != 1 || laststep.HeldOutTool(s.Name, q.Tools[0]) {
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
			for _, q := range qs[:min(len(qs), MaxRequestsPerTool)] {
				out = append(out, Pair{Query: q, Doc: doc[id], Source: "requests/" + s.Name})
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
