package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/internal/statedir"
	"github.com/toolsrv/toolsrv/registry"
	usagedb "github.com/toolsrv/toolsrv/usage"
)

// usageAbout says what the usage history is, for "toolsrv usage --help"
// and every usage subcommand's help.
const usageAbout = `The usage history: which tool this installation's agents called for which
request (or that they answered it without a tool), kept to rank tools for
requests like it.

What is kept: for each request (lowercased, runs of spaces made one), tool,
agent and principal (who recorded it: owner, mcp:NAME, 9p:AGENT, an
imported file, another instance), the request's latest wording, how many
calls and how many of them failed, when first and last, and the tools
offered with it. The ranking believes each principal as far as its record
has earned (toolsrv usage principals); the owner's word counts. Requests
are what users wrote: they stay in one file of yours (mode 0600, in a
directory only you can enter), are never sent anywhere, and are never
logged.

Where: --usage-db PATH, by default $XDG_STATE_HOME/toolsrv/usage.db (else
~/.local/state/toolsrv/usage.db). It is made at the first recorded call.
A postgres:// URL instead shares one history between a team's instances
(--usage-namespace, default the URL's user, keeps teams apart); see
docs/postgres.md.

For how long: 180 days after an entry's last use, and at most 256 entries
per tool, 64 per agent and tool, 50,000 in all (the least recently used go
first); one agent's repeats of one request count up to 64 calls.`

// usageSubcommands are the usage subcommands, by name.
var usageSubcommands = map[string]struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) int
}{
	"ls":         {"list the entries, most recently used first", runUsageLs},
	"stats":      {"say what the history holds, where, and how it is bounded", runUsageStats},
	"export":     {"write every entry as JSON lines (the import format)", runUsageExport},
	"import":     {"record the JSON lines of a file (all or none)", runUsageImport},
	"forget":     {"remove entries: of a tool, of an agent, of a principal, before a date, or all", runUsageForget},
	"principals": {"who recorded the history, and how far the ranking believes each", runUsagePrincipals},
}

func runUsage(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) > 0 {
		if sub, ok := usageSubcommands[args[0]]; ok {
			return sub.run(ctx, env, args[1:])
		}
	}
	w := env.stderr
	code := 2
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help"):
		w, code = env.stdout, 0
	case len(args) > 0:
		fmt.Fprintf(w, "toolsrv usage: unknown subcommand %q (the subcommand comes first)\n", args[0])
	}
	fmt.Fprintf(w, "Usage: toolsrv usage SUBCOMMAND [--usage-db PATH|URL] [flags]\n\n%s\n\nSubcommands (each gives its flags with -h):\n", usageAbout)
	names := make([]string, 0, len(usageSubcommands))
	for n := range usageSubcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, usageSubcommands[n].summary)
	}
	fmt.Fprintln(w, "\nEvery subcommand takes --usage-db PATH|URL and --usage-namespace NAME; import also --tools DIR (the catalog it checks the tools against).")
	return code
}

// usageDBHelp is the help of --usage-db.
const usageDBHelp = "the usage history: a file path (default $XDG_STATE_HOME/toolsrv/usage.db, else ~/.local/state/toolsrv/usage.db), or a postgres:// URL shared by a team's instances (see docs/postgres.md)"

// usageNamespaceHelp is the help of --usage-namespace.
const usageNamespaceHelp = "with a postgres:// --usage-db, the team's or project's namespace in it (default: the URL's user)"

// usageTarget is the store the usage flags name: --usage-db ("": the
// default, see openUsage) and --usage-namespace.
type usageTarget struct {
	db, ns string
}

// usageDBFlag adds --usage-db and --usage-namespace to fs.
func usageDBFlag(fs *flag.FlagSet) *usageTarget {
	t := &usageTarget{}
	fs.StringVar(&t.db, "usage-db", "", usageDBHelp)
	fs.StringVar(&t.ns, "usage-namespace", "", usageNamespaceHelp)
	return t
}

// openUsage opens the usage store of t (its db "": the default path),
// printing Open's warnings on standard error.
func openUsage(ctx context.Context, env *cliEnv, cmd string, t *usageTarget, opts usagedb.Options) (usagedb.Store, error) {
	db := t.db
	if db == "" {
		db = usagedb.DefaultPath(env.getenv)
	}
	opts.Logger = logger(env)
	opts.Namespace = t.ns
	s, warns, err := usagedb.Open(ctx, db, opts)
	for _, w := range warns {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: %s\n", cmd, w)
	}
	return s, err
}

