package bench

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/embed"
	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/registry"
)

// topicsCorpus is a small labelled corpus (testdata/topics): ten tools on
// ten topics, one request each.
const topicsCorpus = "testdata/topics"

// Run end to end on a tiny catalog: real files, registry, watcher, index,
// chromem and a live update. Only counts are checked, never speed.
func TestRunSmall(t *testing.T) {
	corpus := topicsCorpus
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := Config{
		Sizes: []int{40}, Corpora: []string{corpus}, Queries: 8, LiveSize: 25, LiveUpdates: 3, WorkDir: t.TempDir(),
		UsageSize: 30, UsageEvents: 300,
		NewEmbedder: func() (embed.Embedder, error) { return builtin.New() },
		Logger:      slog.New(slog.DiscardHandler),
	}
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sizes) != 1 {
		t.Fatalf("%d size results", len(rep.Sizes))
	}
	s := rep.Sizes[0]
	if s.Tools != 40 || s.ColdEmbedded < 40 || s.WarmEmbedded != 0 {
		t.Errorf("tools %d, cold build embedded %d (want ≥ 40), warm build embedded %d (want 0)", s.Tools, s.ColdEmbedded, s.WarmEmbedded)
	}
	for name, l := range map[string]Latency{"rank": s.Rank, "bm25": s.RankLexical, "chromem": s.ChromemText, "chromem vector": s.ChromemVector} {
		if l.N != 8 || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s latency %+v: want 8 samples, p99 ≥ p50 > 0", name, l)
		}
	}
	if s.RankAll.N != 8 || s.PruneDiffers != 0 {
		t.Errorf("scoring every tool: %+v, %d queries differ from the pruned ranking; want 8 samples, none differing", s.RankAll, s.PruneDiffers)
	}
	if s.NineP != nil || s.NinePNote == "" {
		t.Errorf("no 9P function was given, yet NineP = %+v, note %q", s.NineP, s.NinePNote)
	}
	if rep.Live == nil || rep.Live.Misses != 0 || rep.Live.Rankable.N != 3 || rep.Live.Registry.N != 3 {
		t.Fatalf("live update %+v: want 3 writes, all rankable", rep.Live)
	}
	if rep.Live.Rankable.P50 < rep.Live.Registry.P50 {
		t.Errorf("a tool was rankable (%v) before it was in the registry's catalog (%v)", rep.Live.Rankable.P50, rep.Live.Registry.P50)
	}
	if u := rep.Usage; u == nil || u.Entries == 0 || u.Entries > 300 || u.Rank.N != 8 || u.RankUsage.N != 8 || u.RankRatio <= 0 || u.Start <= 0 || u.StartUsage <= 0 {
		t.Errorf("usage %+v: want entries in (0, 300], 8 rankings each way, a ratio and start times", u)
	}
	md := rep.Markdown(ThisMachine(), "toolsrv bench --test")
	for _, want := range []string{"| 40 |", "write → rankable", "toolsrv bench --test", "live update p99 at 25 tools", "rank, with the history", "start-up added by 300 usage events"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	l := Summarize(s)
	if l.N != 100 || l.P50 != 50*time.Millisecond || l.P99 != 99*time.Millisecond || l.Max != 100*time.Millisecond || l.Mean != 50500*time.Microsecond {
		t.Fatalf("Summarize = %+v", l)
	}
	if (Summarize(nil) != Latency{}) {
		t.Fatal("empty samples should give a zero Latency")
	}
}

func TestChecksSayByHowMuch(t *testing.T) {
	r := &Report{Sizes: []SizeResult{{Tools: 1000, Rank: Latency{P50: 1500 * time.Microsecond}}, {Tools: 100000, Rank: Latency{P50: 20 * time.Millisecond}}},
		Live: &LiveResult{Tools: 1000, Rankable: Latency{N: 10, P99: 300 * time.Millisecond}}}
	got := strings.Join(r.Checks(), "\n")
	for _, want := range []string{"1k tools: 1.50 ms > 1.00 ms: MISSED by 0.500 ms", "100k tools: 20.00 ms ≤ 25.00 ms: met", "p99 at 1000 tools: 300 ms > 250 ms: MISSED by 50.00 ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("checks lack %q:\n%s", want, got)
		}
	}
}

func TestSynthNamesAreValid(t *testing.T) {
	for i, base := range []string{"get_weather", "Weird Name!*", "_under", "ü", strings.Repeat("x", 200)} {
		n := synthName(base, i)
		if err := registry.ValidName(n); err != nil {
			t.Errorf("synthName(%q) = %q: %v", base, n, err)
		}
	}
}
