package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// embedderFlags are the flags that choose and configure the embedder and
// the index cache (shared by rank and eval).
type embedderFlags struct {
	name, model string
	timeout     time.Duration
	cacheDir    string
	noCache     bool
	alpha       float64
}

func addEmbedderFlags(fs *flag.FlagSet) *embedderFlags {
	f := &embedderFlags{}
	fs.StringVar(&f.name, "embedder", "builtin", "embedder: builtin (no network) or ollama ($OLLAMA_HOST)")
	fs.StringVar(&f.model, "model", embed.DefaultOllamaModel, "Ollama embedding model (with --embedder ollama)")
	fs.DurationVar(&f.timeout, "embed-timeout", 60*time.Second, "HTTP timeout of each Ollama request")
	fs.StringVar(&f.cacheDir, "cache", "", "index cache directory (default: the user cache dir, toolsrv/<embedder>)")
	fs.BoolVar(&f.noCache, "no-cache", false, "keep the index in memory only")
	fs.Float64Var(&f.alpha, "lexical-weight", 0.5, "hybrid score = w·lexical + (1−w)·dense, 0 < w ≤ 1")
	return f
}

// check reports a bad embedder flag (a usage error) before any work.
func (f *embedderFlags) check() error {
	switch f.name {
	case "builtin", "", "ollama":
	default:
		return fmt.Errorf("unknown --embedder %q: use builtin or ollama", f.name)
	}
	if f.alpha <= 0 || f.alpha > 1 {
		return fmt.Errorf("--lexical-weight %v: want 0 < w ≤ 1 (use --mode dense for vectors only)", f.alpha)
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--embed-timeout %v: want a positive duration such as 60s", f.timeout)
	}
	return nil
}

// open makes the chosen embedder.
func (f *embedderFlags) open(env *cliEnv) (embed.Embedder, error) {
	switch f.name {
	case "builtin", "":
		return builtin.New()
	case "ollama":
		return embed.NewOllama(embed.OllamaOptions{Getenv: env.getenv, Model: f.model, Timeout: f.timeout, Logger: logger(env)})
	}
	return nil, fmt.Errorf("unknown embedder %q: use builtin or ollama", f.name)
}

// buildIndex makes an index over cat, with a progress bar on stderr when it
// is a terminal and embedding is needed.
func (f *embedderFlags) buildIndex(ctx context.Context, env *cliEnv, emb embed.Embedder, cat *registry.Catalog) (*index.Index, error) {
	p := newIndexProgress(env)
	defer p.finish()
	dir := f.cacheDir
	if dir == "" && !f.noCache {
		// os.UserCacheDir, but through env (so tests and callers can point it elsewhere).
		root := env.getenv("XDG_CACHE_HOME")
		if root == "" && env.getenv("HOME") != "" {
			root = filepath.Join(env.getenv("HOME"), ".cache")
		}
		if root == "" {
			return nil, errors.New("no cache directory: set $XDG_CACHE_HOME or $HOME, or pass --cache DIR or --no-cache")
		}
		dir = index.CacheDirUnder(root, emb.ID())
	}
	if f.alpha <= 0 || f.alpha > 1 {
		return nil, fmt.Errorf("--lexical-weight %v: want 0 < w ≤ 1 (use --mode dense for vectors only)", f.alpha)
	}
	ix := index.New(emb, index.Options{CacheDir: dir, NoCache: f.noCache, Logger: logger(env), Progress: p.update, LexicalWeight: f.alpha})
	err := ix.Sync(ctx, cat)
	if err != nil && ix.Stats().Tools == 0 && len(cat.Tools) > 0 {
		return nil, err
	}
	if err != nil { // the index answers lexically; Rank says it is degraded
		fmt.Fprintf(env.stderr, "warning: %v\n", err)
	}
	return ix, nil
}

// indexProgress draws a progress bar while tools are embedded, only on a
// terminal.
type indexProgress struct {
	out *os.File
	pb  *progressbar.ProgressBar
}

func newIndexProgress(env *cliEnv) *indexProgress {
	f, ok := env.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &indexProgress{}
	}
	return &indexProgress{out: f}
}

func (p *indexProgress) update(done, total int) {
	if p.out == nil || total < 2 {
		return
	}
	if p.pb == nil || done == 0 {
		p.finish()
		p.pb = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.out),
			progressbar.OptionSetDescription("embedding tools"), progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	p.pb.Set(done)
}

