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

const waitFor = `i=0; while [ ! -e %s ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; [ -e %s ] && echo saw || echo timeout`

func TestConcurrencyClasses(t *testing.T) {
	f := newFixture(t)
	// overlap-checking body: holds "lock" for 200 ms, reports any overlap.
	body := `if mkdir lock 2>/dev/null; then sleep 0.2; rmdir lock; echo alone; else echo OVERLAP; fi`
	f.add("ser", fmt.Sprintf(`{"description":"serial","concurrency":"serial","cmd":%q}`, body), "")
	f.add("par_wait", fmt.Sprintf(`{"description":"parallel, waits for par_make","cmd":%q}`, fmt.Sprintf(waitFor, "made", "made")), "")
	f.add("par_make", `{"description":"parallel, makes the file","cmd":"sleep 0.1; touch made"}`, "")
	f.add("par_hold", fmt.Sprintf(`{"description":"parallel, holds the lock","cmd":%q}`, body), "")
	f.add("excl", `{"description":"exclusive","concurrency":"exclusive","cmd":"if [ -e lock ]; then echo OVERLAP; else echo alone; fi"}`, "")
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := call(c[0], c[1], c[2])
				if err != nil {
					s = "error: " + err.Error()
				}
				out[i] = s
			}()
			time.Sleep(20 * time.Millisecond) // keep the start order
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
		f.add("excl_wait", fmt.Sprintf(`{"description":"exclusive, waits","concurrency":"exclusive","cmd":%q}`, fmt.Sprintf(waitFor, "made", "made")), "")
		out := runAll([3]string{"excl_wait", "s1", "a1"}, [3]string{"par_make", "s2", "a2"})
		if out[0] != "saw" {
			t.Errorf("other agent's call was blocked: %q", out)
		}
		os.Remove(filepath.Join(f.work, "made"))
		f.add("excl_wait2", fmt.Sprintf(`{"description":"exclusive, short wait","concurrency":"exclusive","cmd":%q}`,
			`i=0; while [ ! -e made ] && [ $i -lt 6 ]; do sleep 0.05; i=$((i+1)); done; [ -e made ] && echo saw || echo alone`), "")
		out = runAll([3]string{"excl_wait2", "s1", "a1"}, [3]string{"par_make", "s1", "a1"})
		if out[0] != "alone" {
			t.Errorf("same agent's call ran during an exclusive call: %q", out)
		}
	})
	t.Run("waiting respects the context", func(t *testing.T) {
		f.add("ser_long", `{"description":"long serial","concurrency":"serial","cmd":"sleep 1"}`, "")
		go call("ser_long", "s1", "a1")
		time.Sleep(200 * time.Millisecond)
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
