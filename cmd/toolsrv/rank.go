package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// repeated is a repeatable string flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, "; ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

const rankAbout = `Ranks the catalog's tools for MESSAGE: hybrid of BM25 and embedding
similarity, scores calibrated to [0,1]; a tool named in the message ranks
first. The thresholds in effect (see "toolsrv tune --show") decide which
tools are offered: when none clears them the answer is "no tool fits";
--all prints the plain top --limit instead (--k is its older name). With
--agent, the profile's hot tools are always offered. --json prints the
answer as MCP's find_tools and 9P's rank.json give it, with the thresholds'
"selection" and the "ranking". With --batch FILE ("-" for stdin), reads JSON lines {"id","query"}
and writes {"id","ranked":[{"name","score","dense","lexical"},...]} lines in the same order,
the whole catalog ranked (no cut unless --limit is given); --select adds the
offered set and the decision: "offered":[names],"noToolFits":bool.
Rankings use the learned last step (learn/MODEL.md) unless --no-learned. --format prints the
ranked tools as the tool definitions of the Ollama, OpenAI or Anthropic
chat APIs. If the embedder fails or misses --timeout, the ranking is
lexical and a warning on stderr says so. MESSAGE "-" reads the message
from standard input.`

func runRank(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "rank", "rank [--tools DIR] [--embedder "+embedderChoice()+"] [--limit N] [--json] [--explain] [--expect TOOL]... [--format ollama|openai|anthropic] [--agent NAME [--agents DIR]] MESSAGE|-\n       toolsrv rank [--tools DIR] --batch FILE", rankAbout)
	ef := addEngineFlags(fs)
	hf := addHistoryFlags(fs)
	limit := fs.Int("limit", 10, "number of tools to print (0: all); in --batch mode the default is all")
	fs.IntVar(limit, "k", 10, "the older name of --limit")
	asJSON := fs.Bool("json", false, "print the answer as JSON (as MCP's find_tools and 9P's rank.json), with the selection and the ranking (scores, components, degraded reason)")
	format := fs.String("format", "", "print the ranked tools as tool definitions: ollama, openai or anthropic")
	modeName := fs.String("mode", "hybrid", "scores: hybrid, bm25 or dense")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline of each ranking; past it the answer is lexical")
	batch := fs.String("batch", "", "rank every {\"id\",\"query\"} line of FILE (- for stdin)")
	agent := fs.String("agent", "", "rank only the tools agent NAME's profile allows (--agents/NAME.json); its hot tools are always offered")
	agentsDir := fs.String("agents", "", "agent profiles directory (default ~/.config/ollie/agents, as for serve and mcp)")
	all := fs.Bool("all", false, "print the top --limit tools without applying the thresholds")
	selectFlag := fs.Bool("select", false, "with --batch: also apply the thresholds and print each line's offered set and noToolFits")
	noLearned := fs.Bool("no-learned", false, "rank with the fixed fusion, without the learned last step")
	explainFlag := fs.Bool("explain", false, "also say why: each ranked tool's signals, the words it matched in which field, the rule that offered it or left it out, and the changes that would bring in each tool left out")
	thrFile := fs.String("thresholds", "", "thresholds file (default: $TOOLSRV_THRESHOLDS, then $XDG_CONFIG_HOME/toolsrv/thresholds/EMBEDDER.json (else ~/.config/toolsrv/…), then the shipped defaults)")
	var convo, expect repeated
	fs.Var(&convo, "context", "an earlier conversation message (repeatable, oldest first)")
	fs.Var(&expect, "expect", "a tool you expected to be offered (repeatable; implies --explain): where it ranks, why it is left out, and what would bring it in")
	mf := addMCPFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(env.stderr, "toolsrv rank:", err)
		return 1
	}
	mode, err := index.ParseMode(*modeName)
	if err != nil {
		return usageError(fs, "--mode: %v", err)
	}
	switch *format {
	case "", "ollama", "openai", "anthropic":
	default:
		return usageError(fs, "unknown --format %q: use ollama, openai or anthropic", *format)
	}
	if err := ef.check(); err != nil {
		return usageError(fs, "%v", err)
	}
	if *limit < 0 {
		return usageError(fs, "--limit %d: want 0 (all) or more", *limit)
	}
	if *timeout <= 0 {
		return usageError(fs, "--timeout %v: want a positive duration such as 10s", *timeout)
	}
	if *agent != "" {
		if err := registry.ValidName(*agent); err != nil {
			return usageError(fs, "--agent %q: %v", *agent, err)
		}
	}
	if len(expect) > 0 && *batch != "" {
		return usageError(fs, "--expect explains one ranking: give a MESSAGE, not --batch")
	}
	if len(expect) > engine.MaxExpect {
		return usageError(fs, "--expect given %d times: name at most %d tools", len(expect), engine.MaxExpect)
	}
	limitSet := false
	fs.Visit(func(f *flag.Flag) { limitSet = limitSet || f.Name == "k" || f.Name == "limit" })
	var message string
	if fs.NArg() == 1 && fs.Arg(0) == "-" {
		if *batch != "" {
			return usageError(fs, "give either a MESSAGE (\"-\": from standard input) or --batch FILE")
		}
		b, err := io.ReadAll(env.stdin)
		if err != nil {
			return fail(fmt.Errorf("reading the message from standard input: %w", err))
		}
		if message = strings.TrimSpace(string(b)); message == "" {
			return usageError(fs, "the message on standard input is empty")
		}
	} else {
		message = strings.TrimSpace(strings.Join(fs.Args(), " "))
	}
	if (*batch == "") == (message == "") {
		return usageError(fs, "give either a MESSAGE (\"-\": from standard input) or --batch FILE")
	}

	var profile *registry.Profile
	if *agent != "" {
		dir := *agentsDir
		if dir == "" {
			dir = registry.DefaultAgentsDir(env.getenv)
		}
		if profile, err = agentProfile(dir, *agent); err != nil {
			return fail(err)
		}
	}
	path := resolveToolPath(env, tools)
	dirs, err := path.existing(env, "rank")
	if err != nil {
		return fail(err)
	}
	p := newIndexProgress(env)
	opts := ef.options(env, dirs, p)
	opts.NoLearned = *noLearned
	opts.Thresholds = *thrFile
	// Thresholds are needed for a plain ranking (not --all) and --select.
	opts.NoThresholds = (*batch == "" && *all) || (*batch != "" && !*selectFlag)
	opts.RankTimeout = *timeout
	opts.DefaultLimit = *limit // (a batch ranks the whole catalog: --limit only when given)
	if opts.Providers, err = mf.providers(env, "rank", nil, ""); err != nil {
		return fail(err)
	}
	opts.ProviderWait = mf.wait()
	opts.Usage = hf.open(ctx, env, "rank")
	eng, err := newEngine(ctx, env, opts)
	p.finish()
	if err != nil {
		if opts.Usage != nil {
			opts.Usage.Close()
		}
		return fail(err)
	}
	defer eng.Close()
	cat := eng.Catalog()
	if err := path.emptyCatalog(cat); err != nil {
		return fail(err)
	}
	warn(env, "rank", eng)
	if held := heldNames(mf); len(held) > 0 {
		fmt.Fprintf(env.stderr, "toolsrv rank: %d imported tool(s) held until you approve them, left out: %s (toolsrv validate shows what changed)\n",
			len(held), strings.Join(slices.Sorted(maps.Keys(held)), ", "))
	}

	q := engine.Request{Query: message, Context: convo, Mode: mode, Profile: profile, All: *all, NoLearned: *noLearned,
		Explain: *explainFlag || len(expect) > 0, Expect: expect, Caller: engine.Caller{Transport: "cli", Client: "owner"}}
	if *batch != "" {
		q.Full, q.Limit = true, 0
		if limitSet {
			q.Limit = *limit
		}
		if err := rankBatch(ctx, env, eng, *batch, q, *selectFlag); err != nil {
			return fail(err)
		}
		return 0
	}
	ans, err := eng.Rank(ctx, q)
	if err != nil {
		return fail(err)
	}
	warnDegraded(env, ans.Ranking)
	hits := make([]index.Hit, len(ans.Tools))
	hot := map[string]bool{}
	for i, o := range ans.Tools {
		hits[i] = o.Hit
		hot[o.Name] = o.Hot
	}
	if *all {
		if q.Explain && *asJSON {
			return printRanking(env, cat, hits, nil, *format, *asJSON, struct {
				index.Ranking
				Explain *engine.Explanation `json:"explain"`
			}{ans.Ranking, ans.Explain})
		}
		code := printRanking(env, cat, hits, nil, *format, *asJSON, ans.Ranking)
		if code == 0 && ans.Explain != nil && *format == "" && !*asJSON {
			printExplanation(env.stdout, ans.Explain)
		}
		return code
	}
	code := printRanking(env, cat, hits, hot, *format, *asJSON, struct {
		engine.Answer
		Selection thresholds.Selection `json:"selection"`
		Ranking   index.Ranking        `json:"ranking"`
	}{ans, ans.Selection, ans.Ranking})
	if code == 0 && ans.NoToolFits && *format == "" && !*asJSON {
		msg := ans.Reason
		if !strings.HasPrefix(msg, "no tool fits") {
			msg = "no tool fits: " + msg
		}
		fmt.Fprintln(env.stdout, msg)
	}
	if code == 0 && ans.Explain != nil && *format == "" && !*asJSON {
		printExplanation(env.stdout, ans.Explain)
	}
	return code
}

