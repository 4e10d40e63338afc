package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
)

// benchCatalog writes n synthetic tools (verb × object × qualifier) and
// returns the directory and some requests for them.
func benchCatalog(b *testing.B, n int) (string, []string) {
	b.Helper()
	verbs := []string{"list", "create", "delete", "update", "search", "export", "import", "archive", "restore", "rename",
		"compress", "encrypt", "validate", "summarise", "translate", "schedule", "monitor", "backup", "sync", "merge"}
	objects := []string{"invoices", "calendar events", "git branches", "docker images", "log files", "user accounts",
		"database tables", "email drafts", "photos", "spreadsheets", "dns records", "firewall rules", "kubernetes pods",
		"music playlists", "weather alerts", "bank transfers", "shopping lists", "pdf documents", "ssh keys", "cron jobs"}
	quals := []string{"in the cloud", "on this machine", "for a team", "by date", "in bulk", "with a preview", "safely",
		"from a backup", "as csv", "over the network"}
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		v, o, q := verbs[i%len(verbs)], objects[(i/len(verbs))%len(objects)], quals[(i/(len(verbs)*len(objects)))%len(quals)]
		name := fmt.Sprintf("t%04d", i)
		meta := fmt.Sprintf(`{"description":"%s %s %s","keywords":[%q,%q],"args":{"type":"object","properties":{"target":{"type":"string"}}},"cmd":"true"}`,
			v, o, q, v+" "+o, o)
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), []byte(meta), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var queries []string
	for i := 0; i < 40; i++ {
		queries = append(queries, fmt.Sprintf("please %s my %s %s", verbs[(i*7)%len(verbs)], objects[(i*3)%len(objects)], quals[i%len(quals)]))
	}
	return dir, queries
}

func p50(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkFindToolsStdio measures find_tools over stdio (the SDK's client
// to the built "toolsrv mcp", 1,000 tools) against the same ranking in
// process (engine.Rank, what "toolsrv rank" does for one message), the
// two interleaved in one run; it reports both medians and their ratio.
//
//	go test -run '^$' -bench FindToolsStdio -benchtime 400x ./cmd/toolsrv/
func BenchmarkFindToolsStdio(b *testing.B) {
	dir, queries := benchCatalog(b, 1000)
	bin := buildToolsrv(b)
	ctx := context.Background()
	cmd := osexec.Command(bin, "mcp", "--tools", dir, "--no-cache", "--workdir", b.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "LANG=C.UTF-8"}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{dir}, NoCache: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	for _, q := range queries { // warm both
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"query": q}}); err != nil {
			b.Fatal(err)
		}
		if _, err := eng.Rank(ctx, engine.Request{Query: q}); err != nil {
			b.Fatal(err)
		}
	}
	var stdio, inproc []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"query": q}})
		stdio = append(stdio, time.Since(t0))
		if err != nil || r.IsError {
			b.Fatal(err, r)
		}
		t0 = time.Now()
		if _, err := eng.Rank(ctx, engine.Request{Query: q}); err != nil {
			b.Fatal(err)
		}
		inproc = append(inproc, time.Since(t0))
	}
	b.StopTimer()
	s, r := p50(stdio), p50(inproc)
	b.ReportMetric(float64(s.Microseconds()), "find_tools-p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "rank-p50-µs")
	b.ReportMetric(float64(s)/float64(r), "ratio")
}
