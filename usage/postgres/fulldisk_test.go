package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// The test binary doubles as a toolsrv call that records one event, for
// TestFullDiskKeepsTheSpool:
//
//	POSTGRES_CHILD=call POSTGRES_DSN=URL POSTGRES_NS=NS POSTGRES_DIR=DIR
//	POSTGRES_REQUEST=TEXT: opens the store (its local copy in DIR), with
//	a file size limit of 0 (RLIMIT_FSIZE: no write may grow a file),
//	records one event, closes the store and exits; what the store said
//	goes to standard error.
func TestMain(m *testing.M) {
	if os.Getenv("POSTGRES_CHILD") == "call" {
		os.Exit(childCall())
	}
	os.Exit(m.Run())
}

func childCall() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	lim.Cur = 0
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := call(os.Getenv("POSTGRES_DSN"), os.Getenv("POSTGRES_NS"), os.Getenv("POSTGRES_DIR"), os.Getenv("POSTGRES_REQUEST"), nil, log); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// call is what one toolsrv call does with the shared store: open it
// (warnings to log), record one event of req (its ID req), close it. now
// is the clock (nil: time.Now). An error of Open or Record is returned;
// Close's is logged (it says what it could not keep).
func call(dsn, ns, dir, req string, now func() time.Time, log *slog.Logger) error {
	ctx := context.Background()
	s, warns, err := usage.Open(ctx, dsn, usage.Options{Namespace: ns, LocalDir: dir, Now: now, Logger: log})
	for _, w := range warns {
		log.Warn("open: " + w)
	}
	if err != nil {
		return err
	}
	err = s.Record(ctx, usage.Event{Request: req, Tool: "datetime", OK: true, Agent: "claude", Source: usage.SourceCLI, ID: req})
	if cerr := s.Close(); cerr != nil {
		log.Warn("close: " + cerr.Error())
	}
	return err
}

// PostgreSQL down, 10 calls spooled, the state directory's disk full, two
// calls, disk freed, PostgreSQL up: all 10 reach the server (and those of
// the two that were recorded), each once. A file that cannot be written
// is not damaged: nothing is set aside (the spool with its 10 calls stays
// where it is, and is sent), and what the two calls could not keep is
// said, never renamed onto a copy.
//
// How the disk is full. As root, the state directory is a 2 MB tmpfs
// mounted for the test (unmounted after) and filled up: the kernel's own
// ENOSPC, SQLite answering an I/O error where it makes the log and index
// of the file it opens. An ordinary user cannot mount one, so the two
// calls are made instead by child processes with a file size limit of 0
// (RLIMIT_FSIZE): every write that would grow a file is refused (EFBIG),
// which SQLite answers as it answers the full disk, an I/O error (shown
// in the test's log). As root both run; the same rule (sqlitefile.IsDamage)
// decides in each, and its unit test covers SQLite's error codes.
func TestFullDiskKeepsTheSpool(t *testing.T) {
	pg, dsn := server(t)
	type fullDisk struct {
		name string
		// mount, if set, mounts the state directory's disk.
		mount func(t *testing.T, state string)
		// fill makes the disk of state full and returns what frees it.
		fill func(t *testing.T, state string) (free func())
		// calls makes the two calls of reqs while it is full.
		calls func(t *testing.T, ns, dir string, reqs []string)
	}
	var ways []fullDisk
	if os.Geteuid() == 0 {
		ways = append(ways, fullDisk{"tmpfs", mountTmpfs, fillUp, func(t *testing.T, ns, dir string, reqs []string) {
			// Both in the same instant: a set-aside name of its time
			// alone would be the same for both.
			at := time.Now()
			var logged bytes.Buffer
			for _, req := range reqs {
				err := call(dsn, ns, dir, req, func() time.Time { return at }, slog.New(slog.NewTextHandler(&logged, nil)))
				t.Logf("the call %q while the disk is full: %v", req, err)
			}
			t.Logf("what the two calls said:\n%s", logged.String())
			if !strings.Contains(logged.String(), "cannot be used now") || !strings.Contains(logged.String(), "lost") {
				t.Errorf("the calls did not say that the local copy cannot be used, nor that their events are lost:\n%s", logged.String())
			}
		}})
	}
	ways = append(ways, fullDisk{"file size limit", nil, func(*testing.T, string) func() { return func() {} },
		func(t *testing.T, ns, dir string, reqs []string) {
			for _, req := range reqs {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "POSTGRES_CHILD=call", "POSTGRES_DSN="+dsn, "POSTGRES_NS="+ns,
					"POSTGRES_DIR="+dir, "POSTGRES_REQUEST="+req)
				out, err := cmd.CombinedOutput()
				t.Logf("the call %q with no room to grow a file: %v\n%s", req, err, out)
				if !bytes.Contains(out, []byte("I/O error")) {
					t.Errorf("the child met no I/O error: the file size limit did not make the disk full for it")
				}
			}
		}})

	for i, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			ctx := context.Background()
			ns := fmt.Sprintf("fulldisk_%d", i)
			state := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			if way.mount != nil {
				way.mount(t, state)
			}
			dir := filepath.Join(state, "shared")
			// The tables laid out while the server is up, as an
			// installation's first run does.
			if err := call(dsn, ns, dir, "the first call", nil, slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			pg.Stop(t)
			var before []string
			for k := 1; k <= 10; k++ {
				req := fmt.Sprintf("what time is it, call %d", k)
				before = append(before, req)
				if err := call(dsn, ns, dir, req, nil, slog.New(slog.DiscardHandler)); err != nil {
					t.Fatalf("call %d with the server down: %v", k, err)
				}
			}
			if n := pendingIn(t, dsn, ns, dir); n != 10 {
				t.Fatalf("%d calls spooled, want 10", n)
			}
			free := way.fill(t, state)
			full := []string{"what time is it, while full 1", "what time is it, while full 2"}
			way.calls(t, ns, dir, full)
			if aside, _ := filepath.Glob(filepath.Join(dir, "*.damaged-*")); len(aside) != 0 {
				t.Errorf("a full disk set files aside as damaged: %v", aside)
			}
			free()
			pg.Start(t)

			s := open(t, dsn, usage.Options{Namespace: ns, LocalDir: dir})
			waitFor(t, "the spool sent", func() bool {
				st, err := s.Stats(ctx)
				return err == nil && st.Pending == 0
			})
			es, _, err := s.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int64{}
			for _, e := range es {
				counts[e.Text] += e.Count
			}
			for _, req := range before {
				if counts[req] != 1 {
					t.Errorf("%q reached the server %d times, want once", req, counts[req])
				}
			}
			arrived := 0
			for _, req := range full {
				if counts[req] > 1 {
					t.Errorf("%q reached the server %d times", req, counts[req])
				}
				arrived += int(counts[req])
			}
			st, err := s.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st.Sources[usage.SourceCLI], int64(1+10+arrived); got != want {
				t.Errorf("%d events on the server, want %d (the first, the 10, %d of the two made while the disk was full)", got, want, arrived)
			}
			t.Logf("of the two calls made while the disk was full, %d reached the server", arrived)
		})
	}
}