// printExplanation writes an answer's explanation for a reader: how the
// scores were made, then per ranked tool its signals, the words it
// matched by field, whether it was offered or the rule that left it out,
// and one line per change that would bring it in; then the expected
// tools the ranking's best do not hold, the same way.
func printExplanation(w io.Writer, ex *engine.Explanation) {
	fmt.Fprintln(w, "\nwhy:")
	if ex.Learned && ex.Answerable != nil {
		fmt.Fprintf(w, "  scores: the learned last step (each tool's probability of being the one); answerability %.3f", *ex.Answerable)
		if ex.Levels.MinAnswerable > 0 {
			fmt.Fprintf(w, " (no tool fits below %.3f)", ex.Levels.MinAnswerable)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "  scores: the fixed fusion of the dense and lexical scores")
	}
	if ex.Reason != "" {
		fmt.Fprintln(w, "  decision:", ex.Reason)
	}
	if u := ex.Usage; u != nil {
		how := fmt.Sprintf("weight %g", u.Weight)
		if u.Weight == 0 {
			how = "not used (weight 0: no clear gain)"
		}
		fmt.Fprintf(w, "  usage history: %d past requests, %s; chosen on %d of them, each ranked as new: Recall@5 %.3f with it, %.3f without\n",
			u.Entries, how, u.Sample, u.Recall, u.Base)
	}
	// With tools expected (--expect), only theirs are worth the lines.
	focus := slices.ContainsFunc(ex.Tools, func(t engine.ToolExplanation) bool { return t.Expected })
	for _, t := range ex.Tools {
		suggest := t.Suggest
		if focus && !t.Expected {
			suggest = nil
		}
		verdict := "ranked"
		switch {
		case t.Offered:
			verdict = "offered"
			if t.Rule == string(thresholds.ByTier) {
				verdict = "offered (hot)"
			}
		case t.Rank == 0 && t.Rule != "":
			verdict = "not ranked: " + t.Detail
		case t.Rule != "":
			verdict = "left out by " + t.Rule + ": " + t.Detail
		}
		name := t.Name
		if t.Named {
			name += " (named in the message)"
		}
		if t.Expected {
			name += " (expected)"
		}
		if t.Rank == 0 && !t.Offered {
			fmt.Fprintf(w, "  %s  %s\n", name, verdict)
			printSuggestions(w, suggest)
			continue
		}
		fmt.Fprintf(w, "  %s  %.3f  %s\n", name, t.Score, verdict)
		if t.Missing != "" {
			fmt.Fprintln(w, "      "+t.Missing)
		}
		sig := fmt.Sprintf("dense %.3f, lexical %.3f", t.Dense, t.Lexical)
		if t.Usage > 0 {
			sig += fmt.Sprintf(", usage history +%.3f", t.Usage)
		}
		fmt.Fprintln(w, "      "+sig)
		if len(t.Matched) == 0 {
			fmt.Fprintln(w, "      matched: no word of the message")
		} else {
			var parts []string
			for _, m := range t.Matched {
				f := m.Field
				if m.Weight == 0 {
					f += " (not in the lexical score)"
				}
				parts = append(parts, f+": "+strings.Join(m.Words, ", "))
			}
			fmt.Fprintln(w, "      matched: "+strings.Join(parts, "; "))
		}
		printSuggestions(w, suggest)
	}
}

