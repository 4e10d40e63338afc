package ninep

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"
)

// The audit's hole 5: a tool held 255 of the 256 connections and the
// owner's own client got "too many users". Tools of many agents (and
// connections the server denies) open as many connections as they can,
// with the default limits; the owner then still connects and works.
func TestToolsCannotTakeEveryConnection(t *testing.T) {
	e, next := accessEnv(t, nil)
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	max := e.srv.opts.Limits.MaxConns
	held := 1 // the owner's
	tools := map[string]int{}
	// connectAll opens connections as acc until the server refuses one
	// (or every slot is taken) and returns how many it got.
	connectAll := func(acc Access) int {
		next.Store(&acc)
		n := 0
		for held < max {
			cl, err := Connect(e.ctx, e.addr)
			if err != nil {
				if !errors.Is(err, linux.EUSERS) {
					t.Fatalf("connection %d as %v: %v, want EUSERS", n+1, acc, err)
				}
				break
			}
			t.Cleanup(func() { cl.Close() })
			n++
			held++
		}
		return n
	}
	for i := 0; i < e.srv.opts.Limits.MaxAgents; i++ {
		agent := fmt.Sprintf("t%02d", i)
		mustMkdir(t, owner, "session/s/agent/"+agent)
		n := connectAll(Access{Session: "s", Agent: agent})
		if n == 0 {
			break // the tools' share is taken
		}
		tools[agent] = n
	}
	denied := connectAll(Access{Denied: "refused: a tool of another toolsrv"})
	t.Logf("tool connections held: %d agents %v, %d denied; %d connections in all (limit %d)", len(tools), tools, denied, held, max)

	next.Store(&Access{})
	cl, err := Connect(e.ctx, e.addr)
	if err != nil {
		t.Fatalf("the owner's client, with tools holding every connection they can: %v", err)
	}
	defer cl.Close()
	mustMkdir(t, cl, "session/o")
	if got := entryNames(t, cl, "session/o"); !reflect.DeepEqual(got, []string{"agent", "ctl", "err", "errors", "meta", "revision", "tools", "tools.json"}) {
		t.Errorf("ls session/o = %v", got)
	}
	if len(names(mustRead(t, cl, "tools"))) == 0 {
		t.Error("the owner's client reads an empty catalog")
	}
}

// The tools' share, with small limits: per agent, for all tools, denied
// connections as one peer; full clients get the rest; a connection that
// leaves gives its slot back; a tool connection holds fewer files.
func TestToolShare(t *testing.T) {
	e, next := accessEnv(t, func(o *Options) {
		o.Limits = Limits{MaxConns: 10, Tool: ToolLimits{Conns: 4, PeerConns: 2, Files: 8}}
	})
	owner := e.client()
	for _, p := range []string{"session/s", "session/s/agent/a", "session/s/agent/b", "session/s/agent/c"} {
		mustMkdir(t, owner, p)
	}
	var held []*Client
	connect := func(acc Access) (*Client, error) {
		next.Store(&acc)
		defer next.Store(&Access{})
		cl, err := Connect(e.ctx, e.addr)
		if err == nil {
			held = append(held, cl)
			t.Cleanup(func() { cl.Close() })
		}
		return cl, err
	}
	steps := []struct {
		acc  Access
		want bool
	}{
		{Access{Session: "s", Agent: "a"}, true},
		{Access{Session: "s", Agent: "a"}, true},
		{Access{Session: "s", Agent: "a"}, false}, // the agent's 2
		{Access{Session: "s", Agent: "b"}, true},
		{Access{Denied: "no"}, true},
		{Access{Session: "s", Agent: "c"}, false}, // all tools' 4
		{Access{Denied: "no"}, false},
		{Access{}, true}, {Access{}, true}, {Access{}, true}, {Access{}, true}, {Access{}, true},
		{Access{}, false}, // 10 in all
	}
	for i, s := range steps {
		_, err := connect(s.acc)
		switch {
		case s.want && err != nil:
			t.Fatalf("step %d, %v: %v", i, s.acc, err)
		case !s.want && !errors.Is(err, linux.EUSERS):
			t.Fatalf("step %d, %v: %v, want EUSERS", i, s.acc, err)
		}
	}
	// A tool connection that leaves gives its slot back.
	held[0].Close()
	if err := e.srv.conns.waitAtMost(t.Context(), 9); err != nil {
		t.Fatal(err)
	}
	tool, err := connect(Access{Session: "s", Agent: "c"})
	if err != nil {
		t.Fatalf("a tool after another left: %v", err)
	}
	// Its files are fewer than a full client's.
	var fids []interface{ Close() error }
	for err == nil {
		var f interface{ Close() error }
		_, f, err = tool.root.Walk([]string{"session"})
		if err == nil {
			fids = append(fids, f)
		}
	}
	if !errors.Is(err, linux.EMFILE) || len(fids) != 7 { // and the root
		t.Fatalf("after %d fids: %v, want EMFILE after 7", len(fids), err)
	}
	for _, f := range fids {
		f.Close()
	}
	if got := mustRead(t, tool, "err"); !strings.Contains(got, "holds 8 files, the limit for a tool's connection") {
		t.Errorf("err = %q", got)
	}
}

func TestToolLimitDefaults(t *testing.T) {
	for _, c := range []struct {
		in   Limits
		want ToolLimits
	}{
		{Limits{}, ToolLimits{Conns: 64, PeerConns: 8, Files: 128, PeerBuffered: 2 << 20, Buffered: 16 << 20}},
		{Limits{MaxConns: 3, MaxFiles: 16}, ToolLimits{Conns: 1, PeerConns: 1, Files: 16, PeerBuffered: 2 << 20, Buffered: 16 << 20}},
		{Limits{MaxConns: 10, Tool: ToolLimits{Conns: 20, PeerConns: 30, Buffered: 1 << 20}},
			ToolLimits{Conns: 9, PeerConns: 9, Files: 128, PeerBuffered: 1 << 20, Buffered: 1 << 20}},
	} {
		l := c.in
		l.setDefaults()
		if l.Tool != c.want {
			t.Errorf("%+v: tool limits %+v, want %+v", c.in, l.Tool, c.want)
		}
	}
}

// Refused connections are logged at most once a second, with a count of
// those that were not.
func TestLogEvery(t *testing.T) {
	var l logEvery
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		at      time.Duration
		ok      bool
		skipped int
	}{
		{0, true, 0},
		{100 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 2},
		{3 * time.Second, true, 0},
	} {
		ok, skipped := l.allow(t0.Add(c.at), time.Second)
		if ok != c.ok || skipped != c.skipped {
			t.Errorf("at %v: %v, %d; want %v, %d", c.at, ok, skipped, c.ok, c.skipped)
		}
	}
}
