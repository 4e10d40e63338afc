package usage

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process has used (user and system): the
// benchmarks report it beside the wall time, which on a shared machine
// says more about the other processes than about this one.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs b.Loop, reporting the CPU time per iteration as cpu-ns/op.
func loop(b *testing.B, body func()) {
	n := 0
	var cpu time.Duration
	for b.Loop() {
		c := cpuTime()
		body()
		cpu += cpuTime() - c
		n++
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
}

// fill records n distinct entries (200 tools, 20 agents, requests of about
// 60 bytes, offered lists of 5) into a store without caps.
func fill(tb testing.TB, s Store, n int) {
	tb.Helper()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	const batch = 5000
	evs := make([]Event, 0, batch)
	for i := range n {
		tool := fmt.Sprintf("tool_%03d", i%200)
		evs = append(evs, Event{
			Request: fmt.Sprintf("Please run the %s thing on request number %d of the day", tool, i),
			Tool:    tool,
			OK:      i%7 != 0,
			Agent:   fmt.Sprintf("agent-%02d", i%20),
			Time:    base.Add(time.Duration(i) * time.Millisecond),
			Offered: []string{fmt.Sprintf("tool_%03d", i%50), fmt.Sprintf("tool_%03d", i%50+1), tool, "git_status", "grep"},
			Source:  SourceMCP,
		})
		if len(evs) == batch || i == n-1 {
			if err := s.Record(ctx, evs...); err != nil {
				tb.Fatal(err)
			}
			evs = evs[:0]
		}
	}
}

var uncapped = Options{PerTool: -1, Total: -1, PerAgentTool: -1, MaxCount: -1}

// BenchmarkSnapshot reads every entry of a store of 50,000 (the default
// cap) and 100,000 entries, as the ranking does at start-up.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{DefaultTotal, 100_000} {
		b.Run(fmt.Sprint(n/1000, "k"), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "usage.db")
			s, _, err := Open(ctx, path, uncapped)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fill(b, s, n)
			loop(b, func() {
				es, _, err := s.Snapshot(ctx)
				if err != nil || len(es) != n {
					b.Fatal(len(es), err)
				}
			})
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "usage.db")
	s, _, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fill(b, s, 10_000)
	i := 0
	loop(b, func() {
		i++
		if err := s.Record(ctx, Event{Request: fmt.Sprintf("show me request %d", i%500), Tool: "tool_001", OK: true, Agent: "bench", Source: SourceCLI,
			Offered: []string{"tool_001", "tool_002"}}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkOpen is opening a full store (the default cap, 50,000
// entries): its check of every page included.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "usage.db")
	s, _, err := Open(ctx, path, uncapped)
	if err != nil {
		b.Fatal(err)
	}
	fill(b, s, DefaultTotal)
	s.Close()
	loop(b, func() {
		s, _, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	})
}