// pendingIn is how many calls the spool of the store's local copy in dir
// holds (the server may be down).
func pendingIn(t *testing.T, dsn, ns, dir string) int64 {
	t.Helper()
	s, _, err := usage.Open(context.Background(), dsn, usage.Options{Namespace: ns, LocalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Pending
}

// mountTmpfs mounts a 2 MB tmpfs on state, unmounted when t ends.
func mountTmpfs(t *testing.T, state string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", state, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=2m,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs for the state directory: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(state, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
}

// fillUp fills the disk of state up (until ENOSPC): what it returns
// removes the filler.
func fillUp(t *testing.T, state string) func() {
	t.Helper()
	filler := filepath.Join(state, "filler")
	f, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v, want ENOSPC", err)
	}
	return func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}

// A long-running store (serve, mcp) whose local file cannot be used (its
// disk full as root; its directory not writable as an ordinary user, for
// whom permissions hold) holds the calls it cannot spool in memory: they
// reach the server once it is back, and the spool once the file can be
// written again (so that they outlive the process), each once.
func TestHeldCallsReachTheServer(t *testing.T) {
	pg, dsn := server(t)
	ctx := context.Background()
	const ns = "held"
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	if root {
		mountTmpfs(t, state)
	}
	dir := filepath.Join(state, "shared")
	if err := call(dsn, ns, dir, "the first call", nil, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	var fix func()
	if root {
		fix = fillUp(t, state)
	} else {
		// Its log and index cannot be made: the file cannot be opened.
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		fix = func() { os.Chmod(dir, 0o700) }
		t.Cleanup(fix)
	}
	pg.Stop(t)
	var logged bytes.Buffer
	s, warns, err := usage.Open(ctx, dsn, usage.Options{Namespace: ns, LocalDir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Reading the copy needs no space: on a full disk (root) SQLite may
	// still open and read it (when the first process's close left nothing
	// to recover), and the store ranks from it; otherwise it says it
	// cannot be used. Either way the calls it cannot spool are held in
	// memory (the log says so, below) and reach the server once each.
	if w := strings.Join(warns, "\n"); !strings.Contains(w, "cannot be used now") && (!root || !strings.Contains(w, "ranking from the local copy")) {
		t.Errorf("warnings %q: nothing says the local copy cannot be used, nor that it ranks from it", warns)
	}
	rec := func(reqs ...string) {
		t.Helper()
		for _, req := range reqs {
			if err := s.Record(ctx, usage.Event{Request: req, Tool: "datetime", OK: true, Source: usage.SourceCLI, ID: req}); err != nil {
				t.Fatalf("Record with neither the server nor the spool: %v", err)
			}
		}
	}
	pendingNow := func() int64 {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Pending
	}
	rec("held 1", "held 2", "held 3")
	if n := pendingNow(); n != 3 {
		t.Fatalf("%d pending, want the 3 held", n)
	}
	pg.Start(t)
	waitFor(t, "the held calls sent", func() bool { return pendingNow() == 0 })

	pg.Stop(t)
	rec("held 4", "held 5")
	fix()
	// Once the file takes them, they are in it (another process sees them).
	waitFor(t, "the held calls spooled", func() bool { return pendingIn(t, dsn, ns, dir) == 2 })
	s.Close()
	pg.Start(t)
	s2 := open(t, dsn, usage.Options{Namespace: ns, LocalDir: dir})
	waitFor(t, "the spool sent", func() bool {
		st, err := s2.Stats(ctx)
		return err == nil && st.Pending == 0
	})
	es, _, err := s2.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, e := range es {
		counts[e.Text] += e.Count
	}
	for k := 1; k <= 5; k++ {
		if req := fmt.Sprint("held ", k); counts[req] != 1 {
			t.Errorf("%q reached the server %d times, want once", req, counts[req])
		}
	}
	if !strings.Contains(logged.String(), "held in memory") {
		t.Errorf("the log says nothing of the calls held:\n%s", logged.String())
	}
}
