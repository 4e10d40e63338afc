package usage

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/sqlitefile"
)

// childCmd is this test binary run as a recording child (see TestMain).
func childCmd(t *testing.T, mode, path, name string, n int) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "USAGE_CHILD="+mode, "USAGE_DB="+path, "USAGE_NAME="+name, "USAGE_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

// Several processes (serve, mcp, call) recording into one store at once
// lose nothing, and count nothing twice.
func TestProcessesRecordAtOnce(t *testing.T) {
	const procs, each = 4, 150
	path := filepath.Join(t.TempDir(), "state", "toolsrv", "usage.db")
	var cmds []*exec.Cmd
	var starts []*os.File
	for p := range procs {
		cmd := childCmd(t, "burst", path, fmt.Sprintf("agent%d", p), each)
		start, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		starts = append(starts, start.(*os.File))
	}
	for _, s := range starts {
		s.Close() // go
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	s := open(t, path, uncapped)
	es, _, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Every child made the same 5 requests × 3 tools, merged.
	want := map[Key][2]int64{}
	for p := range procs {
		for i := range each {
			k := Key{Request: Normalize(childRequest(i)), Tool: "tool_" + strconv.Itoa(i%3), Agent: fmt.Sprintf("agent%d", p)}
			c := want[k]
			c[0]++
			if i%4 == 0 {
				c[1]++
			}
			want[k] = c
		}
	}
	got := map[Key][2]int64{}
	var total int64
	for _, e := range es {
		got[e.Key] = [2]int64{e.Count, e.Failed}
		total += e.Count
	}
	if total != procs*each || len(got) != len(want) {
		t.Fatalf("%d calls in %d entries, want %d in %d", total, len(got), procs*each, len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: count, failed %v, want %v", k, got[k], w)
		}
	}
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Sources[SourceCLI] != procs*each || st.Entries != len(want) {
		t.Errorf("stats: %+v", st)
	}
}

// kill -9 while a process records loses at most the event being written,
// and never damages the ones before: every event the child reported
// committed is there, and the store passes SQLite's integrity check.
func TestKilledWriterLosesNothingCommitted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	committed := map[string]bool{} // "round/i"
	for r := range rounds {
		name := fmt.Sprintf("r%02d", r)
		cmd := childCmd(t, "loop", path, name, 0)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill it after a few commits, at a moment that varies.
		wantCommits := 5 + r*37%60
		n := 0
		for line := range lines {
			committed[name+"/"+line] = true
			if n++; n == wantCommits {
				time.Sleep(time.Duration(r%4) * time.Millisecond)
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child was not killed: %v", r, err)
		}
	}
	// SQLite's own check of every page and index.
	db, err := sql.Open("sqlite", sqlitefile.DSN(path, pragmas...))
	if err != nil {
		t.Fatal(err)
	}
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q, %v", res, err)
	}
	db.Close()
	s := open(t, path, uncapped)
	es, _, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range es {
		var i int
		if _, err := fmt.Sscanf(e.Text, e.Key.Agent+" request %d", &i); err != nil {
			t.Fatalf("unexpected entry %q", e.Text)
		}
		have[fmt.Sprintf("%s/%d", e.Key.Agent, i)] = true
	}
	for c := range committed {
		if !have[c] {
			t.Errorf("event %s was reported committed but is missing", c)
		}
	}
	// At most the event being written when killed is lost; it may also
	// have made it.
	if len(have) < len(committed) || len(have) > len(committed)+rounds {
		t.Errorf("%d events kept, %d reported committed (%d rounds)", len(have), len(committed), rounds)
	}
}