// usageFlags makes the flag set of a usage subcommand.
func usageFlags(env *cliEnv, sub, synopsis, about string) (*flag.FlagSet, *dirList, *usageTarget) {
	fs, tools := newFlags(env, "usage "+sub, "usage "+sub+" [--usage-db PATH|URL] "+synopsis, about+"\n\n"+usageAbout)
	return fs, tools, usageDBFlag(fs)
}

func runUsageLs(ctx context.Context, env *cliEnv, args []string) int {
	fs, _, db := usageFlags(env, "ls", "[--json] [--tool NAME] [--agent NAME] [--principal NAME]",
		"Lists the entries, most recently used first: calls, failed, last use, tool, agent, principal (who\nrecorded it), request. A tool of \"-\" means the request was answered without a tool.")
	asJSON := fs.Bool("json", false, "print the entries as a JSON array")
	tool := fs.String("tool", "", "only the entries of this tool")
	agent := fs.String("agent", "", "only the entries of this agent")
	principal := fs.String("principal", "", "only the entries this principal recorded (owner, mcp:NAME, 9p:AGENT, ...)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	s, err := openUsage(ctx, env, "usage ls", db, usagedb.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage ls:", err)
		return 1
	}
	defer s.Close()
	all, _, err := s.Snapshot(ctx)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage ls:", err)
		return 1
	}
	entries := all[:0]
	for _, e := range all {
		if (*tool == "" || e.Key.Tool == *tool) && (*agent == "" || e.Key.Agent == *agent) && (*principal == "" || e.Key.Principal == *principal) {
			entries = append(entries, e)
		}
	}
	sortEntries(entries)
	if *asJSON {
		if entries == nil {
			entries = []usagedb.Entry{}
		}
		if err := writeJSON(env.stdout, entries); err != nil {
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CALLS\tFAILED\tLAST\tTOOL\tAGENT\tPRINCIPAL\tREQUEST")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", e.Count, e.Failed, e.Last.Local().Format("2006-01-02 15:04"),
			orDash(e.Key.Tool), orDash(oneLine(e.Key.Agent, 40)), orDash(oneLine(e.Key.Principal, 60)), oneLine(e.Text, 100))
	}
	tw.Flush()
	if len(entries) == 0 {
		fmt.Fprintln(env.stderr, "toolsrv usage ls: no entries")
	}
	return 0
}

// sortEntries sorts the most recently used first (then by tool, agent and
// request, for a stable listing).
func sortEntries(es []usagedb.Entry) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if !a.Last.Equal(b.Last) {
			return a.Last.After(b.Last)
		}
		if a.Key.Tool != b.Key.Tool {
			return a.Key.Tool < b.Key.Tool
		}
		if a.Key.Agent != b.Key.Agent {
			return a.Key.Agent < b.Key.Agent
		}
		if a.Key.Principal != b.Key.Principal {
			return a.Key.Principal < b.Key.Principal
		}
		return a.Key.Request < b.Key.Request
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runUsageStats(ctx context.Context, env *cliEnv, args []string) int {
	fs, _, db := usageFlags(env, "stats", "[--json]",
		"Says what the usage history holds (entries, calls, tools, agents, sources, dates), where it is, its size\nand its bounds. It reads the whole store to check it: a damaged one is set aside and said so.")
	asJSON := fs.Bool("json", false, "print the statistics as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	s, err := openUsage(ctx, env, "usage stats", db, usagedb.Options{Check: true})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage stats:", err)
		return 1
	}
	defer s.Close()
	st, err := s.Stats(ctx)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage stats:", err)
		return 1
	}
	if *asJSON {
		if err := writeJSON(env.stdout, st); err != nil {
			return 1
		}
		return 0
	}
	w := env.stdout
	line := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-9s %s\n", label+":", fmt.Sprintf(format, a...))
	}
	switch {
	case st.Size > 0:
		line("store", "%s (%s)", st.Where, humanBytes(st.Size))
	case strings.Contains(st.Where, "://"):
		line("store", "%s", st.Where)
	default:
		line("store", "%s, not made yet (it is made at the first recorded call)", st.Where)
	}
	line("entries", "%d: %d calls, %d failed; %d tools, %d agents, %d principals", st.Entries, st.Events, st.Failed, st.Tools, st.Agents, st.Principals)
	if st.Entries > 0 {
		line("dates", "%s to %s", st.Oldest.Local().Format(time.DateTime), st.Newest.Local().Format(time.DateTime))
	}
	var srcs []string
	for src, n := range st.Sources {
		srcs = append(srcs, fmt.Sprintf("%s %d", src, n))
	}
	sort.Strings(srcs)
	if len(srcs) > 0 {
		line("recorded", "%s (calls, by where they came from, since the store was made or emptied)", strings.Join(srcs, ", "))
	}
	if st.Pending > 0 {
		line("pending", "%d calls not yet in the shared store, since %s", st.Pending, st.PendingSince.Local().Format(time.DateTime))
	}
	o := st.Options
	line("kept", "%s after last use; at most %s per tool, %s per agent and tool, %s in all; calls per entry up to %s",
		bound(int(o.Retention/(24*time.Hour)), " days"), bound(o.PerTool, ""), bound(o.PerAgentTool, ""), bound(o.Total, ""), bound(o.MaxCount, ""))
	return 0
}

