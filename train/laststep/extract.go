package laststep

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/eval"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/learn"
	"github.com/toolsrv/toolsrv/registry"
)

// Catalog is one catalog to extract features on: its tools (as .meta
// files to write, or a directory of them) and its labelled requests.
type Catalog struct {
	Name   string // "tldr/drop1", "eval/metatool/full"
	Source string // "tldr", "metatool", ...
	Eval   bool   // an eval corpus (never trained on)
	Tools  []ToolDef
	// Dir, if set, holds the catalog's .meta files (Tools is then unused);
	// Keep, if set, selects which of them are in the catalog.
	Dir     string
	Keep    func(name string) bool
	Queries []LQuery
}

// LQuery is a labelled request of a catalog.
type LQuery struct {
	ID       string
	Text     string
	Relevant []string // names in the catalog that serve it; empty: none
	Val      bool     // held out (training sources) or test half (eval corpora)
	// Table: a request that trains the built-in table (TableRequest):
	// ranked like the others, never fitted on.
	Table bool
	// OffTopic marks a request of another data set that no tool of any
	// serves (added to the catalogs of the other sources).
	OffTopic bool
}

// Sample is one request's last-step inputs and labels.
type Sample struct {
	Catalog, Source, ID string
	Eval, Val           bool
	Table               bool // LQuery.Table
	Answerable          bool
	NRel                int      // relevant tools in the catalog
	Names               []string // the pool, best hybrid first
	Rel                 []bool   // per pool entry
	Cand                [][learn.NumCand]float64
	Query               [learn.NumAns]float64
	NamedRel, Named     bool // a tool was named; it is relevant
	Tools               int  // catalog size
	// Probe marks a probe request (learn.Calib) ranked against the
	// catalog; Text is its text.
	Probe bool
	Text  string
	// ToolText marks a request made from a tool's own text (measured, not
	// shipped: ToolTextPerCatalog): 1 ranked with the tool, 2 without it
	// (masked); Variant says how the text was made (ToolText).
	ToolText, Variant int
}

// writeCatalog writes tools as .meta files under dir.
func writeCatalog(dir string, tools []ToolDef) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range tools {
		m := map[string]any{"description": t.Description, "cmd": "cat"}
		if len(t.Keywords) > 0 {
			m["keywords"] = t.Keywords
		}
		if len(t.Args) > 0 {
			props := map[string]any{}
			for _, a := range t.Args {
				props[a] = map[string]any{"type": "string"}
			}
			m["args"] = map[string]any{"type": "object", "properties": props}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, t.Name+".meta"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// linkCatalog makes dir hold symlinks to the kept .meta files of src.
func linkCatalog(dir, src string, keep func(string) bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if filepath.Ext(n) != ".meta" || (keep != nil && !keep(n[:len(n)-5])) {
			continue
		}
		abs, _ := filepath.Abs(filepath.Join(src, n))
		if err := os.Symlink(abs, filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// Extract builds each catalog's index (the built-in embedder, in memory)
// and computes the last step's features for every request, pool tools per
// request. progress (may be nil) is called per catalog and every 500
// requests.
// It also ranks the probes (Probes) against each catalog.
func Extract(ctx context.Context, emb embed.Embedder, cats []*Catalog, pool int, tmp string, progress func(cat string, done, total int)) ([]Sample, error) {
	var out []Sample
	for ci, c := range cats {
		dir := filepath.Join(tmp, fmt.Sprintf("cat%03d", ci))
		var err error
		if c.Dir != "" {
			err = linkCatalog(dir, c.Dir, c.Keep)
		} else {
			err = writeCatalog(dir, c.Tools)
		}
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.Name, err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: log})
		if err := reg.Load(ctx); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.Name, err)
		}
		cat := reg.Catalog()
		if len(cat.Problems) > 0 {
			return nil, fmt.Errorf("catalog %s: %d invalid tools, first %v", c.Name, len(cat.Problems), cat.Problems[0])
		}
		// Candidates needs no model (and the probes are ranked below).
		ix := index.New(emb, index.Options{NoCache: true, Logger: log, NoLastStep: true})
		if err := ix.Sync(ctx, cat); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.Name, err)
		}
		ps, err := probeSamples(ctx, ix, c, len(cat.Tools), pool)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
		if ToolTextPerCatalog > 0 {
			ts, err := toolTextSamples(ctx, ix, c, cat, pool)
			if err != nil {
				return nil, err
			}
			out = append(out, ts...)
		}
		for qi, q := range c.Queries {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if progress != nil && qi%500 == 0 {
				progress(c.Name, qi, len(c.Queries))
			}
			cs, r, err := ix.Candidates(ctx, index.Query{Text: q.Text}, pool)
			if err != nil {
				return nil, fmt.Errorf("catalog %s, request %s: %w", c.Name, q.ID, err)
			}
			if r.Degraded {
				return nil, fmt.Errorf("catalog %s, request %s: degraded ranking: %s", c.Name, q.ID, r.Reason)
			}
			rel := map[string]bool{}
			for _, n := range q.Relevant {
				rel[n] = true
			}
			s := Sample{Catalog: c.Name, Source: c.Source, ID: q.ID, Eval: c.Eval, Val: q.Val, Table: q.Table,
				Answerable: len(q.Relevant) > 0, NRel: len(q.Relevant), Cand: cs.Cand, Query: cs.Query, Tools: len(cat.Tools)}
			for _, n := range cs.Named {
				s.Named = true
				s.NamedRel = s.NamedRel || rel[n]
			}
			for _, h := range cs.Hits {
				s.Names = append(s.Names, h.Name)
				s.Rel = append(s.Rel, rel[h.Name])
			}
			out = append(out, s)
		}
		if progress != nil {
			progress(c.Name, len(c.Queries), len(c.Queries))
		}
		os.RemoveAll(dir)
	}
	return out, nil
}

