package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where figures were measured.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	Kernel     string `json:"kernel"`
	Date       string `json:"date"`
	// Load is /proc/loadavg's 1, 5 and 15 minute averages when described:
	// other work on a shared machine shows up in the tails.
	Load string `json:"load"`
}

// ThisMachine describes the running machine.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s, Linux %s, %s, load average %s", m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.Kernel, m.Date, m.Load)
}

// The figures toolsrv holds itself to.
const (
	targetRank1k   = time.Millisecond
	targetRank100k = 25 * time.Millisecond
	targetLive     = 250 * time.Millisecond
	// The usage history: a ranking with 100k events at most 1.3× one
	// without; a start with them at most 150 ms later.
	targetUsageRatio = 1.3
	targetUsageStart = 150 * time.Millisecond
	// The pruned ranking at 100k tools; calls: a warm server's no slower
	// than bubblewrap's, the CLI's at most 1.5× its start without a call.
	targetPrune100k = time.Millisecond
	targetCallShow  = 1.5
)

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.3f", float64(d)/1e6)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2f", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.0f", float64(d)/1e6)
	}
}

func lat(l Latency) string { return ms(l.P50) + " / " + ms(l.P99) }

// Markdown renders the report as tables (times in ms), with the machine,
// the command and the targets checked.
func (r *Report) Markdown(m Machine, command string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Command: `%s`  \nMachine: %s  \nEmbedder: `%s`\n\n", command, m, r.Embedder)
	b.WriteString("Index build (ms; cold = empty cache, every tool embedded; warm = new index over the saved cache):\n\n")
	b.WriteString("| tools | dim | write .meta | registry load | cold build (embedded) | warm build (embedded) | chromem AddDocuments (same vectors) |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Sizes {
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s (%d) | %s (%d) | %s |\n", s.Tools, s.Dim, ms(s.WriteFiles), ms(s.RegistryLoad), ms(s.ColdBuild), s.ColdEmbedded, ms(s.WarmBuild), s.WarmEmbedded, ms(s.ChromemBuild))
	}
	if c := r.Calls; c != nil {
		fmt.Fprintf(&b, "\nCalls of a tool that reads its input and says ok (`%s`), %d after %d of warm-up, the ways in turn each round, ms:\n\n", callTool, c.Calls, c.Warmup)
		b.WriteString("| way | p50 | p99 |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| warm `toolsrv mcp`, `call_tool` over stdio | %s | %s |\n", ms(c.MCP.P50), ms(c.MCP.P99))
		fmt.Fprintf(&b, "| `toolsrv call` (a new process) | %s | %s |\n", ms(c.CLICall.P50), ms(c.CLICall.P99))
		fmt.Fprintf(&b, "| `toolsrv show` of the tool (the same start, no call) | %s | %s |\n", ms(c.CLIShow.P50), ms(c.CLIShow.P99))
		if c.Bwrap != nil {
			fmt.Fprintf(&b, "| bubblewrap (`--ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent`) | %s | %s |\n", ms(c.Bwrap.P50), ms(c.Bwrap.P99))
		} else {
			fmt.Fprintf(&b, "| bubblewrap | – (%s) | |\n", c.BwrapNote)
		}
		fmt.Fprintf(&b, "| the bare command (fork and exec) | %s | %s |\n", ms(c.Bare.P50), ms(c.Bare.P99))
	}
	b.WriteString("\nRank latency, p50 / p99 in ms (text in, top 10 out; same queries for every column):\n\n")
	b.WriteString("| tools | toolsrv hybrid (index.Rank) | scoring every tool (not pruned) | without the learned last step | ratio of p50s | BM25 alone (index.Rank, bm25) | chromem text in (EmbedQuery + QueryEmbedding) | chromem QueryEmbedding alone | EmbedQuery alone | 9P rank transaction |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.Sizes {
		np := s.NinePNote
		if s.NineP != nil {
			np = lat(*s.NineP)
		}
		ratio := "–"
		if s.RankFixed.P50 > 0 {
			ratio = fmt.Sprintf("%.2f", float64(s.Rank.P50)/float64(s.RankFixed.P50))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Tools, lat(s.Rank), lat(s.RankAll), lat(s.RankFixed), ratio, lat(s.RankLexical), lat(s.ChromemText), lat(s.ChromemVector), lat(s.QueryEmbedding), np)
	}
	if l := r.Live; l != nil {
		fmt.Fprintf(&b, "\nLive update at %d tools (%d writes; write-then-rename of a new .meta → top hit for its unique word, through the registry watcher and index.Follow), ms:\n\n", l.Tools, l.Rankable.N+l.Misses)
		b.WriteString("| step | p50 | p99 | max |\n|---|---:|---:|---:|\n")
		fmt.Fprintf(&b, "| write → in the registry's catalog | %s | %s | %s |\n", ms(l.Registry.P50), ms(l.Registry.P99), ms(l.Registry.Max))
		fmt.Fprintf(&b, "| write → rankable | %s | %s | %s |\n", ms(l.Rankable.P50), ms(l.Rankable.P99), ms(l.Rankable.Max))
		fmt.Fprintf(&b, "| baseline: rescan + new index, change already known (no watcher, no Follow) | %s | %s | %s |\n", ms(l.Rebuild.P50), ms(l.Rebuild.P99), ms(l.Rebuild.Max))
		if l.Misses > 0 {
			fmt.Fprintf(&b, "\n%d write(s) were not rankable within 5 s.\n", l.Misses)
		}
	}
	if u := r.Usage; u != nil {
		fmt.Fprintf(&b, "\nUsage history at %d tools: %d events recorded (the store merged and capped them to %d entries; usage weight chosen: %.2f), ms:\n\n", u.Tools, u.Events, u.Entries, u.Weight)
		b.WriteString("| | p50 | p99 |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| rank, no history | %s | %s |\n", ms(u.Rank.P50), ms(u.Rank.P99))
		fmt.Fprintf(&b, "| rank, with the history (ratio of p50s %.2f) | %s | %s |\n", u.RankRatio, ms(u.RankUsage.P50), ms(u.RankUsage.P99))
		fmt.Fprintf(&b, "\nEngine start (warm cache, best of 3): empty store %s ms; with the history, applied in the background as serve and mcp do, %s ms; waiting until it is applied (as rank does) adds %s ms with the view a previous start saved, %s ms after one more event (the saved view brought up to date), %s ms when it must be built whole.\n", ms(u.Start), ms(u.StartUsage), ms(u.Apply), ms(u.ApplyDelta), ms(u.ApplyBuilt))
	}
	b.WriteString("\nTargets:\n\n")
	for _, t := range r.Checks() {
		fmt.Fprintf(&b, "- %s\n", t)
	}
	return b.String()
}