// bound is a cap as text ("unbounded" when negative).
func bound(n int, unit string) string {
	if n < 0 {
		return "unbounded"
	}
	return fmt.Sprint(n, unit)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// importLine is a line of the import format (what export writes). Source
// is accepted, so that events logged elsewhere import as they are, and
// ignored: an import's source is "import".
type importLine struct {
	Request *string `json:"request"`
	Tool    *string `json:"tool"`
	OK      *bool   `json:"ok"`
	Agent   string  `json:"agent,omitempty"`
	// Principal and Seal: who recorded the entry, kept by an import when
	// this installation's export sealed the line (lineSeal).
	Principal string `json:"principal,omitempty"`
	Seal      string `json:"seal,omitempty"`
	Time      string `json:"time,omitempty"`
	// First is the first use (export: of an entry of 2 calls or more
	// first used before its last), kept by an import only with the
	// line's time (sealed with it).
	First   string   `json:"first,omitempty"`
	Count   *int64   `json:"count,omitempty"`
	Failed  *int64   `json:"failed,omitempty"`
	Offered []string `json:"offered,omitempty"`
	ID      string   `json:"id,omitempty"`
	Source  string   `json:"source,omitempty"`
}

func runUsageExport(ctx context.Context, env *cliEnv, args []string) int {
	fs, _, db := usageFlags(env, "export", "",
		"Writes every entry as a line of JSON, in the format usage import reads:\n"+
			`{"request": "...", "tool": "NAME", "ok": true, "agent": "...", "principal": "...", "seal": "...", "time": "RFC3339", "first": "RFC3339", "count": N, "failed": N, "offered": [...]}`+"\n"+
			"time is the last use, first (when earlier) the first; count (when more than 1) the calls; failed\n"+
			"(when any) how many of them failed; principal who recorded it, and seal this installation's seal\n"+
			"of the line: an import here keeps the principal and times of a line it sealed, and takes any other\n"+
			"line as the imported file's.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	s, err := openUsage(ctx, env, "usage export", db, usagedb.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage export:", err)
		return 1
	}
	defer s.Close()
	entries, _, err := s.Snapshot(ctx)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage export:", err)
		return 1
	}
	key, err := usagedb.InstanceKey(stateDir(env))
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage export:", err)
		return 1
	}
	sortEntries(entries)
	w := bufio.NewWriter(env.stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := len(entries) - 1; i >= 0; i-- { // oldest first
		e := entries[i]
		ok := e.Failed == 0
		l := importLine{Request: &e.Text, Tool: &e.Key.Tool, OK: &ok, Agent: e.Key.Agent,
			Time: e.Last.UTC().Format(time.RFC3339Nano), Offered: e.Offered}
		if e.Count > 1 {
			l.Count = &e.Count
			if !e.First.IsZero() && e.First.Before(e.Last) {
				l.First = e.First.UTC().Format(time.RFC3339Nano)
			}
		}
		if e.Failed > 0 {
			l.Failed = &e.Failed
		}
		l.Principal = e.Key.Principal
		l.Seal = lineSeal(key, &l)
		if err := enc.Encode(l); err != nil {
			fmt.Fprintln(env.stderr, "toolsrv usage export:", err)
			return 1
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage export:", err)
		return 1
	}
	return 0
}

// maxImportLine is the longest line import reads.
const maxImportLine = 1 << 20

func runUsageImport(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools, db := usageFlags(env, "import", "[--tools DIR] [--principal NAME] FILE|-",
		"Records the calls of FILE (- for standard input), one JSON object a line:\n"+
			`  {"request": "...", "tool": "NAME", "ok": true, "agent": "...", "time": "2026-03-01T12:00:00Z"}`+"\n"+
			"request and tool are required (tool \"\" for a request answered without a tool); ok defaults to true;\n"+
			"time (RFC3339) is when the line was last used: a line older than the history keeps is dropped, and\n"+
			"the others are recorded as of now, but the lines this installation exported (their time sealed)\n"+
			"and those of a file you vouch for (--principal), which keep theirs (and their first use: first);\n"+
			"agent is optional. Optional too: count (the calls the line stands for), failed (how many of them\n"+
			"failed; ok then says nothing), offered (the tools offered), id (a repeated id is recorded once).\n"+
			"A file with any invalid line imports nothing and names the lines.\n"+
			"Lines naming a tool the catalog (--tools) does not know are kept (it may come later) and counted.\n"+
			"Who recorded them (their principal): the file (import:NAME#DIGEST), which the ranking believes as\n"+
			"far as its lines earn, but the lines this installation exported (usage export seals them), which\n"+
			"keep theirs; --principal NAME records every line as NAME's: --principal owner vouches for the file\n"+
			"as your own calls.")
	principal := fs.String("principal", "", "record every line as this principal's (owner: as your own calls)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, "give one FILE (or - for standard input)")
	}
	in := env.stdin
	name, base := "standard input", "stdin"
	if fs.Arg(0) != "-" {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(env.stderr, "toolsrv usage import:", err)
			return 1
		}
		defer f.Close()
		in, name, base = f, fs.Arg(0), filepath.Base(fs.Arg(0))
	}
	content, err := io.ReadAll(io.LimitReader(in, maxImport+1))
	if err == nil && len(content) > maxImport {
		err = fmt.Errorf("larger than %d MiB: split it", maxImport>>20)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv usage import: %s: nothing imported: %v\n", name, err)
		return 1
	}
	key, err := usagedb.InstanceKey(stateDir(env))
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage import:", err)
		return 1
	}
	sum := sha256.Sum256(content)
	who := importWho{file: usagedb.PrefixImport + base + "#" + hex.EncodeToString(sum[:4]), given: *principal, key: key}
	s, err := openUsage(ctx, env, "usage import", db, usagedb.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage import:", err)
		return 1
	}
	lines, kept, err := recordImport(ctx, s, content, &who)
	if err != nil {
		s.Close()
		fmt.Fprintf(env.stderr, "toolsrv usage import: %s: nothing imported: %v\n", name, err)
		return 1
	}
	keys := map[usagedb.Key]bool{}
	old := 0
	for _, l := range lines {
		if t, _ := time.Parse(time.RFC3339Nano, l.Time); !t.IsZero() && t.Before(who.cutoff) {
			old++
			continue
		}
		keys[usagedb.Key{Request: usagedb.Normalize(*l.Request), Tool: *l.Tool, Agent: l.Agent, Principal: l.Principal}] = true
	}
	fmt.Fprintf(env.stdout, "imported %d line(s) from %s into %d entr%s\n", len(lines), name, len(keys), plural(len(keys), "y", "ies"))
	byWho := map[string]int{}
	for _, l := range lines {
		byWho[l.Principal]++
	}
	var whos []string
	for p, n := range byWho {
		if p == "" {
			p = "(no principal)"
		}
		whos = append(whos, fmt.Sprintf("%s (%d)", p, n))
	}
	sort.Strings(whos)
	fmt.Fprintf(env.stdout, "recorded as: %s\n", strings.Join(whos, ", "))
	if old > 0 {
		fmt.Fprintf(env.stdout, "%d line(s) are older than the history keeps (%d days): not kept\n", old, int(kept/(24*time.Hour)))
	}
	cat, prepared, err := importCatalog(ctx, env, tools, s)
	reportUnknownTools(env, cat, err, lines)
	fmt.Fprint(env.stdout, prepared)
	return 0
}

