package main

import (
	"os/exec"
	"strings"
	"testing"
)

// toolsrv bench's calls: every way runs the tool and says ok (the bench
// fails otherwise), the table lists each, and the report checks the warm
// server against bubblewrap (when installed) and call against show. Only
// the report's shape is checked, never speed.
func TestBenchCalls(t *testing.T) {
	bin := buildToolsrv(t)
	r := runToolsrv(t, bin, "", "bench", "--corpus", "../../bench/testdata/topics", "--sizes", "40", "--queries", "4",
		"--live-size", "0", "--usage-events", "0", "--calls", "3", "--call-warmup", "1")
	if r.code != 0 {
		t.Fatalf("toolsrv bench: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := []string{"3 after 1 of warm-up", "| warm `toolsrv mcp`, `call_tool` over stdio |", "| `toolsrv call` (a new process) |",
		"| `toolsrv show` of the tool", "| the bare command (fork and exec) |", "toolsrv call p50 against toolsrv show's: ×",
		"pruned top 10 at 40 tools: the same as scoring every tool for all 4 queries: met"}
	if _, err := exec.LookPath("bwrap"); err == nil {
		want = append(want, "| bubblewrap (`--ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent`) |", "warm toolsrv mcp call_tool p50 against bubblewrap's")
	} else {
		want = append(want, "| bubblewrap | – (bwrap is not installed) |")
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("the report lacks %q:\n%s", w, r.stdout)
		}
	}
}
