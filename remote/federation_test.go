package remote

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/internal/sshtest"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/registry"
)

func writeFile(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// waitCatalog waits until cond holds for the engine's catalog, checking
// it at every change.
func waitCatalog(t *testing.T, ctx context.Context, eng *engine.Engine, what string, cond func(*registry.Catalog) bool) *registry.Catalog {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := eng.Registry().Subscribe(sctx)
	for cat := eng.Catalog(); ; {
		if cond(cat) {
			return cat
		}
		select {
		case ch, ok := <-changes:
			if !ok {
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			}
			cat = ch.Catalog
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; the catalog has %s", what, ctx.Err(), catalogSummary(eng.Catalog()))
		}
	}
}

func catalogSummary(cat *registry.Catalog) string {
	var b strings.Builder
	for _, tl := range cat.Tools {
		b.WriteString(tl.Name + " ")
	}
	for _, h := range cat.Hidden {
		b.WriteString("(hidden " + h.Name + ": " + h.Reason + ") ")
	}
	for _, p := range cat.Problems {
		b.WriteString("(problem " + p.Name + ": " + p.Msg + ") ")
	}
	return b.String()
}

// topRanked waits until the engine ranks want first for text (the index
// follows the catalog a moment later), and fails when ctx ends.
func topRanked(t *testing.T, ctx context.Context, eng *engine.Engine, text, want string) {
	t.Helper()
	var got []string
	for {
		ans, err := eng.Rank(ctx, engine.Request{Query: text, Limit: 5, All: true})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, o := range ans.Tools {
			got = append(got, o.Name)
		}
		if len(got) > 0 && got[0] == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("ranking %q: %v, want %s first", text, got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func description(cat *registry.Catalog, name string) string {
	if tl, ok := cat.Get(name); ok {
		return tl.Description
	}
	return ""
}

// Two toolsrvs: the remote's catalog (its own tools and a local directory
// sent to it, resolved on its host) joins the local one as srv:TOOL,
// ranked with the local tools, called there; an edit there shows up here;
// the remote killed and kept away, its tools are hidden and left out of
// ranking while the local ones keep working; back, its tools return
// without restarting the local toolsrv.
func TestFederation(t *testing.T) {
	testdeps.Long(t, "real ssh logins, remotes dropped and reconnected, ~55 s")
	s := sshtest.Start(t)
	host := sshtest.NewHost(t, toolsrvBin(t), nil)
	host.WriteBin(t, "toolsrv-test-journal", journal)
	host.WriteTool(t, "disk_usage", `{"description": "Show how full each file system is", "keywords": ["df", "disk space"], "cmd": "/bin/echo"}`)
	host.WriteTool(t, "backup", `{"description": "The server's own backup job", "cmd": "/bin/true"}`)

	local := t.TempDir()
	writeFile(t, filepath.Join(local, "weather.meta"), `{"description": "Current weather forecast for a city", "keywords": ["rain", "temperature"], "cmd": "/bin/true"}`, 0o644)
	writeFile(t, filepath.Join(local, "git_status.meta"), `{"description": "Show the working tree status of a git repository", "cmd": "/bin/true"}`, 0o644)
	send := t.TempDir()
	writeFile(t, filepath.Join(send, "system_logs.meta"), systemLogs, 0o644)
	writeFile(t, filepath.Join(send, "broken.meta"), "{\n  \"description\": \"d\",\n  \"cmd\": 7\n}", 0o644)
	writeFile(t, filepath.Join(send, "helper.meta"), `{"description": "runs the script beside it"}`, 0o644)
	writeFile(t, filepath.Join(send, "helper"), "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, filepath.Join(send, "backup.meta"), `{"description": "The laptop's backup job, run on the server", "cmd": "/bin/true"}`, 0o644)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, err := New(Options{Name: "srv", Addr: s.Addr, Tools: send, Session: "laptop", Poll: 100 * time.Millisecond,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Dial:   stallOpts(dialOpts(s, host.Cmd))})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Dirs: []string{local}, CacheDir: t.TempDir(), NoThresholds: true,
		Providers: []engine.Provider{p}, ProviderWait: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		eng.Run(runCtx)
	}()
	defer func() {
		stop()
		<-ran // the index saves its cache as Run ends
		eng.Close()
	}()

	cat := waitCatalog(t, ctx, eng, "the remote's tools", func(c *registry.Catalog) bool {
		_, ok := c.Get("srv:system_logs")
		return ok
	})
	// The sent definition took the remote's variant, the remote's own
	// tools are there, and the sent backup won over the remote's own.
	for name, want := range map[string]string{
		"srv:system_logs": "Recent entries of the systemd journal",
		"srv:disk_usage":  "Show how full each file system is",
		"srv:backup":      "The laptop's backup job, run on the server",
		"weather":         "Current weather forecast for a city",
	} {
		if got := description(cat, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	probs := map[string]string{}
	for _, pr := range cat.Problems {
		probs[pr.Name] = pr.File + ": " + pr.Msg
	}
	if got := probs["srv:broken"]; !strings.Contains(got, "toolsrv at "+s.Addr+" session/laptop/meta/broken") || !strings.Contains(got, "must be a string") {
		t.Errorf("the invalid sent definition: %q", got)
	}
	if got := probs["srv:helper"]; !strings.Contains(got, "not sent: its command is the executable") {
		t.Errorf("the definition with an executable beside it: %q", got)
	}

	// Ranked with the local tools, by the local index.
	topRanked(t, ctx, eng, "show the systemd journal entries", "srv:system_logs")
	topRanked(t, ctx, eng, "will it rain tomorrow", "weather")

	// A call runs on the remote host.
	res, err := eng.Call(ctx, engine.CallRequest{Tool: "srv:system_logs", Arguments: []byte(`{"lines": 3}`), Context: exec.CallContext{}})
	if err != nil || string(res.Stdout) != "journal entries of the remote host, asked: {\"lines\":3}\n" {
		t.Fatalf("call: %+v %v", res, err)
	}
	if _, err := eng.Call(ctx, engine.CallRequest{Tool: "srv:system_logs", Arguments: []byte(`{"lines": "three"}`), Context: exec.CallContext{}}); !errors.Is(err, exec.ErrInvalidArgs) {
		t.Errorf("bad arguments: %v, want them refused here", err)
	}

	// An edit on the remote shows up here, rankable.
	host.WriteTool(t, "disk_usage", `{"description": "Count the inodes used on each file system", "keywords": ["inode"], "cmd": "/bin/echo"}`)
	waitCatalog(t, ctx, eng, "the remote's edit", func(c *registry.Catalog) bool {
		return description(c, "srv:disk_usage") == "Count the inodes used on each file system"
	})
	topRanked(t, ctx, eng, "how many inodes are used", "srv:disk_usage")
	// And a definition added to the directory sent follows.
	writeFile(t, filepath.Join(send, "uptime.meta"), `{"description": "How long the machine has been up", "cmd": "/bin/true"}`, 0o644)
	waitCatalog(t, ctx, eng, "a new sent definition", func(c *registry.Catalog) bool { _, ok := c.Get("srv:uptime"); return ok })

	// The remote is killed and kept down: its tools are hidden with the
	// reason and left out of ranking; the local ones are untouched.
	writeFile(t, host.Down, "", 0o644)
	host.StopServer(t)
	cat = waitCatalog(t, ctx, eng, "the remote's tools hidden", func(c *registry.Catalog) bool {
		_, ok := c.Get("srv:system_logs")
		return !ok
	})
	if why, hidden := cat.HiddenReason("srv:system_logs"); !hidden || !strings.Contains(why, "remote srv") {
		t.Errorf("hidden reason %q (%v)", why, hidden)
	}
	// The index follows the catalog a moment later.
	for remoteRanked := true; remoteRanked; {
		ans, err := eng.Rank(ctx, engine.Request{Query: "show the systemd journal entries", Limit: 10, All: true})
		if err != nil {
			t.Fatal(err)
		}
		remoteRanked = false
		for _, o := range ans.Tools {
			remoteRanked = remoteRanked || strings.HasPrefix(o.Name, "srv:")
		}
		select {
		case <-ctx.Done():
			t.Fatalf("unavailable remote tools are still ranked: %+v", ans.Tools)
		case <-time.After(20 * time.Millisecond):
		}
	}
	topRanked(t, ctx, eng, "will it rain tomorrow", "weather")
	if _, err := eng.Call(ctx, engine.CallRequest{Tool: "srv:system_logs", Arguments: []byte(`{}`), Context: exec.CallContext{}}); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("a call while the remote is down: %v", err)
	}

	// Back: the next reconnection starts a new server there (serve
	// --stdio), the definitions are sent again, the tools return.
	if err := os.Remove(host.Down); err != nil {
		t.Fatal(err)
	}
	waitCatalog(t, ctx, eng, "the remote's tools back", func(c *registry.Catalog) bool {
		return description(c, "srv:system_logs") == "Recent entries of the systemd journal" && description(c, "srv:uptime") != ""
	})
	topRanked(t, ctx, eng, "show the systemd journal entries", "srv:system_logs")
	res, err = eng.Call(ctx, engine.CallRequest{Tool: "srv:system_logs", Arguments: []byte(`{}`), Context: exec.CallContext{}})
	if err != nil || !strings.HasPrefix(string(res.Stdout), "journal entries of the remote host") {
		t.Fatalf("call after the restart: %+v %v\nserver log:\n%s", res, err, host.ServerLog())
	}

	// The server there stops answering (stopped, as a hung machine): the
	// connection is dropped at its deadline, and reconnections time out,
	// until it answers again.
	pid := host.ServerPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cat = waitCatalog(t, ctx, eng, "a silent remote's tools hidden", func(c *registry.Catalog) bool {
		_, ok := c.Get("srv:system_logs")
		return !ok
	})
	why, _ := cat.HiddenReason("srv:system_logs")
	if !strings.Contains(why, "no answer within 8s") && !strings.Contains(why, "no 9P answer from 127.0.0.1 within 8s") {
		t.Errorf("hidden reason %q: want the deadline", why)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitCatalog(t, ctx, eng, "the remote's tools back after the stall", func(c *registry.Catalog) bool {
		_, ok := c.Get("srv:system_logs")
		return ok
	})
}

// stallOpts gives a connection 8 s to answer, so that a silent remote is
// noticed quickly.
func stallOpts(o DialOptions) DialOptions {
	o.Timeout = 8 * time.Second
	return o
}

// testWriter sends a logger's lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