// importCatalog reads the catalog of tools that import checks the tool
// names against, once. With a store that keeps a saved view, it is read
// by an engine that also builds and saves the usage history's ranking view
// for it (on the default embedder, the one rank reads by default), so that
// the next rank starts with it instead of building it whole (half a
// second at 100,000 events); prepared then says so. Otherwise (PostgreSQL)
// the catalog is read without an index and the view is left to rank.
// importCatalog closes s (the store import recorded into): the engine it
// is given to does, or it does.
func importCatalog(ctx context.Context, env *cliEnv, tools *dirList, s usagedb.Store) (cat *registry.Catalog, prepared string, err error) {
	dirs, err := resolveToolPath(env, tools).existing(env, "usage import")
	if err != nil {
		s.Close()
		return nil, "", err
	}
	opts := engine.Options{Dirs: dirs, NoIndex: true, Getenv: env.getenv, Logger: logger(env)}
	if _, ok := s.(usagedb.Derived); ok {
		ef := engineFlags{name: embed.Default, timeout: 60 * time.Second, alpha: 0.5}
		opts = ef.options(env, dirs, nil)
		opts.NoThresholds = true
		opts.Usage = s // the engine closes it
	} else {
		s.Close()
	}
	start := time.Now()
	eng, err := newEngine(ctx, env, opts)
	if err != nil {
		if opts.Usage != nil {
			opts.Usage.Close()
		}
		return nil, "", err
	}
	eng.Close() // waits for the view to be saved; the catalog stays
	if f := eng.UsageFit(); f.Entries > 0 {
		prepared = fmt.Sprintf("ranking view of the history prepared for the catalog in %s (%d entr%s): the next rank starts with it\n",
			time.Since(start).Round(time.Millisecond), f.Entries, plural(f.Entries, "y", "ies"))
	}
	return eng.Catalog(), prepared, nil
}