// printSuggestions writes one line per change that would bring a tool in:
// its kind, then what to do.
func printSuggestions(w io.Writer, sg []engine.Suggestion) {
	for _, s := range sg {
		fmt.Fprintf(w, "      → %s: %s\n", s.Kind, s.Text)
	}
}

func warnDegraded(env *cliEnv, r index.Ranking) {
	if r.Degraded {
		fmt.Fprintln(env.stderr, "warning: ranking degraded to lexical scores:", r.Reason)
	}
}

// printRanking prints hits as tool definitions (format), as JSON (asJSON:
// the value jsonValue), or as a table marking the tools offered for their
// tier (hot); it returns the exit status.
func printRanking(env *cliEnv, cat *registry.Catalog, hits []index.Hit, hot map[string]bool, format string, asJSON bool, jsonValue any) int {
	var err error
	switch {
	case format != "":
		err = writeJSON(env.stdout, toolDefinitions(cat, hits, format))
	case asJSON:
		err = writeJSON(env.stdout, jsonValue)
	case len(hits) > 0:
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SCORE\tDENSE\tLEXICAL\tTOOL\tDESCRIPTION")
		for _, h := range hits {
			desc := ""
			if t, ok := cat.Get(h.Name); ok {
				desc = oneLine(t.Description, 70)
			}
			name := h.Name
			switch {
			case h.Named:
				name += " (named)"
			case hot[h.Name]:
				name += " (hot)"
			}
			fmt.Fprintf(tw, "%.3f\t%.3f\t%.3f\t%s\t%s\n", h.Score, h.Dense, h.Lexical, name, desc)
		}
		err = tw.Flush()
		if len(cat.Tools) == 1 {
			// DENSE is measured against the catalog's other tools.
			fmt.Fprintln(env.stderr, "note: DENSE compares a tool with the catalog's others: with one tool it is 0, and LEXICAL (the words it matches) ranks it")
		}
	}
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv rank:", err)
		return 1
	}
	return 0
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// batchLine is one line of --batch input; batchOut one line of its output.
type batchLine struct {
	ID    json.RawMessage `json:"id"`
	Query string          `json:"query"`
}

