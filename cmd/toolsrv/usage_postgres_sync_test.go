package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/testdeps"
	usagedb "github.com/toolsrv/toolsrv/usage"
)

// viewLog follows the Debug log of a serving toolsrv (-v -v): when each
// "usage history in effect" line came, with its entries.
type viewLog struct {
	mu    sync.Mutex
	seen  []viewAt
	lines []string
}

type viewAt struct {
	at      time.Time
	entries int
}

var entriesRE = regexp.MustCompile(`usage history in effect.* entries=(\d+)`)

func (v *viewLog) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		now := time.Now()
		v.mu.Lock()
		if len(v.lines) < 200 {
			v.lines = append(v.lines, sc.Text())
		}
		if m := entriesRE.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			v.seen = append(v.seen, viewAt{now, n})
		}
		v.mu.Unlock()
	}
}

// first is when the view first held at least n entries (false: not yet).
func (v *viewLog) first(n int) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.seen {
		if s.entries >= n {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// has reports whether a line so far contains s.
func (v *viewLog) has(s string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, l := range v.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func (v *viewLog) snapshot() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

func (v *viewLog) latest() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.seen) == 0 {
		return -1
	}
	return v.seen[len(v.seen)-1].entries
}

// startServing runs bin with args (serve or mcp, -v -v) until the test
// ends, its standard input kept open, its log followed.
func startServing(t *testing.T, bin string, args ...string) *viewLog {
	t.Helper()
	cmd := osexec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	v := &viewLog{}
	done := make(chan struct{})
	go func() { v.follow(errp); close(done) }()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	return v
}

// Two toolsrv serve and one toolsrv mcp, real processes on one
// PostgreSQL server, follow 3 × 2,000 events recorded at once by three
// other instances: each process's view reaches every event. The time
// from the k-th Record returning to each process's view first holding k
// entries more than it started with is logged (p50, p99): it includes
// the engine applying the history (embedding the new requests, choosing
// the weight), not the store's lag alone (TestThreeInstances in
// usage/postgres measures that).
func TestUsagePostgresServingProcesses(t *testing.T) {
	testdeps.Long(t, "three serving processes follow 6,000 events")
	pg := testdeps.StartPostgres(t)
	bin := buildToolsrv(t)
	tools, _ := filepath.Abs("../../examples/tools")
	dsn := pg.URL("postgres", testdeps.PostgresPassword, "postgres")
	var names []string
	metas, _ := filepath.Glob(filepath.Join(tools, "*.meta"))
	for _, m := range metas {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".meta"))
	}
	common := []string{"--tools", tools, "--no-cache", "--usage-db", dsn, "-v=2"}
	var views []*viewLog
	for i := 0; i < 2; i++ {
		sock := filepath.Join(t.TempDir(), "9p.sock")
		views = append(views, startServing(t, bin, append([]string{"serve", "--listen", "unix:" + sock, "--workdir", mcpProject(t)}, common...)...))
	}
	views = append(views, startServing(t, bin, append([]string{"mcp", "--workdir", mcpProject(t)}, common...)...))
	ctx := context.Background()
	// Each process is ready; its history is empty (the example tools
	// have no examples), or what it logged.
	base := make([]int, len(views))
	for i, v := range views {
		deadline := time.Now().Add(2 * time.Minute)
		for !v.has("index ready") {
			if time.Now().After(deadline) {
				t.Fatalf("process %d not ready within 2 minutes:\n%s", i, strings.Join(v.snapshot(), "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		base[i] = max(v.latest(), 0)
	}

	const n = 2000
	var mu sync.Mutex
	var returned []time.Time
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		s, _, err := usagedb.Open(ctx, dsn, usagedb.Options{LocalDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				ev := usagedb.Event{Request: fmt.Sprintf("writer %d asks for thing number %d", w, j), Tool: names[j%len(names)],
					Agent: fmt.Sprintf("w%d-a%d", w, j%4), OK: true, Source: usagedb.SourceMCP}
				if err := s.Record(ctx, ev); err != nil {
					t.Error(err)
					return
				}
				now := time.Now()
				mu.Lock()
				returned = append(returned, now)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(returned, func(i, j int) bool { return returned[i].Before(returned[j]) })
	var lags []time.Duration
	for i, v := range views {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if _, ok := v.first(base[i] + 3*n); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d's view holds %d entries 3 minutes after the last Record, want %d\n%s", i, v.latest(), base[i]+3*n, strings.Join(v.snapshot(), "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		for k, at := range returned {
			seen, _ := v.first(base[i] + k + 1)
			lags = append(lags, max(seen.Sub(at), 0))
		}
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	q := func(f float64) time.Duration { return lags[min(len(lags)-1, int(f*float64(len(lags))))] }
	t.Logf("%d events in 3 processes' views: from Record to the view, p50 %v, p99 %v, max %v", 3*n, q(0.5), q(0.99), q(1))
}