// recordImport records the lines of content into s: whose each is as who
// says, those last used before what s keeps left out (who.cutoff is set
// to its Cutoff now). It returns the lines and how long s keeps an entry;
// an error (a bad line, the store's) records nothing.
func recordImport(ctx context.Context, s usagedb.Store, content []byte, who *importWho) ([]importLine, time.Duration, error) {
	st, err := s.Stats(ctx)
	if err != nil {
		return nil, 0, err
	}
	who.cutoff = st.Options.Cutoff(time.Now())
	lines, evs, err := parseImport(bytes.NewReader(content), *who)
	if err != nil {
		return nil, 0, err
	}
	if err := s.Record(ctx, evs...); err != nil {
		return nil, 0, err
	}
	return lines, st.Options.Retention, nil
}

// maxImport is the largest file import reads (it reads it whole, to name
// it by its content).
const maxImport = 256 << 20

// importWho says whose an import's lines are: given (--principal), else a
// line's own principal when key sealed it (an export of this
// installation's), else the file's. Lines last used before cutoff are not
// kept.
type importWho struct {
	file, given string
	key         []byte
	cutoff      time.Time
}

// of is the principal of line l, and whether its times are kept: the
// line is this installation's own record (its export sealed it, times and
// all), or the owner vouches for the file (--principal).
func (w importWho) of(l *importLine) (string, bool) {
	p := w.file
	sealed, timed := false, false
	if l.Seal != "" {
		timed = usagedb.Sealed(w.key, l.Seal, lineFields(l, 2)...)
		sealed = timed || usagedb.Sealed(w.key, l.Seal, lineFields(l, 1)...)
	}
	switch {
	case w.given != "":
		p, timed = w.given, true
	case sealed:
		p = l.Principal
	}
	return p, timed
}

// lineFields are what an export's seal binds: who recorded it, what for,
// how many calls and (from version 2 on) its time.
func lineFields(l *importLine, version int) []string {
	count, failed := int64(1), int64(0)
	if l.Count != nil {
		count = *l.Count
	}
	if l.Failed != nil {
		failed = *l.Failed
	}
	f := []string{"usage export " + strconv.Itoa(version), l.Principal, deref(l.Tool), l.Agent, usagedb.Normalize(deref(l.Request)),
		strconv.FormatInt(count, 10), strconv.FormatInt(failed, 10)}
	if version >= 2 {
		f = append(f, l.Time, l.First)
	}
	return f
}

// lineSeal is this installation's seal of an exported line.
func lineSeal(key []byte, l *importLine) string { return usagedb.Seal(key, lineFields(l, 2)...) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// stateDir is where this user's toolsrv state lives (the directory of the
// default usage store): the installation's key is there.
func stateDir(env *cliEnv) string { return statedir.Dir(env.getenv) }

// parseImport reads the import format: every line checked, the lines (each
// with the principal who says whose it is) and the events they make, or an
// error that names each bad line (the first 10).
func parseImport(r io.Reader, who importWho) ([]importLine, []usagedb.Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	var (
		lines []importLine
		evs   []usagedb.Event
		bad   []string
		nbad  int
	)
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		l, lineEvs, err := parseImportLine(text, who)
		if err != nil {
			if nbad++; nbad <= 10 {
				bad = append(bad, fmt.Sprintf("line %d: %v", n, err))
			}
			continue
		}
		lines = append(lines, l)
		evs = append(evs, lineEvs...)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than %d bytes", n+1, maxImportLine)
		}
		return nil, nil, err
	}
	if nbad > 10 {
		bad = append(bad, fmt.Sprintf("and %d more bad lines", nbad-10))
	}
	if nbad > 0 {
		return nil, nil, fmt.Errorf("%d invalid line(s):\n  %s", nbad, strings.Join(bad, "\n  "))
	}
	return lines, evs, nil
}