type batchOut struct {
	ID     json.RawMessage `json:"id"`
	Ranked []scored        `json:"ranked"`
	// With --select: the offered set (the thresholds applied to the same
	// ranking), whether the answer is "no tool fits", and the learned
	// answerability when the last step applied.
	Offered    *[]string `json:"offered,omitempty"`
	NoToolFits *bool     `json:"noToolFits,omitempty"`
	Answerable *float64  `json:"answerable,omitempty"`
}

type scored struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
	// The signals under Score (index.Hit), for who studies the cut
	// rules offline: omitted where 0.
	Dense   float64 `json:"dense,omitempty"`
	Lexical float64 `json:"lexical,omitempty"`
	Named   bool    `json:"named,omitempty"`
	Usage   float64 `json:"usage,omitempty"`
}

// rankBatch ranks each query line of path (the whole catalog, or the top
// base.Limit) and writes one result line per input line, in order; with sel,
// also the offered set the thresholds make of the same ranking. A degraded
// ranking is reported on stderr.
func rankBatch(ctx context.Context, env *cliEnv, eng *engine.Engine, path string, base engine.Request, sel bool) error {
	var in io.Reader = env.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	w := bufio.NewWriter(env.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	degraded := 0
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var ql batchLine
		if err := json.Unmarshal(sc.Bytes(), &ql); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(ql.ID) == 0 {
			return fmt.Errorf("%s:%d: no \"id\"", path, line)
		}
		q := base
		q.Query, q.All = ql.Query, true
		ans, err := eng.Rank(ctx, q)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		r := ans.Ranking
		if r.Degraded {
			if degraded == 0 {
				fmt.Fprintf(env.stderr, "warning: %s:%d: ranking degraded to lexical scores: %s\n", path, line, r.Reason)
			}
			degraded++
		}
		out := batchOut{ID: ql.ID, Ranked: make([]scored, len(r.Hits))}
		for i, h := range r.Hits {
			out.Ranked[i] = scored{Name: h.Name, Score: h.Score, Dense: h.Dense, Lexical: h.Lexical, Named: h.Named, Usage: h.Usage}
		}
		if sel {
			// The same ranking the line prints, cut by the thresholds.
			d, err := eng.Decide(r, q)
			if err != nil {
				return err
			}
			names, none := d.Selection.Names(), d.NoToolFits
			out.Offered, out.NoToolFits, out.Answerable = &names, &none, r.Answerable
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if degraded > 1 {
		fmt.Fprintf(env.stderr, "warning: %d rankings were degraded\n", degraded)
	}
	return nil
}

// toolDefinitions renders ranked tools as a chat API's tool list:
// ollama and openai {"type":"function","function":{name,description,parameters}},
// anthropic {name,description,input_schema}.
func toolDefinitions(cat *registry.Catalog, hits []index.Hit, format string) []any {
	out := []any{}
	for _, h := range hits {
		t, ok := cat.Get(h.Name)
		if !ok {
			continue
		}
		schema := parameters(t.Args)
		switch format {
		case "anthropic":
			out = append(out, map[string]any{"name": t.Name, "description": t.Description, "input_schema": schema})
		default:
			out = append(out, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": schema}})
		}
	}
	return out
}

// parameters is a tool's argument schema as an object schema; a tool with
// no (or an empty) schema takes an empty object.
func parameters(args json.RawMessage) json.RawMessage {
	var m map[string]any
	if len(args) == 0 || json.Unmarshal(args, &m) != nil || len(m) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	changed := false
	if _, ok := m["type"]; !ok {
		m["type"], changed = "object", true
	}
	if _, ok := m["properties"]; !ok && m["type"] == "object" {
		m["properties"], changed = map[string]any{}, true
	}
	if b, err := json.Marshal(m); changed && err == nil {
		return b
	}
	return args
}