// SaveSamples and LoadSamples keep extracted features between runs.
func SaveSamples(path string, s []Sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func LoadSamples(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var s []Sample
	return s, gob.NewDecoder(f).Decode(&s)
}

// TrainingCatalogs builds the catalogs of the training sources: each source
// with a fifth of its tools removed (two different fifths for the small
// sources), the removed tools' requests becoming "no tool fits" requests;
// tldr also as two catalogs of about 600 of its pages; CLINC150's
// out-of-scope and HWU64's unmatched requests against their own catalogs.
// At most maxQ requests per catalog (a fixed hash picks them).
func TrainingCatalogs(srcs []*Source, maxQ int) []*Catalog {
	var out []*Catalog
	// Requests no data set serves (CLINC150's out-of-scope, HWU64's
	// chit-chat): off-topic negatives for every catalog, not only their own.
	var offTopic []Query
	Probes = nil
	for _, s := range srcs {
		for _, q := range s.Queries {
			if len(q.Tools) == 0 {
				if IsProbe(q.Text) {
					Probes = append(Probes, q.Text)
					continue
				}
				offTopic = append(offTopic, q)
			}
		}
	}
	sort.Strings(Probes)
	Probes = slices.Compact(Probes)
	bySrc := map[string]*Source{}
	for _, s := range srcs {
		bySrc[s.Name] = s
	}
	addOffTopic := func(c *Catalog) {
		n := min(OffTopicShare*len(c.Queries)/100, len(offTopic))
		seen := map[string]bool{}
		qs := append([]Query(nil), offTopic...)
		sort.SliceStable(qs, func(i, j int) bool { return Share(c.Name+"/off", qs[i].ID) < Share(c.Name+"/off", qs[j].ID) })
		for _, q := range qs[:n] {
			if seen[q.Text] {
				continue
			}
			seen[q.Text] = true
			c.Queries = append(c.Queries, LQuery{ID: q.ID, Text: q.Text, Val: Share("heldout-none", q.Text) < 0.2, OffTopic: true})
		}
	}
	for _, s := range srcs {
		seeds := []string{"drop1", "drop2"}
		if len(s.Tools) > 1000 {
			seeds = []string{"drop1"}
		}
		var cs []*Catalog
		for _, seed := range seeds {
			cs = append(cs, dropCatalog(s, seed, 0.2, nil, maxQ))
		}
		if s.Name == "tldr" {
			for _, seed := range []string{"sub1", "sub2"} {
				in := func(id string) bool { return Share(seed, id) < 600.0/float64(len(s.Tools)) }
				cs = append(cs, dropCatalog(s, seed, 0, in, maxQ))
			}
		}
		if MoreCatalogs {
			cs = append(cs, subCatalogs(s, maxQ)...)
		}
		for _, c := range cs {
			if s.Name != "clinc150" && s.Name != "hwu64" { // those have their own
				addOffTopic(c)
			}
			out = append(out, c)
		}
	}
	if MoreCatalogs {
		// Catalogs of two sources that serve different requests (shell
		// commands and assistant intents), a fifth of their tools removed.
		for _, mx := range []struct {
			name  string
			parts []string
			sizes []float64
		}{
			{"mix-tldr-hwu64", []string{"tldr", "hwu64"}, []float64{300, 0}},
			{"mix-cheatsheets-clinc150", []string{"cheatsheets", "clinc150"}, []float64{0, 0}},
			{"mix-tldr-home_assistant", []string{"tldr", "home_assistant"}, []float64{1000, 0}},
			{"mix-cheatsheets-hwu64-home_assistant", []string{"cheatsheets", "hwu64", "home_assistant"}, []float64{0, 0, 0}},
		} {
			var ps []*Source
			var ins []func(string) bool
			for i, n := range mx.parts {
				src := bySrc[n]
				if src == nil {
					continue
				}
				ps = append(ps, src)
				if size := mx.sizes[i]; size > 0 {
					ins = append(ins, func(id string) bool { return Share(mx.name, id) < size/float64(len(src.Tools)) })
				} else {
					ins = append(ins, nil)
				}
			}
			c := mixCatalog(mx.name, ps, ins, 0.2, maxQ)
			addOffTopic(c)
			out = append(out, c)
		}
	}
	return out
}

// MoreCatalogs adds catalogs of other sizes (subsets of a source) and
// mixed catalogs (two or three sources in one) to TrainingCatalogs, so the
// models see catalogs of many sizes and compositions (learn extract -more).
// Measured and off: the answerability fitted on them transfers worse to
// the eval corpora (learn/MODEL.md).
var MoreCatalogs = false

// subCatalogs are subsets of a source of several sizes, a fifth removed.
func subCatalogs(s *Source, maxQ int) []*Catalog {
	var sizes []int
	switch s.Name {
	case "tldr":
		sizes = []int{40, 120, 300, 1500}
	case "cheatsheets":
		sizes = []int{60, 140}
	case "clinc150":
		sizes = []int{30, 75}
	case "hwu64":
		sizes = []int{25}
	case "home_assistant":
		sizes = []int{12}
	}
	var out []*Catalog
	for _, n := range sizes {
		seed := fmt.Sprintf("size%d", n)
		in := func(id string) bool { return Share(seed, id) < float64(n)/float64(len(s.Tools)) }
		out = append(out, dropCatalog(s, seed, 0.2, in, maxQ))
	}
	return out
}

// mixCatalog is one catalog of several sources (each restricted to the
// tools ins[i] keeps; nil: all) with a share drop of its tools removed.
func mixCatalog(name string, srcs []*Source, ins []func(string) bool, drop float64, maxQ int) *Catalog {
	c := &Catalog{Name: name + "/drop", Source: name}
	used := map[string]bool{}
	var pos, neg []LQuery
	for i, s := range srcs {
		byID := map[string]string{}
		inSub := map[string]bool{}
		for _, t := range s.Tools {
			if ins[i] != nil && !ins[i](t.ID) {
				continue
			}
			inSub[t.ID] = true
			if Share(name+"/drop", s.Name+"/"+t.ID) < drop {
				continue
			}
			n := t.Name
			for k := 2; used[n]; k++ {
				n = fmt.Sprintf("%s_%d", t.Name, k)
			}
			used[n] = true
			t.Name = n
			c.Tools = append(c.Tools, t)
			byID[t.ID] = n
		}
		var sp, sn []LQuery
		for _, q := range s.Queries {
			if len(q.Tools) == 0 {
				continue // the off-topic requests come from addOffTopic
			}
			lq := LQuery{ID: q.ID, Text: q.Text}
			held, sub := false, false
			for _, id := range q.Tools {
				held = held || HeldOutTool(s.Name, id)
				sub = sub || inSub[id]
				if n, ok := byID[id]; ok {
					lq.Relevant = append(lq.Relevant, n)
				}
			}
			if !sub {
				continue // a request of a tool outside the subset
			}
			lq.Val = held
			lq.Table = len(q.Tools) == 1 && TableRequest(q.Text)
			if len(lq.Relevant) > 0 {
				sp = append(sp, lq)
			} else {
				sn = append(sn, lq)
			}
		}
		pos = append(pos, sp...)
		neg = append(neg, sn...)
	}
	all := append(pos, neg...)
	if len(all) > maxQ {
		sort.SliceStable(all, func(i, j int) bool { return Share(name+"/q", all[i].ID) < Share(name+"/q", all[j].ID) })
		all = all[:maxQ]
		sort.SliceStable(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	}
	c.Queries = all
	return c
}

// OffTopicShare is how many off-topic requests (percent of a catalog's
// requests) TrainingCatalogs adds to the catalogs of the other sources.
const OffTopicShare = 10

// dropCatalog is source s restricted to the tools in (nil: all) minus a
// share drop of them chosen by seed; requests of tools outside the catalog
// are "no tool fits" requests (at most one in four of the catalog's
// requests when the catalog is a subset).
func dropCatalog(s *Source, seed string, drop float64, in func(string) bool, maxQ int) *Catalog {
	c := &Catalog{Name: s.Name + "/" + seed, Source: s.Name}
	byID := map[string]string{}
	for _, t := range s.Tools {
		if (in == nil || in(t.ID)) && Share(seed+"/drop", t.ID) >= drop {
			c.Tools = append(c.Tools, t)
			byID[t.ID] = t.Name
		}
	}
	var pos, neg []LQuery
	for _, q := range s.Queries {
		lq := LQuery{ID: q.ID, Text: q.Text}
		held := false
		for _, id := range q.Tools {
			held = held || HeldOutTool(s.Name, id)
			if n, ok := byID[id]; ok {
				lq.Relevant = append(lq.Relevant, n)
			}
		}
		if len(q.Tools) == 0 {
			if IsProbe(q.Text) {
				continue // ranked against every catalog as a probe
			}
			held = Share("heldout-none", q.Text) < 0.2
		}
		lq.Val = held
		lq.Table = len(q.Tools) == 1 && TableRequest(q.Text)
		if len(lq.Relevant) > 0 {
			pos = append(pos, lq)
		} else {
			neg = append(neg, lq)
		}
	}
	pick := func(qs []LQuery, n int, salt string) []LQuery {
		if len(qs) <= n {
			return qs
		}
		sort.SliceStable(qs, func(i, j int) bool { return Share(salt, qs[i].ID) < Share(salt, qs[j].ID) })
		qs = qs[:n]
		sort.SliceStable(qs, func(i, j int) bool { return qs[i].ID < qs[j].ID })
		return qs
	}
	if in != nil {
		neg = pick(neg, len(pos)/3, seed+"/neg")
	}
	all := append(pos, neg...)
	c.Queries = pick(all, maxQ, seed+"/q")
	return c
}

// EvalCatalogs builds, for each labelled corpus (package eval), the full
// catalog (every request answerable: ranking figures) and the catalog with
// a fixed fifth of its tools removed (their requests must get "no tool
// fits": the offered-set figures).
func EvalCatalogs(corpora []*eval.Corpus) []*Catalog {
	var out []*Catalog
	for _, c := range corpora {
		full := &Catalog{Name: "eval/" + c.Name + "/full", Source: c.Name, Eval: true, Dir: c.ToolsDir}
		dropped := func(name string) bool { return Share("eval-drop", c.Name+"/"+name) < 0.2 }
		drop := &Catalog{Name: "eval/" + c.Name + "/drop", Source: c.Name, Eval: true, Dir: c.ToolsDir,
			Keep: func(n string) bool { return !dropped(n) }}
		for _, q := range c.Queries {
			full.Queries = append(full.Queries, LQuery{ID: q.ID, Text: q.Text, Relevant: q.Relevant, Val: !EvalDev(q.ID)})
			lq := LQuery{ID: q.ID, Text: q.Text, Val: !EvalDev(q.ID)}
			for _, r := range q.Relevant {
				if !dropped(r) {
					lq.Relevant = append(lq.Relevant, r)
				}
			}
			drop.Queries = append(drop.Queries, lq)
		}
		out = append(out, full, drop)
	}
	return out
}

// Probes are requests no data set serves (CLINC150's out-of-scope and
// HWU64's chit-chat requests that IsProbe picks), ranked against every
// catalog: the answerability's calibration (learn.Calib). TrainingCatalogs
// fills them in (sorted) and keeps them out of every catalog's requests.
var Probes []string

// IsProbe says whether an off-topic request is a probe (a fixed hash picks
// about 200 of the 1,545).
func IsProbe(text string) bool { return Share("probe", text) < ProbeShare }

// ProbeShare is the share of the off-topic requests used as probes.
const ProbeShare = 0.13

// probeSamples ranks the probes against a catalog (learn.Calib: what the
// index does when it calibrates the answerability).
func probeSamples(ctx context.Context, ix *index.Index, c *Catalog, n, pool int) ([]Sample, error) {
	var out []Sample
	for i, text := range Probes {
		cs, r, err := ix.Candidates(ctx, index.Query{Text: text}, pool)
		if err != nil {
			return nil, err
		}
		if r.Degraded {
			return nil, fmt.Errorf("catalog %s: degraded probe ranking", c.Name)
		}
		s := Sample{Catalog: c.Name, Source: c.Source, ID: fmt.Sprintf("probe/%d", i), Text: text, Eval: c.Eval,
			Cand: cs.Cand, Query: cs.Query, Tools: n, Probe: true, Named: len(cs.Named) > 0}
		for _, h := range cs.Hits {
			s.Names = append(s.Names, h.Name)
			s.Rel = append(s.Rel, false)
		}
		out = append(out, s)
	}
	return out, nil
}

// ToolTextPerCatalog is how many of a catalog's tools Extract turns into
// requests made from their own text (learn extract -tooltext; 0: none).
// Measured as a label-free calibration and not shipped (learn/MODEL.md):
// the shift they measure per catalog does not carry over to real requests.
var ToolTextPerCatalog = 0

// ToolTextVariants is the number of ways ToolText makes a request.
const ToolTextVariants = 3

// toolTextSamples ranks requests made from the texts of up to
// ToolTextPerCatalog tools (a fixed hash picks them), once with the tool
// and once with it masked (leave one out).
func toolTextSamples(ctx context.Context, ix *index.Index, c *Catalog, cat *registry.Catalog, pool int) ([]Sample, error) {
	tools := slices.Clone(cat.Tools)
	sort.Slice(tools, func(i, j int) bool { return Share("pseudo", tools[i].Name) < Share("pseudo", tools[j].Name) })
	tools = tools[:min(len(tools), ToolTextPerCatalog)]
	var out []Sample
	for _, t := range tools {
		for v := range ToolTextVariants {
			text := ToolText(t.Name, t.Description, v)
			if text == "" {
				continue
			}
			for _, absent := range []bool{false, true} {
				q := index.Query{Text: text}
				if absent {
					name := t.Name
					q.Allow = func(n string) bool { return n != name }
				}
				cs, r, err := ix.Candidates(ctx, q, pool)
				if err != nil {
					return nil, err
				}
				if r.Degraded {
					return nil, fmt.Errorf("catalog %s: degraded ranking", c.Name)
				}
				s := Sample{Catalog: c.Name, Source: c.Source, ID: "tooltext/" + t.Name, Eval: c.Eval, Answerable: !absent,
					Cand: cs.Cand, Query: cs.Query, Tools: len(cat.Tools), ToolText: 1, Variant: v, Named: len(cs.Named) > 0}
				if absent {
					s.ToolText = 2
				}
				for _, h := range cs.Hits {
					s.Names = append(s.Names, h.Name)
					s.Rel = append(s.Rel, h.Name == t.Name)
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// ToolText makes a request from a tool's description: 0, its first
// sentence (at most 16 words); 1, half of its words (a fixed hash picks
// them, at most 8); 2, the first sentence without the words of the name.
func ToolText(name, description string, variant int) string {
	d := strings.TrimSpace(description)
	if i := strings.IndexAny(d, ".\n"); i > 20 {
		d = d[:i]
	}
	ws := strings.Fields(d)
	var keep []string
	switch variant {
	case 0:
		keep = ws
	case 1:
		for i, w := range ws {
			if Share("pseudo-word", fmt.Sprintf("%s/%d", name, i)) < 0.5 {
				keep = append(keep, w)
			}
		}
		keep = keep[:min(len(keep), 8)]
	case 2:
		parts := map[string]bool{}
		for _, p := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
			parts[p] = true
		}
		for _, w := range ws {
			if !parts[strings.ToLower(strings.Trim(w, ",;:()"))] {
				keep = append(keep, w)
			}
		}
	}
	return strings.Join(keep[:min(len(keep), 16)], " ")
}