// parseImportLine checks one line and makes its events: one for the calls
// that succeeded, one for those that failed.
func parseImportLine(text []byte, who importWho) (importLine, []usagedb.Event, error) {
	var l importLine
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, nil, fmt.Errorf("not a JSON object of the import format: %v", err)
	}
	if dec.More() {
		return l, nil, errors.New("more than one JSON value on the line")
	}
	switch {
	case l.Request == nil:
		return l, nil, errors.New(`"request" is missing`)
	case usagedb.Normalize(*l.Request) == "":
		return l, nil, errors.New(`"request" is empty`)
	case l.Tool == nil:
		return l, nil, errors.New(`"tool" is missing (give "" for a request answered without a tool)`)
	}
	// A name no tool can have (a tool not in the catalog may come later:
	// it is kept; this one never could).
	if *l.Tool != "" {
		if err := registry.ValidProvidedName(*l.Tool); err != nil {
			return l, nil, fmt.Errorf(`"tool" is not a tool name (NAME, or PROVIDER:NAME for an MCP server's or a remote toolsrv's): %v`, err)
		}
	}
	var at time.Time
	if l.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			return l, nil, fmt.Errorf(`"time" %q is not an RFC3339 time (like 2026-03-01T12:00:00Z)`, l.Time)
		}
		at = t
	}
	var first time.Time
	if l.First != "" {
		t, err := time.Parse(time.RFC3339Nano, l.First)
		if err != nil {
			return l, nil, fmt.Errorf(`"first" %q is not an RFC3339 time (like 2026-03-01T12:00:00Z)`, l.First)
		}
		if at.IsZero() || t.After(at) {
			return l, nil, fmt.Errorf(`"first" %s is not at or before "time" (the last use)`, l.First)
		}
		first = t
	}
	count := int64(1)
	if l.Count != nil {
		if count = *l.Count; count < 1 || count > 1<<40 {
			return l, nil, fmt.Errorf(`"count" %d is not a number of calls (1 or more)`, count)
		}
	}
	failed := int64(0)
	switch {
	case l.Failed != nil:
		if failed = *l.Failed; failed < 0 || failed > count {
			return l, nil, fmt.Errorf(`"failed" %d is not between 0 and the count, %d`, failed, count)
		}
	case l.OK != nil && !*l.OK:
		failed = count
	}
	var own bool
	l.Principal, own = who.of(&l)
	if !at.IsZero() && at.Before(who.cutoff) {
		return l, nil, nil // older than the history keeps: not kept
	}
	if !own {
		// A line's time is its file's say: only this installation's own
		// record (its export, sealed with the time), or a file the owner
		// vouches for (--principal), keeps it. Any other
		// is recorded as of now, so that it never counts as older than
		// what this installation saw before the import (seniority,
		// index/usagetrust.go).
		at = time.Time{}
	}
	ev := usagedb.Event{Request: *l.Request, Tool: *l.Tool, Agent: l.Agent, Principal: l.Principal, Time: at, Offered: l.Offered,
		Source: usagedb.SourceImport, ID: l.ID}
	if len(l.ID) > usagedb.MaxID {
		return l, nil, fmt.Errorf(`"id" is longer than %d bytes`, usagedb.MaxID)
	}
	var evs []usagedb.Event
	if ok := count - failed; ok > 0 {
		e := ev
		e.OK, e.Count = true, int(ok)
		evs = append(evs, e)
	}
	if failed > 0 {
		e := ev
		e.OK, e.Count = false, int(failed)
		if e.ID != "" && len(evs) > 0 { // the line's second event: an ID of its own
			sum := sha256.Sum256([]byte(e.ID + "\x00failed"))
			e.ID = hex.EncodeToString(sum[:16])
		}
		evs = append(evs, e)
	}
	if own && !first.IsZero() && first.Before(at) && count > 1 {
		// This installation's line: its first use is the time of one
		// of its calls.
		if e := &evs[0]; e.Count == 1 {
			e.Time = first // the line's other calls are evs[1]'s
		} else {
			early := *e
			early.Count, early.Time = 1, first
			if early.ID != "" {
				sum := sha256.Sum256([]byte(e.ID + "\x00first"))
				early.ID = hex.EncodeToString(sum[:16])
			}
			e.Count--
			evs = append(evs, early)
		}
	}
	return l, evs, nil
}