// Checks compares the figures with the targets, saying by how much a miss
// misses.
func (r *Report) Checks() []string {
	var out []string
	check := func(what string, got, want time.Duration) {
		if got <= want {
			out = append(out, fmt.Sprintf("%s: %s ms ≤ %s ms: met", what, ms(got), ms(want)))
		} else {
			out = append(out, fmt.Sprintf("%s: %s ms > %s ms: MISSED by %s ms (×%.1f)", what, ms(got), ms(want), ms(got-want), float64(got)/float64(want)))
		}
	}
	for _, s := range r.Sizes {
		switch s.Tools {
		case 1000:
			check("rank p50 at 1k tools", s.Rank.P50, targetRank1k)
		case 100000:
			check("rank p50 at 100k tools", s.Rank.P50, targetRank100k)
			check("rank p50 at 100k tools, pruned", s.Rank.P50, targetPrune100k)
		}
		if s.Rank.N > 0 {
			if s.PruneDiffers == 0 {
				out = append(out, fmt.Sprintf("pruned top 10 at %d tools: the same as scoring every tool for all %d queries: met", s.Tools, s.Rank.N))
			} else {
				out = append(out, fmt.Sprintf("pruned top 10 at %d tools: DIFFERS from scoring every tool for %d of %d queries: MISSED", s.Tools, s.PruneDiffers, s.Rank.N))
			}
		}
	}
	if c := r.Calls; c != nil {
		if c.Bwrap != nil {
			what := "warm toolsrv mcp call_tool p50 against bubblewrap's"
			if c.MCP.P50 <= c.Bwrap.P50 {
				out = append(out, fmt.Sprintf("%s: %s ms ≤ %s ms: met", what, ms(c.MCP.P50), ms(c.Bwrap.P50)))
			} else {
				out = append(out, fmt.Sprintf("%s: %s ms > %s ms: MISSED (×%.2f)", what, ms(c.MCP.P50), ms(c.Bwrap.P50), float64(c.MCP.P50)/float64(c.Bwrap.P50)))
			}
		}
		if c.CLIShow.P50 > 0 {
			ratio := float64(c.CLICall.P50) / float64(c.CLIShow.P50)
			what := "toolsrv call p50 against toolsrv show's"
			if ratio <= targetCallShow {
				out = append(out, fmt.Sprintf("%s: ×%.2f ≤ ×%.1f: met", what, ratio, targetCallShow))
			} else {
				out = append(out, fmt.Sprintf("%s: ×%.2f > ×%.1f: MISSED", what, ratio, targetCallShow))
			}
		}
	}
	if r.Live != nil && r.Live.Rankable.N > 0 {
		check(fmt.Sprintf("live update p99 at %d tools", r.Live.Tools), r.Live.Rankable.P99, targetLive)
	}
	if u := r.Usage; u != nil && u.Rank.P50 > 0 {
		what := fmt.Sprintf("rank p50 with %d usage events over without, at %d tools", u.Events, u.Tools)
		if u.RankRatio <= targetUsageRatio {
			out = append(out, fmt.Sprintf("%s: ×%.2f ≤ ×%.2f: met", what, u.RankRatio, targetUsageRatio))
		} else {
			out = append(out, fmt.Sprintf("%s: ×%.2f > ×%.2f: MISSED", what, u.RankRatio, targetUsageRatio))
		}
		check(fmt.Sprintf("start-up added by %d usage events", u.Events), max(0, u.StartUsage-u.Start), targetUsageStart)
		check(fmt.Sprintf("start-up added by %d usage events, waiting for them as rank does (view saved)", u.Events), max(0, u.Apply), targetUsageStart)
		check(fmt.Sprintf("start-up added by %d usage events, waiting for them as rank does, one event after the view was saved", u.Events), max(0, u.ApplyDelta), targetUsageStart)
	}
	if len(out) == 0 {
		out = append(out, "no size with a target was run (targets: rank p50 ≤ 1 ms at 1k tools, ≤ 25 ms at 100k; live update p99 ≤ 250 ms)")
	}
	return out
}