func (p *indexProgress) finish() {
	if p.pb != nil {
		p.pb.Finish()
		p.pb = nil
	}
}

// repeated is a repeatable string flag.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, "; ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

const rankAbout = `Ranks the catalog's tools for MESSAGE: hybrid of BM25 and embedding
similarity, scores calibrated to [0,1]; a tool named in the message ranks
first. The thresholds in effect (see "toolsrv tune --show") decide which
tools are offered: when none clears them the answer is "no tool fits";
--all prints the plain top --k instead. With --agent, the profile's hot
tools are always offered. With --batch FILE ("-" for stdin), reads JSON lines {"id","query"}
and writes {"id","ranked":[{"name","score"},...]} lines in the same order,
the whole catalog ranked (no cut unless --k is given); --select adds the
offered set and the decision: "offered":[names],"noToolFits":bool.
Rankings use the learned last step (learn/MODEL.md) unless --no-learned. --format prints the
ranked tools as the tool definitions of the Ollama, OpenAI or Anthropic
chat APIs. If the embedder fails or misses --timeout, the ranking is
lexical and a warning on stderr says so. MESSAGE "-" reads the message
from standard input.`

func runRank(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools := newFlags(env, "rank", "rank [--tools DIR] [--embedder builtin|ollama] [--k N] [--json] [--format ollama|openai|anthropic] [--agent NAME] MESSAGE|-\n       toolsrv rank [--tools DIR] --batch FILE", rankAbout)
	ef := addEmbedderFlags(fs)
	k := fs.Int("k", 10, "number of tools to print (0: all); in --batch mode the default is all")
	asJSON := fs.Bool("json", false, "print the ranking as JSON (scores, components, degraded reason)")
	format := fs.String("format", "", "print the ranked tools as tool definitions: ollama, openai or anthropic")
	modeName := fs.String("mode", "hybrid", "scores: hybrid, bm25 or dense")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline of each ranking; past it the answer is lexical")
	batch := fs.String("batch", "", "rank every {\"id\",\"query\"} line of FILE (- for stdin)")
	agent := fs.String("agent", "", "rank only the tools agent NAME's profile allows (~/.config/ollie/agents/NAME.json); its hot tools are always offered")
	all := fs.Bool("all", false, "print the top --k tools without applying the thresholds")
	selectFlag := fs.Bool("select", false, "with --batch: also apply the thresholds and print each line's offered set and noToolFits")
	noLearned := fs.Bool("no-learned", false, "rank with the fixed fusion, without the learned last step")
	thrFile := fs.String("thresholds", "", "thresholds file (default: $TOOLSRV_THRESHOLDS, the user config dir, then the shipped defaults)")
	var convo repeated
	fs.Var(&convo, "context", "an earlier conversation message (repeatable, oldest first)")
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
	if *k < 0 {
		return usageError(fs, "--k %d: want 0 (all) or more", *k)
	}
	if *timeout <= 0 {
		return usageError(fs, "--timeout %v: want a positive duration such as 10s", *timeout)
	}
	if *agent != "" {
		if err := registry.ValidName(*agent); err != nil {
			return usageError(fs, "--agent %q: %v", *agent, err)
		}
	}
	kSet := false
	fs.Visit(func(f *flag.Flag) { kSet = kSet || f.Name == "k" })
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

	var allow func(string) bool
	var profile *registry.Profile
	if *agent != "" {
		if profile, err = agentProfile(registry.DefaultAgentsDir(env.getenv), *agent); err != nil {
			return fail(err)
		}
		allow = profile.Allows
	}
	reg, path, err := loadTools(ctx, env, "rank", tools)
	if err != nil {
		return fail(err)
	}
	cat := reg.Catalog()
	if err := path.emptyCatalog(cat); err != nil {
		return fail(err)
	}
	emb, err := ef.open(env)
	if err != nil {
		return fail(err)
	}
	ix, err := ef.buildIndex(ctx, env, emb, cat)
	if err != nil {
		return fail(err)
	}

	if *batch != "" {
		bk := 0
		if kSet {
			bk = *k
		}
		var bsel *batchSelect
		if *selectFlag {
			pol, src, err := thresholds.Load(ix.Stats().Embedder, thresholds.LoadOptions{Path: *thrFile, Getenv: env.getenv})
			if err != nil {
				return fail(err)
			}
			for _, w := range []string{src.Warning, src.LexicalWeightWarning(ef.alpha), src.ScoresWarning(learnedID(ix.Stats().Embedder, *noLearned || mode != index.Hybrid))} {
				if w != "" {
					fmt.Fprintln(env.stderr, "warning:", w)
				}
			}
			bsel = &batchSelect{pol: pol, cat: cat, profile: profile}
		}
		if err := rankBatch(ctx, env, ix, *batch, index.Query{K: bk, Mode: mode, Allow: allow, NoLastStep: *noLearned}, *timeout, bsel); err != nil {
			return fail(err)
		}
		return 0
	}

	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	q := index.Query{Text: message, Context: convo, K: *k, Mode: mode, Allow: allow, NoLastStep: *noLearned}
	if *all {
		r, err := ix.Rank(rctx, q)
		if err != nil {
			return fail(err)
		}
		warnDegraded(env, r)
		return printRanking(env, cat, r.Hits, nil, *format, *asJSON, r)
	}
	pol, src, err := thresholds.Load(ix.Stats().Embedder, thresholds.LoadOptions{Path: *thrFile, Getenv: env.getenv})
	if err != nil {
		return fail(err)
	}
	for _, w := range []string{src.Warning, src.LexicalWeightWarning(ef.alpha), src.ScoresWarning(learnedID(ix.Stats().Embedder, *noLearned || mode != index.Hybrid))} {
		if w != "" {
			fmt.Fprintln(env.stderr, "warning:", w)
		}
	}
	sel, r, err := pol.Offer(rctx, ix, cat, q, profile)
	if err != nil {
		return fail(err)
	}
	warnDegraded(env, r)
	byName := make(map[string]index.Hit, len(r.Hits))
	for _, h := range r.Hits {
		byName[h.Name] = h
	}
	hits := make([]index.Hit, 0, len(sel.Tools))
	hot := map[string]bool{}
	for _, o := range sel.Tools {
		h, ok := byName[o.Name]
		if !ok { // a hot tool the ranking did not reach
			h = index.Hit{Name: o.Name, Score: o.Score}
		}
		hits = append(hits, h)
		hot[o.Name] = o.Why == thresholds.ByTier
	}
	code := printRanking(env, cat, hits, hot, *format, *asJSON, struct {
		Selection thresholds.Selection `json:"selection"`
		Ranking   index.Ranking        `json:"ranking"`
	}{sel, r})
	if code == 0 && sel.NoToolFits && *format == "" && !*asJSON {
		msg := sel.Reason
		if !strings.HasPrefix(msg, "no tool fits") {
			msg = "no tool fits: " + msg
		}
		fmt.Fprintln(env.stdout, msg)
	}
	return code
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

// batchSelect applies the thresholds in --batch --select mode.
type batchSelect struct {
	pol     thresholds.Policy
	cat     *registry.Catalog
	profile *registry.Profile
}

type scored struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// rankBatch ranks each query line of path and writes one result line per
// input line, in order. A degraded ranking is reported on stderr.
func rankBatch(ctx context.Context, env *cliEnv, ix *index.Index, path string, base index.Query, timeout time.Duration, bsel *batchSelect) error {
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
		var q batchLine
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if len(q.ID) == 0 {
			return fmt.Errorf("%s:%d: no \"id\"", path, line)
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		iq := base
		iq.Text = q.Query
		r, err := ix.Rank(rctx, iq)
		cancel()
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if r.Degraded {
			if degraded == 0 {
				fmt.Fprintf(env.stderr, "warning: %s:%d: ranking degraded to lexical scores: %s\n", path, line, r.Reason)
			}
			degraded++
		}
		out := batchOut{ID: q.ID, Ranked: make([]scored, len(r.Hits))}
		for i, h := range r.Hits {
			out.Ranked[i] = scored{h.Name, h.Score}
		}
		if bsel != nil {
			// The same ranking the line prints, cut by the thresholds (as
			// Policy.Offer would: hot tools of the agent, degraded levels).
			c := thresholds.Context{Tier: thresholds.TierOf(bsel.cat), Hot: thresholds.ProfileHot(bsel.cat, bsel.profile, base.Allow),
				Degraded: r.Degraded || base.Mode == index.Lexical, Answerable: r.Answerable}
			s := bsel.pol.Select(thresholds.FromRanking(r), c)
			names, none := s.Names(), s.NoToolFits
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