// reportUnknownTools says how many import lines name a tool the catalog
// does not know (they are kept: the tool may come later). Tools of
// providers (MCP servers, remote toolsrv) are not in the catalog of the
// tool directories: they are not checked. cat is that catalog, err why
// it could not be read (the names are then not checked).
func reportUnknownTools(env *cliEnv, cat *registry.Catalog, err error, lines []importLine) {
	if err != nil {
		fmt.Fprintf(env.stdout, "tool names not checked: %v\n", err)
		return
	}
	unknown := map[string]int{}
	nUnknown, nProvided := 0, 0
	for _, l := range lines {
		name := *l.Tool
		switch {
		case name == "":
		case strings.Contains(name, registry.ProviderSep):
			nProvided++
		default:
			if _, ok := cat.Get(name); ok {
				continue
			}
			if _, ok := cat.HiddenReason(name); ok {
				continue
			}
			unknown[name]++
			nUnknown++
		}
	}
	if nUnknown > 0 {
		names := make([]string, 0, len(unknown))
		for n := range unknown {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			if unknown[names[i]] != unknown[names[j]] {
				return unknown[names[i]] > unknown[names[j]]
			}
			return names[i] < names[j]
		})
		var parts []string
		for i, n := range names {
			if i == 10 {
				parts = append(parts, fmt.Sprintf("and %d more", len(names)-10))
				break
			}
			parts = append(parts, fmt.Sprintf("%s (%d)", n, unknown[n]))
		}
		fmt.Fprintf(env.stdout, "%d line(s) name tools the catalog does not know, kept (the tool may come later): %s\n",
			nUnknown, strings.Join(parts, ", "))
	}
	if nProvided > 0 {
		fmt.Fprintf(env.stdout, "%d line(s) name tools of MCP servers or remote toolsrv (SERVER%sTOOL), not checked\n", nProvided, registry.ProviderSep)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func runUsageForget(ctx context.Context, env *cliEnv, args []string) int {
	fs, _, db := usageFlags(env, "forget", "(--tool NAME | --agent NAME | --principal NAME | --before DATE | --all)",
		"Removes entries from the usage history: those of a tool, of an agent, recorded by a principal\n"+
			"(toolsrv usage principals lists them), last used before a date\n"+
			"(YYYY-MM-DD, local midnight, or RFC3339), or all. What it removes is gone from the disk too:\n"+
			"the store is rewritten and its log emptied; --all also removes damaged copies set aside.\n"+
			"On a shared PostgreSQL store it forgets in the namespace alone, and needs the server: the rows are\n"+
			"deleted at once, and PostgreSQL frees their space at its next vacuum (see docs/postgres.md).")
	tool := fs.String("tool", "", "forget the entries of this tool")
	agent := fs.String("agent", "", "forget the entries of this agent")
	principal := fs.String("principal", "", "forget the entries this principal recorded (owner, mcp:NAME, 9p:AGENT, import:FILE#DIGEST, ...)")
	before := fs.String("before", "", "forget the entries last used before DATE (YYYY-MM-DD or RFC3339)")
	all := fs.Bool("all", false, "forget everything")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	var f usagedb.Filter
	given := 0
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "tool", "agent", "principal", "before", "all":
			given++
		}
	})
	if given != 1 {
		return usageError(fs, "give exactly one of --tool, --agent, --principal, --before and --all")
	}
	switch {
	case *all:
		f.All = true
	case *tool != "":
		f.Tool = *tool
	case *agent != "":
		f.Agent = *agent
	case *principal != "":
		f.Principal = *principal
	case *before != "":
		t, err := parseDate(*before)
		if err != nil {
			return usageError(fs, "--before: %v", err)
		}
		f.Before = t
	default:
		return usageError(fs, "give a non-empty value (or --all)")
	}
	s, err := openUsage(ctx, env, "usage forget", db, usagedb.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage forget:", err)
		return 1
	}
	defer s.Close()
	n, err := s.Forget(ctx, f)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage forget:", err)
		return 1
	}
	fmt.Fprintf(env.stdout, "forgot %d entr%s\n", n, plural(n, "y", "ies"))
	return 0
}

// parseDate is YYYY-MM-DD (local midnight) or an RFC3339 time.
func parseDate(s string) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD) or an RFC3339 time", s)
}

