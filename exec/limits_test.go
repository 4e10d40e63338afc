package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The concurrency tests use files in the shared working directory as
// evidence: "mkdir lock" fails when another call holds it (overlap), and a
// tool waiting for a file another call creates proves they ran together.
// Every tool first leaves a mark in st/ (mktemp st/NAME.XXXXXX), so that
// the test starts the next call only once the previous one has started:
// the order is observed, not guessed from a sleep.

const waitFor = `i=0; while [ ! -e %s ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; [ -e %s ] && echo saw || echo timeout`

func TestConcurrencyClasses(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.work, "st"), 0o755); err != nil {
		t.Fatal(err)
	}
	// tool adds a tool whose command first marks that it started.
	tool := func(name, meta, cmd string) {
		f.add(name, fmt.Sprintf(`{"description":%q,%s"cmd":%q}`, name, meta, "mktemp st/"+name+".XXXXXX >/dev/null; "+cmd), "")
	}
	// overlap-checking body: holds "lock" for 200 ms, reports any overlap.
	body := `if mkdir lock 2>/dev/null; then sleep 0.2; rmdir lock; echo alone; else echo OVERLAP; fi`
	tool("ser", `"concurrency":"serial",`, body)
	tool("par_wait", "", fmt.Sprintf(waitFor, "made", "made"))
	tool("par_make", "", "sleep 0.1; touch made")
	tool("par_hold", "", body)
	tool("excl", `"concurrency":"exclusive",`, "if [ -e lock ]; then echo OVERLAP; else echo alone; fi")
	started := func(name string) int {
		m, _ := filepath.Glob(filepath.Join(f.work, "st", name+".*"))
		return len(m)
	}
	r := f.runner(nil)
	ctx := context.Background()

	call := func(name, session, agent string) (string, error) {
		cc := f.cc()
		cc.Session, cc.Agent = session, agent
		res, err := r.Call(ctx, f.tool(name), []byte(`{}`), cc)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(res.Stdout)), nil
	}
	runAll := func(calls ...[3]string) []string {
		out := make([]string, len(calls))
		var wg sync.WaitGroup
		for i, c := range calls {
			before := started(c[0])
			done := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(done)
				s, err := call(c[0], c[1], c[2])
				if err != nil {
					s = "error: " + err.Error()
				}
				out[i] = s
			}()
			// Keep the start order: the next call starts once this one has.
			for deadline := time.Now().Add(safetyNet); started(c[0]) == before; {
				select {
				case <-done:
				case <-time.After(5 * time.Millisecond):
					if time.Now().After(deadline) {
						t.Fatalf("call %d (%s) never started", i, c[0])
					}
					continue
				}
				break
			}
		}
		wg.Wait()
		return out
	}

	t.Run("serial: one call of the tool at a time, even across sessions", func(t *testing.T) {
		out := runAll([3]string{"ser", "s1", "a1"}, [3]string{"ser", "s2", "a2"}, [3]string{"ser", "s1", "a1"})
		for i, o := range out {
			if o != "alone" {
				t.Errorf("call %d: %q", i, o)
			}
		}
	})
	t.Run("parallel: calls of one agent run together", func(t *testing.T) {
		os.Remove(filepath.Join(f.work, "made"))
		out := runAll([3]string{"par_wait", "s1", "a1"}, [3]string{"par_make", "s1", "a1"})
		if out[0] != "saw" {
			t.Errorf("par_wait: %q (the second call did not run meanwhile)", out[0])
		}
	})
	t.Run("exclusive: waits for the agent's running calls", func(t *testing.T) {
		out := runAll([3]string{"par_hold", "s1", "a1"}, [3]string{"excl", "s1", "a1"})
		if out[0] != "alone" || out[1] != "alone" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("exclusive: keeps the agent's other calls out, not other agents'", func(t *testing.T) {
		os.Remove(filepath.Join(f.work, "made"))
		tool("excl_wait", `"concurrency":"exclusive",`, fmt.Sprintf(waitFor, "made", "made"))
		out := runAll([3]string{"excl_wait", "s1", "a1"}, [3]string{"par_make", "s2", "a2"})
		if out[0] != "saw" {
			t.Errorf("other agent's call was blocked: %q", out)
		}
		os.Remove(filepath.Join(f.work, "made"))
		tool("excl_wait2", `"concurrency":"exclusive",`,
			`i=0; while [ ! -e made ] && [ $i -lt 6 ]; do sleep 0.05; i=$((i+1)); done; [ -e made ] && echo saw || echo alone`)
		out = runAll([3]string{"excl_wait2", "s1", "a1"}, [3]string{"par_make", "s1", "a1"})
		if out[0] != "alone" {
			t.Errorf("same agent's call ran during an exclusive call: %q", out)
		}
	})
	t.Run("waiting respects the context", func(t *testing.T) {
		tool("ser_long", `"concurrency":"serial",`, "sleep 1")
		first := make(chan struct{})
		go func() {
			defer close(first)
			call("ser_long", "s1", "a1")
		}()
		defer func() { <-first }() // no call outlives the test
		for started("ser_long") == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := r.Call(cctx, f.tool("ser_long"), []byte(`{}`), f.cc())
		wantKind(t, err, ErrCanceled)
	})
}

func TestCapBuffer(t *testing.T) {
	for _, tc := range []struct {
		max    int
		writes []string
		want   string
		trunc  bool
	}{
		{5, []string{"ab", "cd"}, "abcd", false},
		{5, []string{"abc", "de"}, "abcde", false},
		{5, []string{"abc", "def"}, "abcde", true},
		{0, []string{"a"}, "", true},
	} {
		c := &capBuffer{max: tc.max}
		for _, w := range tc.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		got, trunc, _ := c.bytes()
		if string(got) != tc.want || trunc != tc.trunc {
			t.Errorf("%+v: got %q %v", tc, got, trunc)
		}
	}
}