// principalRow is one principal as usage principals lists it: what the
// store holds of it and how the ranking hears it.
type principalRow struct {
	Principal string    `json:"principal"`
	Entries   int       `json:"entries"`
	Calls     int64     `json:"calls"`
	Failed    int64     `json:"failed"`
	Last      time.Time `json:"last"`
	// The ranking's side (index.PrincipalTrust), of the principal's unit
	// (another instance's principals are one: instance:ID).
	Unit   string  `json:"unit,omitempty"`
	Role   string  `json:"role"`
	Belief float64 `json:"belief"`
	Voice  string  `json:"voice"`
	Weight float64 `json:"weight"`
}

func runUsagePrincipals(ctx context.Context, env *cliEnv, args []string) int {
	fs, tools, db := usageFlags(env, "principals", "[--tools DIR] [--json]",
		"Lists who recorded the usage history (each principal: owner, mcp:NAME, 9p:AGENT, import:FILE#DIGEST,\n"+
			"instance:ID/..., legacy:AGENT) with its entries, calls and last use, and how far the ranking of the\n"+
			"catalog (--tools) believes it: its role, its belief (what its record has earned: its calls that\n"+
			"succeeded and agree with the tools' own texts and with the others), the voice it speaks in (owner,\n"+
			"own: established, crowd: with every principal not established, late: new since the last whole\n"+
			"build) and that voice's weight. The tools' authors (their examples) are listed as author:TOOL.\n"+
			"toolsrv usage ls --principal NAME shows a principal's entries; usage forget --principal NAME\n"+
			"forgets them.")
	asJSON := fs.Bool("json", false, "print the principals as a JSON array")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	s, err := openUsage(ctx, env, "usage principals", db, usagedb.Options{})
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv usage principals:", err)
		return 1
	}
	entries, _, err := s.Snapshot(ctx)
	if err != nil {
		s.Close()
		fmt.Fprintln(env.stderr, "toolsrv usage principals:", err)
		return 1
	}
	rows := map[string]*principalRow{}
	for _, e := range entries {
		r := rows[e.Key.Principal]
		if r == nil {
			r = &principalRow{Principal: e.Key.Principal}
			rows[e.Key.Principal] = r
		}
		r.Entries++
		r.Calls += e.Count
		r.Failed += e.Failed
		if e.Last.After(r.Last) {
			r.Last = e.Last
		}
	}
	// How the ranking hears them: an engine of the catalog with the
	// history (it closes the store).
	dirs, err := resolveToolPath(env, tools).existing(env, "usage principals")
	if err != nil {
		s.Close()
		fmt.Fprintln(env.stderr, "toolsrv usage principals:", err)
		return 1
	}
	ef := engineFlags{name: embed.Default, timeout: 60 * time.Second, alpha: 0.5}
	opts := ef.options(env, dirs, nil)
	opts.NoThresholds = true
	opts.Usage = s
	eng, err := newEngine(ctx, env, opts)
	if err != nil {
		s.Close()
		fmt.Fprintln(env.stderr, "toolsrv usage principals:", err)
		return 1
	}
	heard := eng.UsagePrincipals()
	eng.Close()
	byUnit := map[string]int{}
	for i, p := range heard {
		byUnit[p.Principal] = i
	}
	out := make([]principalRow, 0, len(rows))
	for _, r := range rows {
		unit := usagedb.Unit(r.Principal)
		if unit != r.Principal {
			r.Unit = unit
		}
		r.Role, r.Voice = "other", "-"
		if i, ok := byUnit[unit]; ok {
			h := heard[i]
			r.Role, r.Belief, r.Voice, r.Weight = h.Role, h.Belief, h.Voice, h.Weight
		}
		out = append(out, *r)
	}
	for _, h := range heard {
		if h.Role == "author" {
			out = append(out, principalRow{Principal: h.Principal, Entries: h.Entries, Role: h.Role, Belief: h.Belief, Voice: h.Voice, Weight: h.Weight})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		return out[i].Principal < out[j].Principal
	})
	if *asJSON {
		if err := writeJSON(env.stdout, out); err != nil {
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tROLE\tBELIEF\tVOICE\tWEIGHT\tENTRIES\tCALLS\tFAILED\tLAST")
	for _, r := range out {
		last := "-"
		if !r.Last.IsZero() {
			last = r.Last.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.2f\t%d\t%d\t%d\t%s\n", oneLine(r.Principal, 60), r.Role, r.Belief, r.Voice, r.Weight,
			r.Entries, r.Calls, r.Failed, last)
	}
	tw.Flush()
	if len(out) == 0 {
		fmt.Fprintln(env.stderr, "toolsrv usage principals: no history")
	}
	return 0
}
